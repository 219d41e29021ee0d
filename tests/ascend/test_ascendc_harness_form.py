"""A race and a broken limit the Ascend C model finds appear under pytest in the harness's
problem/reproduce form (one case failed, its problem, the command that reruns it), not as a
raw traceback: Softmax's hand-written kernel with one synchronisation removed, and with a
DataCopy of a length that is not whole 32-byte blocks, run by its generated tests on
--opsdk-device=ascendc-model (real compiler, real model, real pytest)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

MUTANTS = {
    "race": ("        inQue_.EnQue(in);\n        in = inQue_.DeQue<T>();\n", "",
             ["race on Unified Buffer bytes", "Fix: EnQue the tensor after the copy"]),
    "limit": ("DataCopy(xf, in, (n + 7) / 8 * 8);", "DataCopy(xf, in, n + 1);",
              ["DataCopy: calCount is 38 float elements = 152 bytes",
               "use DataCopyPad for a tail"]),
}


@pytest.mark.parametrize("kind", sorted(MUTANTS))
def test_a_model_finding_is_a_problem_with_its_reproduce_line(kind: str, tmp_path: Path) -> None:
    old, new, expected = MUTANTS[kind]
    folder = tmp_path / "softmax"
    shutil.copytree(ROOT / "operators" / "softmax", folder)
    src = folder / "op_kernel" / "softmax.cpp"
    text = src.read_text()
    assert old in text
    src.write_text(text.replace(old, new, 1))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    node = f"{folder / 'test_softmax.py'}::test_softmax[float32-last]"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", node,
                           "--opsdk-device=ascendc-model"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900, check=False)
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "Softmax [float32-last] on ascendc-model FAILED (seed 0)" in out, out
    problem = next(line for line in out.splitlines() if line.startswith("  problem: "))
    assert problem.startswith("  problem: ascendc-model: Softmax (block "), problem
    assert all(e in problem for e in expected), problem
    assert "softmax.cpp:" in problem, problem
    assert f"  reproduce: pytest '{node}' --opsdk-seed=0 --opsdk-device=ascendc-model" in out, out
    assert "Traceback" not in out and "raise KernelError" not in out, out
