"""benchmarks/llm_starters.py in its tiny mode, as a real process: every starter scaffolded,
built and timed against its ONNX Runtime equivalent. The table's structure, every ratio a
positive finite number, and ONNX Runtime's outputs equal to opsdk's within the dtype's
precision; never an assertion on speed."""

from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "llm_starters.py"


def _module() -> Any:
    spec = importlib.util.spec_from_file_location("llm_starters", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("llm_starters", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _table(stdout: str) -> tuple[list[str], list[list[str]], list[str]]:
    """The Markdown table's header, its rows, and the lines after it."""
    lines = stdout.strip().splitlines()
    cells = [[c.strip() for c in line.strip().strip("|").split("|")]
             for line in lines if line.startswith("|")]
    assert cells and set(lines[1]) <= set("|-"), stdout
    rest = [line for line in lines if line and not line.startswith("|")]
    return cells[0], cells[2:], rest


def _ratio(cell: str) -> float:
    assert cell.endswith("x"), cell
    return float(cell[:-1])


#: The largest difference from ONNX Runtime's output a row may show: float32 rounding,
#: one float16 step at the values' scale, one int8 quantisation step.
_TOLERANCE = {"float32": 1e-4, "float16": 0.02, "int32 -> int8": 1.0}


@pytest.mark.slow
def test_tiny_run_writes_the_table() -> None:
    bench = _module()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(SCRIPT), "--tiny", "--markdown"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    header, rows, notes = _table(done.stdout)
    assert header == bench.HEADER
    expected = [(f"llm:{r.starter}", "int32 -> int8" if r.dtype == "int32" else r.dtype)
                for r in bench.rows(tiny=True)]
    assert [(r[0], r[2]) for r in rows] == expected
    assert {r[0] for r in rows} == {f"llm:{s}" for s in bench.NAMES}
    col = {name: header.index(name) for name in header}
    for row in rows:
        assert row[col["ONNX Runtime"]] == bench.ORT_NAMES[row[0].removeprefix("llm:")]
        for name in ("vs numpy", "vs ORT"):
            ratio = _ratio(row[col[name]])
            assert math.isfinite(ratio) and ratio > 0, row
        for name in ("opsdk op(x)", "numpy", "onnxruntime"):
            value, unit = row[col[name]].split()
            assert float(value) > 0 and unit in ("ns", "us", "ms", "s"), row
        diff = float(row[col["max abs diff vs ORT"]])
        assert 0 <= diff <= _TOLERANCE[row[2]], row
    assert any(n.startswith("machine: ") and "load average" in n for n in notes), notes
    assert any(n.startswith("rows where ONNX Runtime was faster: ") for n in notes), notes


def test_rows_cover_every_starter_and_dtype() -> None:
    bench = _module()
    full = bench.rows(tiny=False)
    assert {r.tokens for r in full} == {1, 32, 512, 2048}
    assert {r.hidden for r in full} == {4096}
    for starter in bench.NAMES:
        dtypes = {r.dtype for r in full if r.starter == starter}
        assert dtypes == ({"int32"} if starter == "dequant_swiglu_quant"
                          else {"float32", "float16"}), starter
