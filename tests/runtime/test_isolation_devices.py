"""Every device that runs kernels on this host isolates each case as cpu does: an Ascend C
kernel that never returns, or one that stores through a null pointer, fails its own case on
``--device ascendc-model`` (naming the operator, the case and the signal or the limit) and
the run finishes; the same for the onnxruntime device.

The AI Core kernel is the one ``opsdk new --decomposition`` generates, edited so that its
float16 build misbehaves and its float32 build stays right.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from opsdk.cli import main

ROOT = Path(__file__).resolve().parents[2]
MISBEHAVE = Path(__file__).resolve().parents[1] / "data" / "misbehave"
CAP_S = 600.0  # only a hung run reaches it; nothing here measures time

_ENTRY = "    GET_TILING_DATA(tilingData, tiling);\n"
_WRONG = {
    "loop": "volatile uint32_t spin = 0;\n        for (;;) spin = spin + 1;",
    "null_store": "int* volatile nowhere = nullptr;\n        *nowhere = 1;",
}


def _operator(root: Path, mode: str) -> Path:
    """A scaffolded operator whose AI Core kernel misbehaves (``mode``) on float16 only."""
    assert main(["new", "Edgy", "--inputs", "x:float16,float32", "--outputs", "y",
                 "--domain", "com.test", "--decomposition", "Relu(x)", "--dir", str(root)]) == 0
    src = root / "edgy" / "op_kernel" / "edgy.cpp"
    text = src.read_text()
    assert _ENTRY in text
    src.write_text(text.replace(_ENTRY, _ENTRY + "    if constexpr (IsSameType<DTYPE_X, half>::"
                                "value) {\n        " + _WRONG[mode] + "\n    }\n"))
    return root / "edgy"


def _opsdk_test(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "opsdk", "test", *args, "-p", "no:cacheprovider"],
                          capture_output=True, text=True, cwd=ROOT, timeout=CAP_S,
                          env={**os.environ, **(env or {})})


def test_an_endless_ascendc_kernel_is_a_timeout_of_its_case(tmp_path: Path) -> None:
    folder = _operator(tmp_path, "loop")
    p = _opsdk_test(str(folder), "--device", "ascendc-model", "--timeout", "30", "-k", "small")
    out = p.stdout + p.stderr
    assert p.returncode == 1, out[-3000:]
    assert "1 failed, 1 passed" in p.stdout, out[-3000:]
    assert "Edgy [float16-small] on ascendc-model FAILED" in p.stdout
    assert re.search(r"problem: Edgy \(ascendc-model, \S+edgy\.cpp\): the kernel did not finish "
                     r"within 30 s and was stopped", p.stdout), p.stdout[-3000:]
    repro = next(ln for ln in p.stdout.splitlines() if "reproduce:" in ln)
    assert "--opsdk-timeout=30.0" in repro and "--opsdk-isolate" in repro  # ends as the run did


def test_a_null_store_in_an_ascendc_kernel_fails_its_case_with_the_signal(tmp_path: Path) -> None:
    folder = _operator(tmp_path, "null_store")
    p = _opsdk_test(str(folder), "--device", "ascendc-model", "-k", "small")
    out = p.stdout + p.stderr
    assert p.returncode == 1, out[-3000:]
    assert "1 failed, 1 passed" in p.stdout, out[-3000:]
    assert "Segmentation fault" not in out
    assert "Edgy [float16-small] on ascendc-model FAILED" in p.stdout
    assert "the kernel crashed with SIGSEGV (signal 11)" in p.stdout


def test_the_ascendc_worker_runs_the_right_kernel_and_relays_warnings(tmp_path: Path) -> None:
    """The isolated model gives the in-process model's outputs; what the model warns in the
    worker (a pass with a finding) is warned again here with its own class."""
    import numpy as np

    from opsdk.ascend.ascendc.model import AscendcModelWarning
    from opsdk.registry import load_spec
    from opsdk.runtime.isolated import _warning_class
    from opsdk.testing import open_device

    folder = _operator(tmp_path, "loop")
    spec = load_spec(folder)
    ex = open_device("ascendc-model", folder, spec, {"isolate": True, "timeout": CAP_S})
    here = open_device("ascendc-model", folder, spec, {})
    assert "(ascendc-model, worker)" in repr(ex) and "worker" not in repr(here)
    x = np.linspace(-2, 2, 300, dtype=np.float32)
    try:
        np.testing.assert_array_equal(ex.run([x], {})[0], here.run([x], {})[0])
    finally:
        ex.close()
    assert _warning_class("opsdk.ascend.ascendc.model:AscendcModelWarning") is \
        AscendcModelWarning
    assert _warning_class("no.such.module:Thing") is UserWarning


def test_a_crash_on_the_onnxruntime_device_fails_its_case() -> None:
    p = _opsdk_test(str(MISBEHAVE), "--device", "onnxruntime", "-k", "odd",
                    env={"OPSDK_MISBEHAVE": "segv"})
    out = p.stdout + p.stderr
    assert p.returncode == 1, out[-3000:]
    assert "1 failed, 1 passed" in p.stdout, out[-3000:]
    assert "Misbehave [float64-odd] on onnxruntime FAILED" in p.stdout
    assert "the kernel crashed with SIGSEGV (signal 11)" in p.stdout
