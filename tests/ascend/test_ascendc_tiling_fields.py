"""The required tiling field of a hand-written kernel (tileNum): its absence is refused when
the kernel is loaded, naming op_kernel/tiling.py and the documentation's section."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from opsdk.ascend.ascendc import aicore_kernel
from opsdk.errors import SpecError
from opsdk.registry import load_spec

ROOT = Path(__file__).resolve().parents[2]


def test_a_tiling_without_tile_num_names_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "softmax"
    shutil.copytree(ROOT / "operators" / "softmax", folder)
    desc = folder / "op_kernel" / "tiling.py"
    text = desc.read_text()
    text = text.replace(', TilingField("tileNum", "uint32_t")', "")
    text = text.replace('        ("tileNum", "ceildiv(rowLength, tileLength)"),\n', "")
    assert "tileNum" not in text
    desc.write_text(text)
    spec = load_spec(folder)
    with pytest.raises(SpecError) as e:
        aicore_kernel(spec, folder)
    msg = str(e.value)
    assert f"Softmax: {desc}: TILING has no step computing 'tileNum'" in msg, msg
    assert "TilingField('tileNum', 'uint32_t')" in msg and '"Required tiling fields"' in msg, msg


def test_the_shipped_hand_written_tilings_compute_it() -> None:
    for name in ("softmax", "layer_normalization"):
        folder = ROOT / "operators" / name
        assert aicore_kernel(load_spec(folder), folder).tiling.fields
