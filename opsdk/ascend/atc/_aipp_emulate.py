"""A NumPy emulator of AIPP: what the AI Core's preprocessing computes from the fields of
an ``aipp_op``, with the chip's documented arithmetic. A model, never called an NPU.

Order (the ATC guide's configuration template): channel swaps (the padding byte of XRGB
last; then R with B, or U with V), crop,
colour-space conversion, resize, data type conversion (mean, min, var_reci), padding.
Arithmetic:

* CSC in integers: ``out = clip(((M @ (in - input_bias)) >> 8) + output_bias, 0, 255)`` with
  the matrix entries as written (the ``>> 8`` of the CSC chapter, an arithmetic shift).
* Resize (the scaler the AIPP operator programs on the SoCs that have one): bilinear on a
  fixed-point grid, step ``floor((in - 1) * 2**18 / (out - 1))`` with the low 2 bits
  cleared, position ``i * step`` (18 fractional bits), exact integer weights, rounded half
  up to uint8. How the hardware rounds inside the scaler is not documented: this is the
  exact bilinear value on the hardware's grid.
* DTC in float16 (AIPP's output dtype): ``((in - mean_chn) - min_chn) * var_reci_chn``,
  each operand and each step rounded to float16.
* Padding after DTC, filled with ``padding_value`` in the output dtype.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...preprocess import decode

__all__ = ["emulate_aipp", "scaler_grid"]

_FRAC = 18


def scaler_grid(n_in: int, n_out: int) -> np.ndarray:
    """Source positions of AIPP's scaler for each output index, in units of 2**-18 pixel.

    Example:
        >>> float(scaler_grid(37, 50)[-1] / 2**18)  # the truncated step ends short of 36
        35.99932861328125
    """
    if n_out == n_in or n_out < 2:
        return np.arange(n_out, dtype=np.int64) << _FRAC
    step = ((n_in - 1) * (1 << _FRAC) // (n_out - 1)) & 0xFFFFFC
    return np.arange(n_out, dtype=np.int64) * step


def _resize(img: np.ndarray, width: int, height: int) -> np.ndarray:
    one = 1 << _FRAC

    def axis(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        pos = scaler_grid(n_in, n_out)
        lo = np.minimum(pos >> _FRAC, n_in - 1)
        return lo, np.minimum(lo + 1, n_in - 1), pos - (lo << _FRAC)

    y0, y1, fy = axis(img.shape[0], height)
    x0, x1, fx = axis(img.shape[1], width)
    f = img.astype(np.int64)
    wx1, wx0 = fx[None, :, None], (one - fx)[None, :, None]
    top = f[y0][:, x0] * wx0 + f[y0][:, x1] * wx1
    bottom = f[y1][:, x0] * wx0 + f[y1][:, x1] * wx1
    acc = top * (one - fy)[:, None, None] + bottom * fy[:, None, None]
    return np.clip((acc + (1 << (2 * _FRAC - 1))) >> (2 * _FRAC), 0, 255).astype(np.uint8)


def _csc(f: Mapping[str, Any], img: np.ndarray) -> np.ndarray:
    m = np.array([[f.get(f"matrix_r{r}c{c}", 0) for c in range(3)] for r in range(3)], np.int64)
    bias_in = np.array([f.get(f"input_bias_{i}", 0) for i in range(3)], np.int64)
    bias_out = np.array([f.get(f"output_bias_{i}", 0) for i in range(3)], np.int64)
    acc = (img.astype(np.int64) - bias_in) @ m.T
    return np.clip((acc >> 8) + bias_out, 0, 255).astype(np.uint8)


def _dtc(f: Mapping[str, Any], img: np.ndarray) -> np.ndarray:
    h16 = np.float16
    out = np.empty(img.shape, np.float16)
    for ch in range(img.shape[2]):
        x = img[..., ch].astype(np.int32) - int(f.get(f"mean_chn_{ch}", 0))
        t = x.astype(h16) - h16(f.get(f"min_chn_{ch}", 0.0))
        with np.errstate(over="ignore"):  # float16 overflows to inf, as the check reports
            out[..., ch] = t * h16(f.get(f"var_reci_chn_{ch}", 1.0))
    return out


def emulate_aipp(fields: Mapping[str, Any], image: np.ndarray, channels: int = 3,
                 stages: bool = False) -> Any:
    """AIPP's output for a raw ``image`` (see :func:`opsdk.preprocess.decode`): float16,
    ``(1, channels, H, W)`` (NCHW, as ATC feeds an ONNX model). ``fields`` are a static
    ``aipp_op``'s (:func:`opsdk.ascend.atc._aipp_rules.static_fields`); ``channels`` is the
    model's (1 keeps channel 0 of the CSC output, as for RGB to GRAY). With ``stages``, a
    dict of the uint8 stages ``crop``, ``color``, ``resize`` and the ``output``.

    Example:
        >>> from opsdk.preprocess import Preprocess, synthetic_image
        >>> from opsdk.ascend.atc._aipp_rules import static_fields
        >>> p = Preprocess("YVU420SP_U8", (10, 8), color_standard="BT-709WIDE")
        >>> emulate_aipp(dict(static_fields(p)), synthetic_image(p.format, (10, 8))).shape
        (1, 3, 8, 10)
    """
    f = dict(fields)
    size = (int(f["src_image_size_w"]), int(f["src_image_size_h"]))
    pixels = decode(str(f["input_format"]), image, size)
    if f.get("ax_swap_switch") and pixels.shape[2] == 4:  # XRGB -> RGBX
        pixels = pixels[..., [1, 2, 3, 0]]
    if f.get("rbuv_swap_switch") and pixels.shape[2] >= 3:  # R with B, or U with V
        pixels = pixels[..., [0, 2, 1]] if str(f["input_format"]).startswith("YUV") \
            else pixels[..., [2, 1, 0, *range(3, pixels.shape[2])]]
    if f.get("crop"):
        x, y = int(f["load_start_pos_w"]), int(f["load_start_pos_h"])
        pixels = pixels[y:y + int(f["crop_size_h"]), x:x + int(f["crop_size_w"])]
    cropped = pixels
    colored = _csc(f, pixels[..., :3]) if f.get("csc_switch") else pixels
    colored = colored[..., :channels]
    resized = _resize(colored, int(f["resize_output_w"]), int(f["resize_output_h"])) \
        if f.get("resize") else colored
    out = _dtc(f, resized)
    if f.get("padding"):
        out = np.pad(out, ((int(f["top_padding_size"]), int(f["bottom_padding_size"])),
                           (int(f["left_padding_size"]), int(f["right_padding_size"])),
                           (0, 0)), constant_values=np.float16(f.get("padding_value", 0)))
    nchw = np.ascontiguousarray(out[None].transpose(0, 3, 1, 2))
    if stages:
        return {"crop": cropped, "color": colored, "resize": resized, "output": nchw}
    return nchw
