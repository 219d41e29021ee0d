"""Pixel formats as the application hands them over (ATC's names), and colour standards.

A raw image is a uint8 array: ``(H, W, C)`` for the packed formats (XRGB8888_U8: a
padding byte, then R, G, B), ``(H, W)``
for YUV400 (gray), ``(H * 3 / 2, W)`` for the semi-planar YUV 4:2:0 formats (a Y plane,
then one row of interleaved chroma pairs per two luma rows: U,V for NV12 = YUV420SP_U8,
V,U for NV21 = YVU420SP_U8). Chroma is upsampled by repeating each sample over its 2x2
luma block.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import PreprocessError

__all__ = ["FORMATS", "COLOR_STANDARDS", "GRAY_ROW", "canonical_standard", "csc_coefficients",
           "decode", "raw_shape", "synthetic_image", "PreprocessError"]


#: Input format -> the channels of one decoded pixel, in memory order.
FORMATS: dict[str, tuple[str, ...]] = {
    "RGB888_U8": ("R", "G", "B"),
    "BGR888_U8": ("B", "G", "R"),
    "YUV420SP_U8": ("Y", "U", "V"),
    "YVU420SP_U8": ("Y", "V", "U"),
    "YUV400_U8": ("Y",),
    "XRGB8888_U8": ("X", "R", "G", "B"),
}

#: Colour standard -> (Kr, Kb, narrow range): the luma weights of the standard (ITU-R BT.601
#: and BT.709) and whether Y spans 16..235 and chroma 16..240 (narrow) or 0..255 (wide,
#: as JPEG uses BT.601). Named as CANN's AIPP templates name them.
COLOR_STANDARDS: dict[str, tuple[float, float, bool]] = {
    "BT-601NARROW": (0.299, 0.114, True),
    "BT-601WIDE": (0.299, 0.114, False),
    "BT-709NARROW": (0.2126, 0.0722, True),
    "BT-709WIDE": (0.2126, 0.0722, False),
}


#: RGB to GRAY: BT.601 luma (0.299, 0.587, 0.114) in 8-bit fixed point, rounded so that the
#: weights sum to 256 (white stays 255), applied as ``(76 R + 150 G + 30 B) >> 8``.
GRAY_ROW = (76, 150, 30)


def csc_coefficients(standard: str) -> tuple[tuple[tuple[int, int, int], ...],
                                             tuple[int, int, int]]:
    """YUV to RGB in 8-bit fixed point: rows R, G, B over ``(Y, U, V) - bias``, each
    coefficient ``round(256 * c)`` of the standard's Kr and Kb (applied with ``>> 8``), and
    the bias (16 for narrow-range Y, 128 for chroma).

    Example:
        >>> csc_coefficients("BT-601NARROW")
        (((298, 0, 409), (298, -100, -208), (298, 516, 0)), (16, 128, 128))
    """
    kr, kb, narrow = COLOR_STANDARDS[standard]
    kg = 1.0 - kr - kb
    ys, cs = (255.0 / 219.0, 255.0 / 224.0) if narrow else (1.0, 1.0)
    rows = ((ys, 0.0, 2 * (1 - kr) * cs),
            (ys, -2 * kb * (1 - kb) / kg * cs, -2 * kr * (1 - kr) / kg * cs),
            (ys, 2 * (1 - kb) * cs, 0.0))
    fixed = tuple(tuple(int(round(256 * c)) for c in row) for row in rows)
    return fixed, (16 if narrow else 0, 128, 128)  # type: ignore[return-value]


def canonical_standard(name: str) -> str | None:
    """The table's spelling of a colour standard name (``bt601-narrow`` -> ``BT-601NARROW``),
    or None when it names none.

    Example:
        >>> canonical_standard("bt-709-wide"), canonical_standard("srgb")
        ('BT-709WIDE', None)
    """
    key = name.upper().replace("-", "").replace("_", "").replace(".", "").replace(" ", "")
    for known in COLOR_STANDARDS:
        if known.replace("-", "") == key:
            return known
    return None


def raw_shape(fmt: str, width: int, height: int) -> tuple[int, ...]:
    """The uint8 array shape of one ``width`` x ``height`` image in ``fmt``.

    Example:
        >>> raw_shape("YUV420SP_U8", 6, 4), raw_shape("RGB888_U8", 5, 3)
        ((6, 6), (3, 5, 3))
    """
    if fmt in ("YUV420SP_U8", "YVU420SP_U8"):
        return (height * 3 // 2, width)
    if fmt == "YUV400_U8":
        return (height, width)
    return (height, width, len(FORMATS[fmt]))


def decode(fmt: str, raw: np.ndarray, size: Sequence[int]) -> np.ndarray:
    """``(H, W, C)`` uint8 channels in memory order (see :data:`FORMATS`) of a raw image.

    Raises:
        PreprocessError: the array is not uint8 or not the format's shape for ``size``.

    Example:
        >>> nv12 = np.arange(36, dtype=np.uint8).reshape(6, 6)
        >>> decode("YUV420SP_U8", nv12, (6, 4))[1, 3].tolist()  # Y, then the pair of (0, 1)
        [9, 26, 27]
    """
    width, height = size
    want = raw_shape(fmt, width, height)
    if raw.dtype != np.uint8 or raw.shape != want:
        raise PreprocessError(
            f"image: {fmt} of {width}x{height} is a uint8 array of shape {want}, got "
            f"{raw.dtype} {raw.shape}; pass the image the declaration's source_size and format "
            "describe")
    if fmt == "YUV400_U8":
        return raw[:, :, None]
    if fmt not in ("YUV420SP_U8", "YVU420SP_U8"):
        return raw
    luma = raw[:height]
    pairs = raw[height:].reshape(height // 2, width // 2, 2)
    chroma = pairs.repeat(2, axis=0).repeat(2, axis=1)
    return np.concatenate([luma[:, :, None], chroma], axis=2)


def synthetic_image(fmt: str, size: Sequence[int], seed: int = 0) -> np.ndarray:
    """A random image in ``fmt`` (uniform uint8 noise with smooth gradients mixed in, so a
    resize sees both edges and ramps).

    Example:
        >>> synthetic_image("YVU420SP_U8", (8, 4)).shape
        (6, 8)
    """
    width, height = size
    rng = np.random.default_rng(seed)
    shape = raw_shape(fmt, width, height)
    noise = rng.integers(0, 256, size=shape, dtype=np.uint16)
    ramp = np.add.outer(np.arange(shape[0]) * 7, np.arange(shape[1]) * 3) % 256
    ramp = ramp.reshape(shape[:2] + (1,) * (len(shape) - 2))
    return ((noise + ramp) // 2).astype(np.uint8)
