"""The CPU preprocessing step: the declaration applied with NumPy alone.

NumPy alone, not OpenCV or Pillow: it is already a dependency, every stage is a few array
operations, and each stage can then compute what AIPP computes where the libraries differ
from it (OpenCV's bilinear resize samples pixel centres, AIPP's scaler aligns the corners;
Pillow's YUV conversion is BT.601 wide only and rounds). The stages run in AIPP's order:
channel order, crop, colour conversion, resize, normalize, padding, layout and dtype.

* Colour: AIPP's documented 8-bit fixed point, ``(M @ (yuv - bias)) >> 8`` clipped to
  uint8, with ``M`` rounded from the standard's Kr and Kb (:func:`csc_coefficients`); RGB to
  GRAY with BT.601 luma ``(76 R + 150 G + 30 B) >> 8``. A CPU path feeding the model other
  numbers than the NPU would make the two targets disagree for no gain.
* Resize: bilinear with the corners aligned (source position ``i * (in - 1) / (out - 1)``)
  in float64, rounded half up to uint8. AIPP's scaler steps by ``(in - 1) / (out - 1)`` in
  fixed point with 18 fractional bits (low 2 bits cleared), so its position drifts from
  this one by up to ``i * 2**-16`` pixels; the two agree within 1 LSB while ``out * 2**-16``
  times the image's steepest step between neighbours stays below 1 (any image up to 256
  pixels out; uniform noise scaled 1280x720 to 1920x1080 differs by up to 4 LSB on 1.7%
  of the values).
* Normalize: ``(x - mean) * var_reci`` in float32 (AIPP: float16); padding after it,
  filled with the value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._declaration import Preprocess
from ._pixels import FORMATS, GRAY_ROW, csc_coefficients, decode

__all__ = ["preprocess_cpu", "preprocess_images", "bilinear_align_corners", "fixed_point_csc"]


def fixed_point_csc(pixels: np.ndarray, rows: tuple[tuple[int, int, int], ...],
                    bias: tuple[int, int, int] = (0, 0, 0)) -> np.ndarray:
    """``(..., 3)`` uint8 -> ``(..., len(rows))`` uint8: ``clip((rows @ (x - bias)) >> 8)``.

    Example:
        >>> yuv = np.array([[235, 128, 128]], np.uint8)
        >>> fixed_point_csc(yuv, *csc_coefficients("BT-601NARROW")).tolist()
        [[254, 254, 254]]
    """
    acc = (pixels.astype(np.int64) - np.array(bias, np.int64)) @ np.array(rows, np.int64).T
    return np.clip(acc >> 8, 0, 255).astype(np.uint8)


def _color(p: Preprocess, pixels: np.ndarray) -> np.ndarray:
    """``(H, W, C)`` uint8 in the model's channel order."""
    names = FORMATS[p.format]
    if p.format == "YUV400_U8":
        return pixels
    if names[0] == "Y":  # YUV 4:2:0, U and V in memory order
        yuv = pixels[..., [0, names.index("U"), names.index("V")]]
        rgb = fixed_point_csc(yuv, *csc_coefficients(str(p.color_standard)))
        return rgb if p.channels == "RGB" else rgb[..., ::-1]
    rgb = pixels[..., [names.index(c) for c in "RGB"]]
    if p.channels == "GRAY":
        return fixed_point_csc(rgb, (GRAY_ROW,))
    return rgb if p.channels == "RGB" else rgb[..., ::-1]


