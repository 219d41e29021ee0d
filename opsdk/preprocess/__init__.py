"""One preprocessing declaration for every target: what image the application sends (format,
size), what the model takes (channels, size, normalization, layout, dtype), and a CPU step
that computes it with NumPy. The Ascend wing turns the same declaration into ATC's AIPP
config and emulates AIPP's arithmetic (:mod:`opsdk.ascend.atc.aipp`).

Example:
    >>> from opsdk.preprocess import preprocess_from_dict, preprocess_cpu, synthetic_image
    >>> p = preprocess_from_dict({"format": "YUV420SP_U8", "source_size": [38, 30],
    ...     "color_standard": "BT-601NARROW", "crop": {"start": [2, 4], "size": [33, 21]},
    ...     "normalize": {"mean": [0, 0, 0], "std": [255, 255, 255]}})
    >>> preprocess_cpu(p, synthetic_image(p.format, p.source_size)).shape
    (1, 3, 21, 33)
"""

from ._cpu import bilinear_align_corners, fixed_point_csc, preprocess_cpu, preprocess_images
from ._declaration import (
    Crop,
    Normalize,
    Padding,
    Preprocess,
    Resize,
    load_preprocess,
    preprocess_from_dict,
)
from ._pixels import (
    COLOR_STANDARDS,
    FORMATS,
    GRAY_ROW,
    PreprocessError,
    canonical_standard,
    csc_coefficients,
    decode,
    raw_shape,
    synthetic_image,
)

__all__ = [
    "Preprocess", "Crop", "Resize", "Padding", "Normalize", "PreprocessError",
    "load_preprocess", "preprocess_from_dict", "preprocess_cpu", "preprocess_images", "decode",
    "raw_shape",
    "synthetic_image", "fixed_point_csc", "bilinear_align_corners", "csc_coefficients",
    "FORMATS", "COLOR_STANDARDS", "GRAY_ROW", "canonical_standard",
]
