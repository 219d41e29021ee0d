"""The pytest plugin and `opsdk test` / `opsdk check`, run as a user runs them."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from opsdk.cli import main
from opsdk.cli.cmd_test import pytest_argv
from opsdk.triton.testing import triton_server  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
OP_DIR = ROOT / "operators" / "thresholded_relu"


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )


def test_generated_tests_pass_and_write_a_json_report(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    p = run("-m", "pytest", str(OP_DIR), "-p", "no:cacheprovider", "--opsdk-seed=3",
            f"--opsdk-report={report}", "-k", "float32-small or float16-edge or onnx or check")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "opsdk: device=cpu, seed=3" in p.stdout
    data = json.loads(report.read_text())
    cases = {c["case"]: c for c in data["cases"]}
    assert {"float32-small", "float16-edge", "test_thresholdedrelu"} <= set(cases)
    assert cases["float32-small"]["seed"] == 3 and cases["float32-small"]["passed"]
    assert cases["float16-edge"]["outputs"][0]["standard"] == "mere-mare"


@pytest.mark.parametrize(
    "device, reason",
    [("npu", "npu unavailable"), ("triton", "triton unavailable: no server configured")],
)
def test_unavailable_devices_are_skipped_with_their_reason(device: str, reason: str) -> None:
    p = run("-m", "pytest", str(OP_DIR), "-q", "-rs", "-p", "no:cacheprovider",
            f"--opsdk-device={device}", "-k", "float32-small")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "1 skipped" in p.stdout and reason in p.stdout


def test_onnxruntime_device_runs_the_exported_graph() -> None:
    p = run("-m", "pytest", str(OP_DIR), "-q", "-p", "no:cacheprovider",
            "--opsdk-device=onnxruntime", "-k", "float16-broadcast or float32-odd or empty")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "passed" in p.stdout and "skipped" not in p.stdout


def test_a_failure_prints_a_repro_command_that_reproduces_it() -> None:
    p = run("-m", "pytest", str(OP_DIR), "-q", "-p", "no:cacheprovider", "--opsdk-seed=11",
            "--opsdk-precision-mode=force_fp16", "-k", "float32-large")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "precision_mode=force_fp16" in p.stdout and "FAILED under mere-mare" in p.stdout
    line = next(ln for ln in p.stdout.splitlines() if "reproduce: " in ln)
    cmd = shlex.split(line.split("reproduce: ", 1)[1])
    assert cmd[0] == "pytest" and "--opsdk-seed=11" in cmd
    mismatches = [ln.strip() for ln in p.stdout.splitlines() if ln.strip().startswith("at [")]
    again = run("-m", *cmd, "-p", "no:cacheprovider")
    assert again.returncode == 1
    assert [ln.strip() for ln in again.stdout.splitlines()
            if ln.strip().startswith("at [")] == mismatches


def test_opsdk_test_passes_options_and_pytest_arguments(tmp_path: Path) -> None:
    report = tmp_path / "r.html"
    p = run("-m", "opsdk", "test", "ThresholdedRelu", "--seed", "2", "--report", str(report),
            "-k", "float32-odd", "-q", "-p", "no:cacheprovider")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "--opsdk-seed=2" in p.stdout and "1 passed" in p.stdout
    assert "data:image/png;base64," in report.read_text()


def test_pytest_argv_accepts_options_after_the_operator() -> None:
    ns = argparse.Namespace(device=None, seed=None, standard="msopst", precision_mode=None,
                            report=None, pytest_args=["--precision-mode", "force_fp16", "-x"])
    argv = pytest_argv(ns, Path("/ops/my_op"))
    assert argv[argv.index("/ops/my_op"):] == [
        "/ops/my_op", "--opsdk-standard=msopst", "--opsdk-precision-mode=force_fp16",
        "--opsdk-timeout=120.0", "--opsdk-isolate", "-x",
    ]
    ns = argparse.Namespace(pytest_args=[
        "--opsdk-standard", "double-thousandths", "--standard-only", "--precision-mode",
        "mixed_float16", "--modify-mixlist", "m.json", "--keep-dtype", "k.cfg"])
    argv = pytest_argv(ns, Path("/ops/my_op"))
    assert argv[argv.index("/ops/my_op"):] == [
        "/ops/my_op", "--opsdk-standard=double-thousandths",
        "--opsdk-precision-mode=mixed_float16", "--opsdk-keep-dtype=k.cfg",
        "--opsdk-modify-mixlist=m.json", "--opsdk-timeout=120.0", "--opsdk-standard-only",
        "--opsdk-isolate",
    ]


def test_opsdk_test_names_every_check_of_a_cann_standard(tmp_path: Path) -> None:
    report, mixlist = tmp_path / "r.json", tmp_path / "ops_info.json"
    mixlist.write_text(json.dumps({"white-list": {"to-add": ["ThresholdedRelu"]}}))
    p = run("-m", "opsdk", "test", "--opsdk-standard", "msopst", "ThresholdedRelu", "--report",
            str(report), "--precision-mode", "mixed_float16", "--modify-mixlist", str(mixlist),
            "-k", "float32-small", "-q", "-p", "no:cacheprovider")
    assert p.returncode == 0, p.stdout + p.stderr
    case = json.loads(report.read_text())["cases"][0]
    assert case["note"].startswith("--precision_mode_v2=mixed_float16: inputs float32 cast to "
                                   "float16")
    assert [c["name"] for c in case["outputs"][0]["checks"]] == ["msopst", "nonfinite"]
    p = run("-m", "pytest", str(OP_DIR), "-q", "-p", "no:cacheprovider", "--opsdk-standard-only",
            "--opsdk-keep-dtype", str(mixlist), "-k", "float32-small")
    assert p.returncode == 4 and "add --opsdk-precision-mode" in p.stdout + p.stderr


def test_opsdk_check_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "ThresholdedRelu"]) == 0
    out = capsys.readouterr().out
    assert "opsdk.check(ThresholdedRelu): passed" in out and "determinism" in out


@pytest.mark.slow
def test_triton_device_runs_against_a_real_server(
    tmp_path: Path, triton_server: Callable[..., Any]  # noqa: F811
) -> None:
    import onnx

    from opsdk.onnx import export_model
    from opsdk.triton import RepositoryOptions, build_repository

    model = export_model("ThresholdedRelu", shapes={"x": ("N", "D")}, dtype="float32")
    onnx.save(model, str(tmp_path / "trelu.onnx"))
    repo = tmp_path / "repo"
    build_repository(tmp_path / "trelu.onnx", repo,
                     RepositoryOptions("thresholded_relu", max_batch_size=0))
    server = triton_server(repo)
    p = run("-m", "pytest", str(OP_DIR), "-q", "-rs", "-p", "no:cacheprovider",
            "--opsdk-device=triton", f"--opsdk-triton-url={server.http_url}",
            "-k", "float32-edge or float32-normal or float32-small or float16-edge")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "2 passed, 2 skipped" in p.stdout, p.stdout
    assert "takes input 'x' as FP32[-1, -1]; this case has FP32[2, 3, 4]" in p.stdout
    assert "this case has FP16[8, 16]" in p.stdout


def test_an_operator_without_a_test_file_gets_the_generated_one(tmp_path: Path) -> None:
    from opsdk.cli.cmd_test import _target
    from opsdk.registry import find_operator

    info = find_operator(str(OP_DIR))
    info.folder = tmp_path / "wheel_op"  # as if installed without test_<op>.py
    info.folder.mkdir()
    for name in ("spec.py", "reference.py", "kernel.cpp"):
        (info.folder / name).write_text((OP_DIR / name).read_text())
    target = _target(info, tmp_path)
    assert target == tmp_path / "test_thresholded_relu.py"
    text = target.read_text()
    assert text.startswith("# generated by opsdk test; do not edit")
    p = run("-m", "pytest", str(target), "-q", "-p", "no:cacheprovider", "-k", "float16-odd")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "1 passed" in p.stdout


def test_cases_compared_by_xdist_workers_are_added_up(tmp_path: Path) -> None:
    """Under pytest-xdist (the full suite's -n 2) the summary line adds up every worker's
    cases, expected failures apart; --opsdk-report, which needs every case in one process,
    is refused with the fix instead of being written by each worker over the others."""
    folder = ROOT / "operators" / "softmax"
    base = ["-m", "pytest", str(folder), "-q", "-p", "no:cacheprovider", "-k", "not _check"]
    summary = r"opsdk: (\d+) cases compared, 0 failed(, \d+ failed as expected)?"
    alone, spread = run(*base), run(*base, "-n", "2")
    assert alone.returncode == 0 and spread.returncode == 0, spread.stdout[-2000:]
    one = re.search(summary, alone.stdout)
    two = re.search(summary, spread.stdout)
    assert one and two and int(one.group(1)) > 20, spread.stdout[-2000:]
    assert one.groups() == two.groups()
    refused = run(*base, "-n", "2", f"--opsdk-report={tmp_path / 'r.html'}")
    assert refused.returncode == 4, refused.stdout[-2000:]
    assert "run without -n (pytest-xdist) to write it" in refused.stdout + refused.stderr
    assert not (tmp_path / "r.html").exists()
