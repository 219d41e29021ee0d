"""``opsdk tune``: a generated kernel's tiling per shape bucket, chosen by the model's estimate."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from opsdk.ascend.ascendc._kernels import aicore_kernel
from opsdk.ascend.ascendc._tiling import cpp_tiling, evaluate
from opsdk.ascend.ascendc._tune import TUNING_FILE, candidates, tune
from opsdk.ascend.ascendc.model import AscendcModel
from opsdk.errors import OpsdkError, SpecError
from opsdk.registry import load_spec

ROOT = Path(__file__).resolve().parents[2]
SIZES = [4096, 65536]


@pytest.fixture
def gelu(tmp_path: Path) -> Path:
    folder = tmp_path / "ops" / "gelu"
    shutil.copytree(ROOT / "operators" / "gelu", folder,
                    ignore=shutil.ignore_patterns("__pycache__", "build", TUNING_FILE))
    return folder


def _rows(folder: Path) -> list[dict[str, object]]:
    return json.loads((folder / TUNING_FILE).read_text())["rows"]


def test_tune_is_deterministic_cached_and_never_slower(gelu: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPSDK_CACHE_DIR", str(tmp_path / "cache-a"))
    first = tune(str(gelu), sizes=SIZES)
    assert first.written == gelu / TUNING_FILE
    assert len(first.trials) == len(SIZES) * len(candidates(40))
    for size in SIZES:  # today's tiling is a candidate, so the choice is never slower
        assert first.chosen(size).cycles <= first.today(size).cycles
    assert not any(t.cached for t in first.trials)
    monkeypatch.setenv("OPSDK_CACHE_DIR", str(tmp_path / "cache-b"))  # cold again
    second = tune(str(gelu), sizes=SIZES, write=False)
    assert [r.__dict__ for r in second.rows] == [r.__dict__ for r in first.rows]
    monkeypatch.setenv("OPSDK_CACHE_DIR", str(tmp_path / "cache-a"))
    built = sorted((tmp_path / "cache-a" / "ascendc").rglob("kernel.so"))
    third = tune(str(gelu), sizes=SIZES)  # warm: the same table, nothing compiled or run
    assert all(t.cached for t in third.trials)
    assert [r.__dict__ for r in third.rows] == [r.__dict__ for r in first.rows]
    assert sorted((tmp_path / "cache-a" / "ascendc").rglob("kernel.so")) == built
    assert first.rows[-1].up_to is None and first.rows[0].up_to == SIZES[0]


def test_the_tuned_table_drives_the_kernel_and_the_tiling_func(gelu: Path) -> None:
    (gelu / TUNING_FILE).write_text(json.dumps({"rows": [
        {"up_to": 4096, "buffers": 1, "tile_cap": 1024, "cores": 4},
        {"up_to": None, "buffers": 2, "tile_cap": 0, "cores": 0}]}))
    spec = load_spec(gelu)
    kernel = aicore_kernel(spec, gelu)
    assert "InitBuffer(XQue_, td_.bufferNum" in kernel.source
    small = evaluate(kernel.tiling, {"totalLength": 4096, "lastDim": 4096, "typeBytes": 4,
                                     "coreNum": 40, "ubBytes": 196608})
    big = evaluate(kernel.tiling, {"totalLength": 1 << 20, "lastDim": 1 << 20, "typeBytes": 4,
                                   "coreNum": 40, "ubBytes": 196608})
    assert small[0] == 4 and small[1]["bufferNum"] == 1 and small[1]["tileLength"] == 1024
    assert big[0] == 40 and big[1]["bufferNum"] == 2 and big[1]["tileLength"] > 1024
    cpp = cpp_tiling(kernel.tiling)
    assert "auto pick = " in cpp and "pick(le(totalLength, 4096), 1, 2)" in cpp
    x = np.random.default_rng(1).uniform(-3, 3, 4096).astype(np.float32)
    out = AscendcModel(gelu, spec, soc="Ascend910B3").run([x])[0]  # race-checked, on 4 cores
    ref = spec.reference(x.astype(np.float64))
    np.testing.assert_allclose(out, ref, rtol=1e-3, atol=1e-5)


def test_a_different_table_needs_force_and_a_bad_file_names_the_fix(gelu: Path) -> None:
    (gelu / TUNING_FILE).write_text(json.dumps({"rows": [
        {"up_to": None, "buffers": 1, "tile_cap": 64, "cores": 1}]}))
    with pytest.raises(OpsdkError, match="holds another table; pass --force"):
        tune(str(gelu), sizes=[4096])
    assert _rows(gelu)[0]["tile_cap"] == 64  # nothing lost
    (gelu / TUNING_FILE).write_text("{not json")
    with pytest.raises(SpecError, match="is not a tuned table.*opsdk tune Gelu --force"):
        aicore_kernel(load_spec(gelu), gelu)
    (gelu / TUNING_FILE).write_text(json.dumps({"rows": [
        {"up_to": None, "buffers": 3, "tile_cap": 0, "cores": 0}]}))
    with pytest.raises(SpecError, match="tuning.json: tuned tiling: buffers must be 1..2, got 3"):
        aicore_kernel(load_spec(gelu), gelu)
    # --force replaces a broken table, as the error says
    (gelu / TUNING_FILE).write_text("{not json")
    assert tune(str(gelu), sizes=[4096], force=True).written == gelu / TUNING_FILE
    assert _rows(gelu)[0]["up_to"] is None


def test_hand_written_kernels_are_refused_by_name() -> None:
    with pytest.raises(OpsdkError, match="hand-written .*softmax.cpp.*declares no search par"):
        tune("Softmax", sizes=[4096], write=False)


def test_tune_cli(gelu: Path) -> None:
    cmd = [sys.executable, "-m", "opsdk", "tune", str(gelu), "--sizes", "4096", "--dry-run",
           "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["label"] == "estimates from opsdk's Ascend C model (not NPU times)"
    assert data["written"] is None and not (gelu / TUNING_FILE).exists()
    assert "[1/24] size 4096: buffers 2, tile fit, cores all" in proc.stderr


def test_the_cann_project_of_a_tuned_folder_carries_its_table(gelu: Path, tmp_path: Path) -> None:
    (gelu / TUNING_FILE).write_text(json.dumps({"rows": [
        {"up_to": 4096, "buffers": 2, "tile_cap": 0, "cores": 0},
        {"up_to": None, "buffers": 2, "tile_cap": 1024, "cores": 0}]}))
    out = tmp_path / "proj"
    proc = subprocess.run([sys.executable, "-m", "opsdk", "cann", str(gelu), "-o", str(out)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    host = (out / "op_host" / "gelu.cpp").read_text()
    assert "pick(le(totalLength, 4096), 0, 1024)" in host and "tiling.set_bufferNum(" in host
    assert "td_.bufferNum" in (out / "op_kernel" / "gelu.cpp").read_text()