def bilinear_align_corners(img: np.ndarray, width: int, height: int) -> np.ndarray:
    """Resize ``(H, W, C)`` uint8 to ``(height, width, C)``: bilinear, corners aligned,
    rounded half up.

    Example:
        >>> row = np.array([[[0], [100]]], np.uint8)
        >>> bilinear_align_corners(row, 3, 1)[0, :, 0].tolist()
        [0, 50, 100]
    """
    def axis(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        step = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        pos = np.arange(n_out) * step
        lo = np.minimum(np.floor(pos).astype(np.int64), n_in - 1)
        return lo, np.minimum(lo + 1, n_in - 1), pos - lo

    y0, y1, fy = axis(img.shape[0], height)
    x0, x1, fx = axis(img.shape[1], width)
    f = img.astype(np.float64)
    top = f[y0][:, x0] * (1 - fx)[None, :, None] + f[y0][:, x1] * fx[None, :, None]
    bottom = f[y1][:, x0] * (1 - fx)[None, :, None] + f[y1][:, x1] * fx[None, :, None]
    out = top * (1 - fy)[:, None, None] + bottom * fy[:, None, None]
    return np.clip(np.floor(out + 0.5), 0, 255).astype(np.uint8)


def preprocess_cpu(p: Preprocess, image: np.ndarray,
                   stages: bool = False) -> Any:
    """The model input for ``image`` (a raw array of ``p.format``, see
    :func:`opsdk.preprocess.decode`), shaped ``p.model_shape()`` in ``p.dtype``.

    With ``stages``, a dict of every stage instead: ``crop``, ``color``, ``resize`` (uint8
    ``(H, W, C)``) and ``output``.

    Example:
        >>> from opsdk.preprocess import Preprocess, Normalize, synthetic_image
        >>> p = Preprocess("BGR888_U8", (9, 7), channels="RGB",
        ...                normalize=Normalize((127.5,) * 3, (1 / 127.5,) * 3))
        >>> x = preprocess_cpu(p, synthetic_image("BGR888_U8", (9, 7)))
        >>> x.shape, x.dtype, bool(abs(x).max() <= 1)
        ((1, 3, 7, 9), dtype('float32'), True)
    """
    pixels = decode(p.format, image, p.source_size)
    c = p.crop
    cropped = pixels[c.y:c.y + c.height, c.x:c.x + c.width] if c else pixels
    colored = _color(p, cropped)
    w, h = p.resize_size
    resized = bilinear_align_corners(colored, w, h) if p.resize else colored
    x = resized.astype(np.float32)
    if p.normalize is not None:
        x = (x - np.asarray(p.normalize.mean, np.float32)) * np.asarray(p.normalize.var_reci,
                                                                  np.float32)
    if p.padding is not None:
        pad = p.padding
        x = np.pad(x, ((pad.top, pad.bottom), (pad.left, pad.right), (0, 0)),
                   constant_values=np.float32(pad.value))
    out = x[None].transpose(0, 3, 1, 2) if p.layout == "NCHW" else x[None]
    out = np.ascontiguousarray(out.astype(p.dtype))
    if stages:
        return {"crop": cropped, "color": colored, "resize": resized, "output": out}
    return out


def preprocess_images(p: Preprocess, images: np.ndarray) -> np.ndarray:
    """``[N, *raw_shape]`` uint8 images -> the model's ``[N, ...]`` tensor: the CPU step per
    image, as a pipeline's preprocess step runs it (served and in one process).

    Example:
        >>> from opsdk.preprocess import Preprocess, synthetic_image
        >>> p = Preprocess("RGB888_U8", (9, 7))
        >>> preprocess_images(p, synthetic_image(p.format, (9, 7))[None]).shape
        (1, 3, 7, 9)
    """
    from ._pixels import raw_shape

    want = raw_shape(p.format, *p.source_size)
    if images.dtype != np.uint8 or images.ndim != len(want) + 1 or images.shape[1:] != want:
        raise ValueError(
            f"{p.source}: the images are {images.dtype} {list(images.shape)}, the declaration "
            f"takes uint8 [N, {', '.join(map(str, want))}] ({p.format} "
            f"{p.source_size[0]}x{p.source_size[1]}); send images of that size and format, or "
            "change format / source_size")
    if len(images) == 0:
        return np.zeros((0, *p.model_shape(1)[1:]), p.dtype)
    return np.concatenate([preprocess_cpu(p, one) for one in images])
