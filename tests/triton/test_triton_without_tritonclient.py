"""`opsdk triton check` and `opsdk triton pipeline` from the base install: tritonclient (only
in the serve/dev extras) is blocked in the command's process by a sitecustomize meta-path
finder, and the stand-in ModelConfig schema reads ``parameters``, ``ensemble_scheduling``
and ``model_warmup`` as Triton's own message does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from google.protobuf import text_format

from opsdk.triton import build_repository
from opsdk.triton._config_check import _SCHEMA, _subset_class
from tests._helpers.ascend_repo import two_op_model
from tests._helpers.pipelines import write_pipeline
from tests._helpers.triton_options import options

ROOT = Path(__file__).resolve().parents[2]

BLOCKER = '''\
import sys


class _NoTritonclient:
    """tritonclient is not installed (the base install)."""

    def find_spec(self, name, path=None, target=None):
        if name == "tritonclient" or name.startswith("tritonclient."):
            raise ImportError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NoTritonclient())
'''


def opsdk(tmp_path: Path, *args: str, blocked: bool = True,
          env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m opsdk ARGS`` in a child, with tritonclient blocked unless ``blocked`` is
    False; the child proves the block holds before the command runs."""
    site = tmp_path / "no_tritonclient"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER)
    path = [str(site)] if blocked else []
    full = {**os.environ, **(env or {}),
            "PYTHONPATH": os.pathsep.join([*path, str(ROOT)])}
    probe = subprocess.run([sys.executable, "-c", "import tritonclient"], env=full,
                           capture_output=True, text=True, timeout=120)
    assert (probe.returncode != 0) == blocked, probe.stderr
    return subprocess.run([sys.executable, "-m", "opsdk", *args], env=full, cwd=tmp_path,
                          capture_output=True, text=True, timeout=900)


def test_pipeline_and_its_check_run_without_tritonclient(tmp_path: Path) -> None:
    toml = write_pipeline(tmp_path / "p")
    built = opsdk(tmp_path, "triton", "pipeline", str(toml), "-o", "repo")
    assert built.returncode == 0, built.stdout + built.stderr
    assert "wrote ensemble repo/scaled_mlp (target cpu): scale -> mlp -> top" in built.stdout
    blocked = opsdk(tmp_path, "triton", "check", "repo/scaled_mlp")
    full = opsdk(tmp_path, "triton", "check", "repo/scaled_mlp", blocked=False)
    assert blocked.returncode == full.returncode == 0, blocked.stdout + blocked.stderr
    assert blocked.stdout == full.stdout  # the same edges, dtypes and dims either way
    assert "output 'x' of step 'scale' -> input 'x' of step 'mlp'" in blocked.stdout


def test_an_npu_ge_folder_is_checked_without_tritonclient(tmp_path: Path,
                                                          ort_1232: Path) -> None:
    onnx.save(two_op_model(), str(tmp_path / "m.onnx"))
    folder = build_repository(tmp_path / "m.onnx", tmp_path / "repo", options(
        name="net", target="ascend", max_batch_size=8, warmup=True, cann="8.1.RC1"))
    env = {"OPSDK_ORT_VENV": str(ort_1232.parents[1])}
    blocked = opsdk(tmp_path, "triton", "check", str(folder), "--cann", "8.1.RC1", "--json",
                    env=env)
    full = opsdk(tmp_path, "triton", "check", str(folder), "--cann", "8.1.RC1", "--json",
                 env=env, blocked=False)
    assert blocked.returncode == full.returncode == 0, blocked.stdout + blocked.stderr
    assert blocked.stdout == full.stdout


def test_the_stand_in_schema_is_tritons() -> None:
    """Every field of the stand-in has the name, number, type and label of Triton's own
    model_config.proto (as tritonclient ships it); its opaque ones are messages there."""
    real = pytest.importorskip("tritonclient.grpc.model_config_pb2")
    ours = _subset_class().DESCRIPTOR.file
    checked = 0
    for path in (p for p in _SCHEMA if p != "Opaque"):
        mine = ours.pool.FindMessageTypeByName(f"opsdk_triton_subset.{path}")
        theirs = real.DESCRIPTOR.pool.FindMessageTypeByName(f"inference.{path}")
        for f in mine.fields:
            t = theirs.fields_by_name[f.name]
            assert (f.number, f.label, f.type) == (t.number, t.label, t.type), (path, f.name)
            if f.message_type is not None and f.message_type.name != "Opaque":
                assert f.message_type.name == t.message_type.name, (path, f.name)
            checked += 1
    assert checked >= 40


def test_parameters_steps_and_warmup_are_read() -> None:
    text = '''
name: "e"  platform: "ensemble"  max_batch_size: 4
parameters [ { key: "device_ids" value: { string_value: "0,1" } },
             { key: "static_model" value: { string_value: "true" } } ]
ensemble_scheduling { step [ { model_name: "a" model_version: -1
    input_map [ { key: "x" value: "raw" } ] output_map { key: "y" value: "mid" } },
  { model_name: "b" input_map { key: "y" value: "mid" } } ] }
model_warmup [ { name: "w" batch_size: 2 inputs [ { key: "x" value: {
    data_type: TYPE_FP32 dims: [ 16 ] zero_data: true } } ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]
dynamic_batching { preferred_batch_size: [ 2, 4 ] max_queue_delay_microseconds: 100 }
'''
    config = text_format.Parse(text, _subset_class()(), allow_unknown_field=True)
    assert {k: v.string_value for k, v in config.parameters.items()} == {
        "device_ids": "0,1", "static_model": "true"}
    steps = config.ensemble_scheduling.step
    assert [(s.model_name, s.model_version, dict(s.input_map), dict(s.output_map))
            for s in steps] == [("a", -1, {"x": "raw"}, {"y": "mid"}), ("b", 0, {"y": "mid"}, {})]
    [w] = config.model_warmup
    assert (w.batch_size, list(w.inputs["x"].dims), w.inputs["x"].zero_data) == (2, [16], True)
    assert config.platform == "ensemble" and config.max_batch_size == 4
