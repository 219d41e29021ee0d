"""AIPP as ATC configures it: the fields of ``insert_op.cfg`` derived from a preprocessing
declaration, and every rule ATC documents for them, each refused with the fix.

Facts (CANN 8.1.RC1): the field names, ranges and conflicts of the ATC guide's AIPP
chapter (configuration template, CSC, crop/padding, static and dynamic AIPP) and of the AIPP
operator's own checks in the toolkit's TBE implementation (``impl/aipp_comm.py``: which SoCs
take dynamic AIPP, resize, odd crop starts, the padding limits). The CSC matrices come from
:func:`opsdk.preprocess.csc_coefficients` (tested equal to the toolkit's ``conf/aipp``
templates). Channel order: the hardware's channel 0 is the
first byte of a pixel in memory (R for RGB888_U8); ``rbuv_swap_switch`` swaps channels 0
and 2 first, so a BGR888 image is RGB888_U8 with the swap, and NV21 (YVU420SP) is
YUV420SP_U8 with the swap, as the templates write them. For XRGB8888_U8 (the padding
byte first) ``ax_swap_switch`` moves the padding byte last, before the R/B swap, as the
ARGB8888 templates do; the model takes the first three channels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ...preprocess import GRAY_ROW, Preprocess, csc_coefficients, raw_shape
from ..errors import AippError
from ..socs import compute_unit

__all__ = ["AippError", "aipp_fields", "check_aipp", "static_fields", "soc_family"]


#: SoC families (as the AIPP operator names them) by compute unit.
_FAMILY = {"ascend910b": "Ascend910B", "ascend910_93": "Ascend910_93", "ascend310p": "Ascend310P",
           "ascend310b": "Ascend310B", "ascend310": "Ascend310", "ascend910": "Ascend910"}
_DYNAMIC_SOCS = ("Ascend310", "Ascend910", "Ascend610", "Ascend310P", "BS9SX1A",
                 "Hi3796CV300ES", "Hi3796CV300CS", "SD3403")
_RESIZE_SOCS = ("Hi3796CV300ES", "Hi3796CV300CS", "SD3403")
_ODD_CROP_SOCS = ("Ascend910B", "Ascend910_93", "Ascend310B", "AS31XM1", "Ascend610Lite",
                  "BS9SX2A", "MC61AM21A")
#: With padding on, these SoCs' AIPP writes at most 1080 pixels per output row (others 4096).
_PADDED_W_1080 = ("Ascend310", "Ascend910", "Ascend610", "Ascend310P", "Ascend910B",
                  "Ascend310B", "AS31XM1", "Ascend610Lite", "BS9SX2A", "MC61AM21A")
_MAX_PADDING = 32
_ATC_FORMAT = {"BGR888_U8": "RGB888_U8", "YVU420SP_U8": "YUV420SP_U8"}


def soc_family(soc: str) -> str:
    """The AIPP operator's name for a SoC's family.

    Example:
        >>> soc_family("Ascend910B3"), soc_family("Ascend310P3")
        ('Ascend910B', 'Ascend310P')
    """
    return _FAMILY.get(compute_unit(soc), soc)


def _err(field: str, declared: str, actual: Any, expected: str, fix: str) -> AippError:
    return AippError(f"AIPP field {field} (declaration: {declared}) is {actual}, expected "
                     f"{expected}; {fix}")


def _swap(p: Preprocess) -> bool:
    if p.format in ("YVU420SP_U8",):
        return True
    if p.format == "BGR888_U8":
        return p.channels in ("RGB", "GRAY")
    return p.format in ("RGB888_U8", "XRGB8888_U8") and p.channels == "BGR"


def _csc(p: Preprocess) -> list[tuple[str, Any]]:
    if p.format in ("YUV420SP_U8", "YVU420SP_U8"):
        rows, bias = csc_coefficients(str(p.color_standard))
        if p.channels == "BGR":
            rows = rows[::-1]
        return ([(f"matrix_r{r}c{c}", rows[r][c]) for r in range(3) for c in range(3)]
                + [(f"input_bias_{i}", bias[i]) for i in range(3)])
    if p.channels == "GRAY" and p.format != "YUV400_U8":
        rows3 = (GRAY_ROW, (0, 0, 0), (0, 0, 0))
        return ([(f"matrix_r{r}c{c}", rows3[r][c]) for r in range(3) for c in range(3)]
                + [(f"output_bias_{i}", 0) for i in range(3)])
    return []


def _dtc(p: Preprocess) -> list[tuple[str, Any]]:
    if p.normalize is None:
        return []
    out: list[tuple[str, Any]] = []
    for i, (mean, reci) in enumerate(zip(p.normalize.mean, p.normalize.var_reci)):
        whole = math.floor(mean)
        out += [(f"mean_chn_{i}", whole), (f"min_chn_{i}", round(mean - whole, 6)),
                (f"var_reci_chn_{i}", float(f"{reci:.9g}"))]
    return out


def static_fields(p: Preprocess, rank: int = 0) -> list[tuple[str, Any]]:
    """Every field of a static ``aipp_op`` for ``p`` (also what the emulator runs for a
    dynamic declaration, whose application sets the same values per run).

    Example:
        >>> from opsdk.preprocess import Preprocess
        >>> dict(static_fields(Preprocess("BGR888_U8", (8, 6))))["rbuv_swap_switch"]
        True
    """
    w, h = p.source_size
    fields: list[tuple[str, Any]] = [
        ("aipp_mode", "static"), ("related_input_rank", rank),
        ("input_format", _ATC_FORMAT.get(p.format, p.format)),
        ("src_image_size_w", w), ("src_image_size_h", h)]
    if p.crop:
        c = p.crop
        fields += [("crop", True), ("load_start_pos_w", c.x), ("load_start_pos_h", c.y),
                   ("crop_size_w", c.width), ("crop_size_h", c.height)]
    if p.resize:
        fields += [("resize", True), ("resize_output_w", p.resize.width),
                   ("resize_output_h", p.resize.height)]
    csc = _csc(p)
    fields += [("csc_switch", bool(csc)), ("rbuv_swap_switch", _swap(p))]
    if p.format == "XRGB8888_U8":
        fields.append(("ax_swap_switch", True))
    fields += csc + _dtc(p)
    if p.padding:
        pad = p.padding
        fields += [("padding", True), ("left_padding_size", pad.left),
                   ("right_padding_size", pad.right), ("top_padding_size", pad.top),
                   ("bottom_padding_size", pad.bottom), ("padding_value", pad.value)]
    return fields


def aipp_fields(p: Preprocess, rank: int = 0) -> list[tuple[str, Any]]:
    """The fields of the ``aipp_op`` ATC reads: :func:`static_fields`, or for dynamic AIPP
    the mode, the input and ``max_src_image_size`` (the bytes of the largest source image).

    Example:
        >>> from opsdk.preprocess import Preprocess
        >>> aipp_fields(Preprocess("RGB888_U8", (8, 6), mode="dynamic"))
        [('aipp_mode', 'dynamic'), ('related_input_rank', 0), ('max_src_image_size', 144)]
    """
    if p.mode == "static":
        return static_fields(p, rank)
    return [("aipp_mode", "dynamic"), ("related_input_rank", rank),
            ("max_src_image_size", math.prod(raw_shape(p.format, *p.source_size)))]


def check_aipp(p: Preprocess, soc: str, model_dims: Sequence[int | str | None],
               given: Sequence[str] | None = None) -> None:
    """Refuse what ATC or the AIPP operator rejects for ``p`` on ``soc``.

    ``model_dims``: the ONNX input's dims (None or a name where dynamic); ``given``: its
    ``--input-shape`` dims (``-1`` or ``lo~hi`` dynamic; shape gears are ``-1`` dims).

    Raises:
        AippError: naming the cfg field, the declaration field, expected vs actual, the fix.
    """
    family = soc_family(soc)
    _check_sizes(p)
    _check_crop(p, family)
    _check_resize(p, family)
    _check_dtc(p)
    _check_padding(p, family)
    if p.mode == "dynamic" and family not in _DYNAMIC_SOCS:
        raise _err("aipp_mode", "mode", "dynamic", f"static on {family}",
                   f"the AIPP operator takes dynamic AIPP only on {', '.join(_DYNAMIC_SOCS)}; "
                   "declare mode = \"static\"")
    if p.layout != "NCHW":
        raise _err("(output layout)", "output.layout", p.layout, "NCHW",
                   "ATC feeds AIPP's output to an ONNX model as NCHW; export the model NCHW")
    _check_model(p, model_dims, given)


def _check_sizes(p: Preprocess) -> None:
    w, h = p.source_size
    if not 2 <= w <= 4096 or not 1 <= h <= 4096:
        raise _err("src_image_size_w/h", "source_size", [w, h], "w in [2, 4096], h in [1, 4096]",
                   "resize the image on the host first")


def _check_crop(p: Preprocess, family: str) -> None:
    if not p.crop or p.format not in ("YUV420SP_U8", "YVU420SP_U8"):
        return
    c = p.crop
    if family not in _ODD_CROP_SOCS and (c.x % 2 or c.y % 2):
        raise _err("load_start_pos_w/h", "crop.start", [c.x, c.y], f"even values on {family}",
                   f"{family} starts a YUV420SP crop on a 2x2 chroma block; round the start "
                   f"to [{c.x - c.x % 2}, {c.y - c.y % 2}]")


def _check_resize(p: Preprocess, family: str) -> None:
    if not p.resize:
        return
    (iw, ih), (ow, oh) = p.crop_size, p.resize_size
    for name, value, lo, hi in (("resize_input_w", iw, 16, 4096), ("resize_input_h", ih, 16, 4096),
                                ("resize_output_w", ow, 16, 1920),
                                ("resize_output_h", oh, 16, 4096)):
        if not lo <= value <= hi:
            raise _err(name, "crop.size / resize.size", value, f"[{lo}, {hi}]",
                       "resize on the host (opsdk.preprocess.preprocess_cpu) instead")
    for name, out, inp in (("resize_output_w", ow, iw), ("resize_output_h", oh, ih)):
        if not 1 / 16 <= out / inp <= 16:
            raise _err(name, "resize.size", f"{out}/{inp} of the input",
                       "a ratio in [1/16, 16]", "resize in two steps, one on the host")
    if family not in _RESIZE_SOCS:
        raise _err("resize", "resize", "true", f"false on {family}",
                   f"the AIPP operator resizes only on {', '.join(_RESIZE_SOCS)}; resize on "
                   "the host before the NPU (the CPU step's resize stage) or add a Resize node "
                   "to the model, and drop [resize]")


def _check_dtc(p: Preprocess) -> None:
    for key, value in _dtc(p):
        lo, hi = (-65504.0, 65504.0) if key.startswith("var_reci") else (0, 255)
        if not lo <= value <= hi:
            declared = "normalize.std/var_reci" if key.startswith("var") else "normalize.mean"
            raise _err(key, declared, value, f"[{lo}, {hi}]",
                       "AIPP subtracts a uint8 mean (mean_chn + min_chn in [0, 255]) and "
                       "multiplies by an fp16 factor; scale the model's first layer instead")


def _check_padding(p: Preprocess, family: str) -> None:
    if not p.padding:
        return
    if not -65504.0 <= p.padding.value <= 65504.0:
        raise _err("padding_value", "padding.value", p.padding.value, "[-65504, 65504]",
                   "AIPP fills padding in float16, whose largest finite value is 65504; "
                   "pick a value within it (e.g. 0.0)")
    sides = {s: getattr(p.padding, s) for s in ("left", "right", "top", "bottom")}
    for side, value in sides.items():
        if value > _MAX_PADDING:
            raise _err(f"{side}_padding_size", f"padding.{side}", value, f"<= {_MAX_PADDING}",
                       "pad the rest in the model (a Pad node) or on the host")
    width = p.output_size[0]
    limit = 1080 if family in _PADDED_W_1080 else 4096
    if width > limit:
        raise _err("padding", "padding", f"an output {width} wide", f"at most {limit} on "
                   f"{family} with padding on", "pad in the model (a Pad node) instead")


def _check_model(p: Preprocess, dims: Sequence[int | str | None],
                 given: Sequence[str] | None) -> None:
    want = p.model_shape()
    if len(dims) != 4:
        raise _err("(model input)", "input", f"rank {len(dims)}", "an NCHW input of rank 4",
                   "AIPP feeds image inputs; name the image input with input = \"...\"")
    for axis, (have, need) in enumerate(zip(dims[1:], want[1:]), start=1):
        if isinstance(have, int) and have > 0 and have != need:
            raise _err("(model input)", "channels / crop / resize / padding",
                       f"dim {axis} = {need}", f"the model's {have}",
                       f"the declaration produces {list(want)}; make crop, resize and padding "
                       f"end at the model's size {list(dims)}")
    dynamic = [d for d in (given or []) if d == "-1" or "~" in d]
    if p.mode == "static" and dynamic:
        raise _err("aipp_mode", "mode", "static", "a fixed --input-shape for the AIPP input",
                   "ATC does not take static AIPP with a dynamic shape on the same input; give "
                   f"it the fixed shape {','.join(map(str, want))} or declare mode = \"dynamic\"")
    if p.mode == "dynamic" and given:
        _check_ranges(p, given)


def _check_ranges(p: Preprocess, given: Sequence[str]) -> None:
    w, h = p.output_size
    for axis, need in ((2, h), (3, w)):
        dim = given[axis] if axis < len(given) else "-1"
        if "~" in dim:
            lo, hi = (int(v) for v in dim.split("~"))
            if not lo <= need <= hi:
                raise _err("(output size)", "crop / resize / padding", need,
                           f"within --input-shape's {dim} (dim {axis})",
                           "with dynamic AIPP the output size must lie in the shape range")
