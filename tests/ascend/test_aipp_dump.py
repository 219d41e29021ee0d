"""The CSC fields opsdk writes for each colour standard equal those of the AIPP templates a
CANN toolkit ships (``<toolkit>/<arch>-linux/conf/aipp/*.txt``). Skipped where no toolkit
or copy of its templates is here: set OPSDK_AIPP_TEMPLATES to a folder of them, or
ASCEND_TOOLKIT_HOME to an installed toolkit."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from opsdk.ascend.atc.aipp import static_fields
from opsdk.preprocess import COLOR_STANDARDS, Preprocess


def _templates() -> Path | None:
    given = os.environ.get("OPSDK_AIPP_TEMPLATES")
    if given:
        return Path(given)
    home = Path(os.environ.get("ASCEND_TOOLKIT_HOME", "/usr/local/Ascend/ascend-toolkit/latest"))
    found = sorted(home.glob("*-linux/conf/aipp"))
    return found[0] if found else None


TEMPLATES = _templates()
pytestmark = pytest.mark.skipif(
    TEMPLATES is None or not (TEMPLATES / "YUV420SP_U8_RGB_BT-601NARROW.txt").is_file(),
    reason="no CANN AIPP templates here (set OPSDK_AIPP_TEMPLATES or ASCEND_TOOLKIT_HOME)")

CSC_KEYS = [f"matrix_r{r}c{c}" for r in range(3) for c in range(3)] + \
    [f"input_bias_{i}" for i in range(3)]


def _read(name: str) -> dict[str, str]:
    assert TEMPLATES is not None
    text = (TEMPLATES / f"{name}.txt").read_text()
    return dict(re.findall(r"^\s*(\w+)\s*:\s*(\S+)\s*$", text, re.M))


@pytest.mark.parametrize("standard", sorted(COLOR_STANDARDS))
@pytest.mark.parametrize("channels", ["RGB", "BGR"])
@pytest.mark.parametrize("fmt", ["YUV420SP_U8", "YVU420SP_U8"])
def test_csc_fields_equal_the_toolkit_template(fmt: str, channels: str, standard: str) -> None:
    want = _read(f"{fmt}_{channels}_{standard}")
    p = Preprocess(fmt, (64, 48), channels=channels, color_standard=standard)
    have = {k: str(v).lower() for k, v in static_fields(p)}
    for key in CSC_KEYS + ["input_format", "csc_switch", "rbuv_swap_switch"]:
        assert have[key] == want[key].lower(), (key, have[key], want[key])


@pytest.mark.parametrize(("source", "channels", "template"), [
    ("RGB888_U8", "RGB", "RGB888_U8_RGB"), ("RGB888_U8", "BGR", "RGB888_U8_BGR"),
    ("BGR888_U8", "RGB", "BGR888_U8_RGB"), ("BGR888_U8", "BGR", "BGR888_U8_BGR"),
    ("YUV400_U8", "GRAY", "YUV400_U8_GRAY"),
])
def test_channel_order_templates(source: str, channels: str, template: str) -> None:
    want = _read(template)
    have = {k: str(v).lower() for k, v in static_fields(Preprocess(source, (64, 48),
                                                                    channels=channels))}
    for key in ("input_format", "csc_switch", "rbuv_swap_switch"):
        if key in want:
            assert have[key] == want[key].lower(), (key, have[key], want[key])


@pytest.mark.parametrize(("channels", "template"), [("RGB", "ARGB8888_U8_RGBA"),
                                                   ("BGR", "ARGB8888_U8_BGRA")])
def test_padding_byte_first_swaps_as_the_argb_templates(channels: str, template: str) -> None:
    """XRGB8888_U8 (a padding byte, then R, G, B) swaps as ARGB8888_U8 does."""
    want = _read(template)
    have = {k: str(v).lower() for k, v in static_fields(Preprocess("XRGB8888_U8", (64, 48),
                                                                    channels=channels))}
    for key in ("csc_switch", "rbuv_swap_switch", "ax_swap_switch"):
        assert have[key] == want[key].lower(), (key, have[key], want[key])


def test_gray_row_equals_the_template() -> None:
    """The luma row of RGB888_U8_GRAY.txt. That template also switches rbuv_swap on, which
    in the channel order opsdk follows (channel 0 is a pixel's first byte) is a BGR888
    image's conversion: opsdk writes the swap for BGR888_U8 to GRAY, not for RGB888_U8."""
    want = _read("RGB888_U8_GRAY")
    have = dict(static_fields(Preprocess("BGR888_U8", (64, 48), channels="GRAY")))
    for key in [f"matrix_r{r}c{c}" for r in range(3) for c in range(3)]:
        assert str(have[key]) == want[key], key
    assert str(have["rbuv_swap_switch"]).lower() == want["rbuv_swap_switch"]
