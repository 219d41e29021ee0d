"""`opsdk tune` of a hand-written kernel: its op_kernel/tiling.py declares the search
parameters (Tiling(..., search=...)) and a constraint; the choice is the same in three runs,
never estimated slower than the defaults, written to tuning.json and read back; a kernel that
declares nothing is refused naming the file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from opsdk.ascend.ascendc import Tiling, TilingField, aicore_kernel, evaluate
from opsdk.ascend.ascendc._tiling import with_params
from opsdk.ascend.ascendc._tune import ParamRow, tune
from opsdk.errors import OpsdkError, SpecError
from opsdk.registry import load_spec

ROOT = Path(__file__).resolve().parents[2]
SIZES = [2048, 32768]
#: Softmax's tile, capped by a searched tileCap (0: what fits), and the constraint
STEP = '("tileLength", "max2(64, min2(fitTile, alignup(rowLength, 64)))"),'
TUNED_STEP = ('("tileLength", "max2(64, min2(pick(tileCap, min2(tileCap, fitTile), fitTile), '
              'alignup(rowLength, 64)))"),')
CONSTRAINT = '''

def constraint(params, shapes, soc):  # type: ignore[no-untyped-def]
    """A tile cap of 128 is refused (a demonstration of a constraint)."""
    return "tileCap 128 is too small" if params["tileCap"] == 128 else None
'''


def _softmax(tmp_path: Path, search: str) -> Path:
    folder = tmp_path / "softmax"
    shutil.copytree(ROOT / "operators" / "softmax", folder,
                    ignore=shutil.ignore_patterns("tuning.json", "__pycache__"))
    desc = folder / "op_kernel" / "tiling.py"
    text = desc.read_text()
    assert STEP in text
    text = text.replace(STEP, TUNED_STEP).replace(
        '    block_dim="usedCores",\n)', f'    block_dim="usedCores",\n    search={search},\n)')
    desc.write_text(text + CONSTRAINT)
    return folder


def test_three_runs_choose_the_same_and_never_slower_than_the_default(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _softmax(tmp_path, '{"tileCap": [0, 1024, 256, 128]}')
    runs = []
    for k in range(3):  # each run with a cache of its own: every estimate is made again
        monkeypatch.setenv("OPSDK_CACHE_DIR", str(tmp_path / f"cache{k}"))
        runs.append(tune("Softmax", folder=folder, sizes=SIZES, write=False))
        assert not any(t.cached for t in runs[-1].trials)
    assert runs[0].rows == runs[1].rows == runs[2].rows
    assert [t.cycles for t in runs[0].trials] == [t.cycles for t in runs[2].trials]
    assert all(isinstance(r, ParamRow) for r in runs[0].rows)
    for size in SIZES:
        chosen, default = runs[0].chosen(size), runs[0].today(size)
        assert default.candidate == ParamRow(None, (("tileCap", 0),))
        assert chosen.cycles is not None and default.cycles is not None
        assert chosen.cycles <= default.cycles
    refused = [t for t in runs[0].trials if t.problem]
    assert {t.problem for t in refused} == {"constraint: tileCap 128 is too small"}
    assert len(runs[0].trials) == 4 * len(SIZES)


def test_the_table_is_written_and_read_back(tmp_path: Path) -> None:
    folder = _softmax(tmp_path, '{"tileCap": [1024, 0]}')
    result = tune("Softmax", folder=folder, sizes=SIZES)
    data = json.loads((folder / "tuning.json").read_text())
    assert [r["params"] for r in data["rows"]] == [dict(r.params) for r in result.rows]
    kernel = aicore_kernel(load_spec(folder), folder)
    assert not kernel.tiling.search and kernel.tiling.steps[0][0] == "tileCap"
    facts = {"lastDim": 4096, "typeBytes": 4, "coreNum": 40, "ubBytes": 196608, "rowInputs": 0}
    for k, size in enumerate(SIZES):
        cap = dict(result.rows[k].params)["tileCap"]
        tile = evaluate(kernel.tiling, {**facts, "totalLength": size})[1]["tileLength"]
        assert tile == min(cap or 4096, 4096)
    default = aicore_kernel(load_spec(folder), folder, tuned=False)
    assert evaluate(default.tiling, {**facts, "totalLength": 4096})[1]["tileLength"] == 1024


def test_a_kernel_without_search_parameters_is_refused_naming_its_file(tmp_path: Path) -> None:
    folder = tmp_path / "softmax"
    shutil.copytree(ROOT / "operators" / "softmax", folder)
    with pytest.raises(OpsdkError, match=r"op_kernel/tiling.py declares no search parameters; "
                       r"declare them in its TILING"):
        tune("Softmax", folder=folder, sizes=SIZES, write=False)


def test_bad_declarations_are_refused() -> None:
    with pytest.raises(SpecError, match=r"search parameter 'cap' = \[\]"):
        Tiling("Demo", (TilingField("n"),), (("n", "cap"),), "1", search={"cap": []})
    with pytest.raises(SpecError, match=r"reads 'cap' before it is defined"):
        Tiling("Demo", (TilingField("n"),), (("n", "cap"),), "1")
    t = Tiling("Demo", (TilingField("n"),), (("n", "min2(totalLength, cap)"),), "1",
               search={"cap": [8, 4]})
    assert evaluate(t, {"totalLength": 100})[1] == {"n": 8}
    assert evaluate(with_params(t, [(None, {"cap": 4})]), {"totalLength": 100})[1] == {"n": 4}


def test_a_broken_tiling_file_is_named(tmp_path: Path) -> None:
    folder = _softmax(tmp_path, '{"tileCap": [0, 1024]}')
    desc = folder / "op_kernel" / "tiling.py"
    desc.write_text(desc.read_text().replace('("rowLength", "lastDim")', '("rowLength", "lastDimm")'))
    with pytest.raises(SpecError, match=rf"{desc}: Softmax: tiling step rowLength = lastDimm reads"):
        aicore_kernel(load_spec(folder), folder)
