"""`opsdk new --decomposition`: spec.py gets the decomposition, reference.py evaluates it, and
op_kernel/ the generated AI Core kernel, which passes the harness on the Ascend C model
unedited; an edited kernel is kept."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from opsdk.ascend.ascendc._kernels import aicore_kernel, write_kernel_files
from opsdk.cli import main
from opsdk.registry import load_spec

EXPR = "Clip(Where(Greater(x, 0), x, Mul(x, slope)), -limit, limit)"


def _new(root: Path, *extra: str) -> int:
    return main(["new", "LeakyClip", "--inputs", "x:float16,float32", "--outputs", "y",
                 "--attrs", "slope:float=0.1", "limit:float=4.0", "--domain", "com.test",
                 "--dir", str(root), *extra])


def test_scaffolded_operator_passes_the_harness_on_the_model(tmp_path: Path) -> None:
    assert _new(tmp_path, "--decomposition", EXPR) == 0
    folder = tmp_path / "leaky_clip"
    assert (folder / "op_kernel" / "leaky_clip.cpp").is_file()
    assert "@SPEC.register_function" in (folder / "spec.py").read_text()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(folder), "-q", "-p", "no:cacheprovider",
         "--opsdk-device", "ascendc-model"], capture_output=True, text=True, check=False)
    # 0 failed: the harness's declared expected failures (strict xfails) are counted apart
    summary = re.search(r"opsdk: (\d+) cases compared, 0 failed\b", proc.stdout)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert summary is not None and int(summary.group(1)) >= 20


def test_edited_kernel_is_kept(tmp_path: Path) -> None:
    assert _new(tmp_path, "--decomposition", EXPR) == 0
    folder = tmp_path / "leaky_clip"
    spec = load_spec(folder)
    assert aicore_kernel(spec, folder).origin == "generated"  # unedited: regenerated
    src = folder / "op_kernel" / "leaky_clip.cpp"
    src.write_text(src.read_text() + "// tuned by hand\n")
    assert write_kernel_files(spec, folder) == []
    assert src.read_text().endswith("// tuned by hand\n")
    assert aicore_kernel(spec, folder).origin == str(src)


def test_bad_decomposition_creates_nothing(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert _new(tmp_path, "--decomposition", "Mul(x, beta)") != 0
    assert "'beta' is neither an input (x) nor an attribute (slope, limit)" in \
        capsys.readouterr().err
    assert _new(tmp_path, "--decomposition", "Frobnicate(x)") != 0
    assert re.search(r"Frobnicate, which is not an ONNX operator.*nothing was created",
                     capsys.readouterr().err)
    assert not (tmp_path / "leaky_clip").exists()


def test_non_elementwise_decomposition_keeps_ai_cpu(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert _new(tmp_path, "--decomposition", "Softmax(x)") == 0
    assert "no AI Core kernel: LeakyClip: no AI Core kernel generated: the decomposition uses " \
           "Softmax" in capsys.readouterr().out
    assert not (tmp_path / "leaky_clip" / "op_kernel").exists()
