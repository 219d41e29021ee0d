"""The preprocessing declaration: one TOML file (or a :class:`Preprocess` object) that says
what image the application sends and what tensor the model takes.

```toml
input = "image"               # the model input it feeds (default: the first)
format = "YUV420SP_U8"        # RGB888_U8, BGR888_U8, XRGB8888_U8, YUV420SP_U8, YVU420SP_U8,
                              # YUV400_U8
source_size = [640, 480]      # [width, height] of the image sent
color_standard = "BT-601NARROW"   # YUV to RGB: BT-601NARROW/WIDE, BT-709NARROW/WIDE
channels = "RGB"              # what the model takes: RGB, BGR or GRAY
mode = "static"               # AIPP mode: static, or dynamic (set per run by the application)

[crop]                        # optional; the order is crop, colour, resize, normalize, padding
start = [16, 8]               # [x, y]
size = [224, 224]             # [width, height]

[resize]                      # optional: bilinear on AIPP's sampling grid (align corners)
size = [224, 224]

[normalize]                   # optional: out = (in - mean) * var_reci (var_reci = 1 / std)
mean = [123.675, 116.28, 103.53]
std = [58.395, 57.12, 57.375]

[padding]                     # optional: added after normalize, value in the output dtype
left = 0
right = 0
top = 0
bottom = 0
value = 0.0

[output]
layout = "NCHW"               # NCHW or NHWC (the CPU path; ONNX models under AIPP take NCHW)
dtype = "float32"             # float32 or float16
```

Every field is checked where it is read; an error names the file, the field, the value,
what is expected and the fix.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._toml import read_toml
from ._pixels import COLOR_STANDARDS, FORMATS, PreprocessError, canonical_standard

__all__ = ["Crop", "Resize", "Padding", "Normalize", "Preprocess", "load_preprocess",
           "preprocess_from_dict"]

#: What each input format can give the model (channels), without a colour conversion first.
CHANNELS: dict[str, tuple[str, ...]] = {
    "RGB888_U8": ("RGB", "BGR", "GRAY"),
    "BGR888_U8": ("RGB", "BGR", "GRAY"),
    "YUV420SP_U8": ("RGB", "BGR"),
    "YVU420SP_U8": ("RGB", "BGR"),
    "YUV400_U8": ("GRAY",),
    "XRGB8888_U8": ("RGB", "BGR", "GRAY"),
}
LAYOUTS = ("NCHW", "NHWC")
DTYPES = ("float32", "float16")
MODES = ("static", "dynamic")
INTERPOLATIONS = ("bilinear",)


def _fail(where: str, name: str, value: Any, expected: str, fix: str) -> PreprocessError:
    return PreprocessError(f"{where}: field '{name}' is {value!r}, expected {expected}; {fix}")


@dataclass(frozen=True)
class Crop:
    """A window of the source image: top-left ``(x, y)`` and its ``width`` x ``height``."""

    x: int
    y: int
    width: int
    height: int


@dataclass(frozen=True)
class Resize:
    """The size after resizing (``width`` x ``height``) and the interpolation."""

    width: int
    height: int
    interpolation: str = "bilinear"


@dataclass(frozen=True)
class Padding:
    """Pixels added on each side after normalization, filled with ``value``."""

    left: int = 0
    right: int = 0
    top: int = 0
    bottom: int = 0
    value: float = 0.0


@dataclass(frozen=True)
class Normalize:
    """Per output channel: ``out = (in - mean) * var_reci``."""

    mean: tuple[float, ...]
    var_reci: tuple[float, ...]


@dataclass(frozen=True)
class Preprocess:
    """One preprocessing declaration, checked on construction.

    Example:
        >>> p = Preprocess("RGB888_U8", (37, 29), channels="BGR", crop=Crop(2, 3, 31, 21))
        >>> p.output_size, p.out_channels
        ((31, 21), 3)
        >>> Preprocess("YUV420SP_U8", (37, 30), channels="RGB")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        opsdk.errors.PreprocessError: preprocess: field 'source_size' is [37, 30], ...
    """

    format: str
    source_size: tuple[int, int]
    channels: str = "RGB"
    color_standard: str | None = None
    crop: Crop | None = None
    resize: Resize | None = None
    normalize: Normalize | None = None
    padding: Padding | None = None
    layout: str = "NCHW"
    dtype: str = "float32"
    mode: str = "static"
    input: str | None = None
    source: str = field(default="preprocess", compare=False)

    def __post_init__(self) -> None:
        _check(self)

    @property
    def crop_size(self) -> tuple[int, int]:
        """``(width, height)`` after the crop (the source size without one)."""
        if self.crop:
            return (self.crop.width, self.crop.height)
        return (self.source_size[0], self.source_size[1])

    @property
    def resize_size(self) -> tuple[int, int]:
        """``(width, height)`` after the resize (the crop size without one)."""
        return (self.resize.width, self.resize.height) if self.resize else self.crop_size

    @property
    def output_size(self) -> tuple[int, int]:
        """``(width, height)`` of the tensor the model takes (padding included)."""
        w, h = self.resize_size
        p = self.padding or Padding()
        return (w + p.left + p.right, h + p.top + p.bottom)

    @property
    def out_channels(self) -> int:
        """Channels of the model's input: 1 for GRAY, else 3."""
        return 1 if self.channels == "GRAY" else 3

    def model_shape(self, batch: int = 1) -> tuple[int, ...]:
        """The model input shape in the declared layout."""
        w, h = self.output_size
        c = self.out_channels
        return (batch, c, h, w) if self.layout == "NCHW" else (batch, h, w, c)


def _check(p: Preprocess) -> None:
    where = p.source
    if p.format not in FORMATS:
        raise _fail(where, "format", p.format, f"one of {', '.join(FORMATS)}",
                    "write the format the application sends the image in, as ATC names it")
    _check_size(where, "source_size", p.source_size)
    if p.format in ("YUV420SP_U8", "YVU420SP_U8") and any(v % 2 for v in p.source_size):
        raise _fail(where, "source_size", list(p.source_size), "an even width and height",
                    f"{p.format} subsamples chroma 2x2; crop the image to even sides first")
    if p.channels not in CHANNELS[p.format]:
        raise _fail(where, "channels", p.channels,
                    f"one of {', '.join(CHANNELS[p.format])} for {p.format}",
                    "declare what the model was trained on")
    _check_standard(p)
    _check_crop(p)
    if p.resize is not None:
        _check_size(where, "resize.size", (p.resize.width, p.resize.height))
        if p.resize.interpolation not in INTERPOLATIONS:
            raise _fail(where, "resize.interpolation", p.resize.interpolation,
                        " or ".join(INTERPOLATIONS), "AIPP's scaler interpolates bilinearly")
    _check_normalize(p)
    _check_padding(p)
    for name, value, allowed in (("output.layout", p.layout, LAYOUTS),
                                 ("output.dtype", p.dtype, DTYPES), ("mode", p.mode, MODES)):
        if value not in allowed:
            raise _fail(where, name, value, f"one of {', '.join(allowed)}", "pick one of those")


def _check_size(where: str, name: str, size: Sequence[Any]) -> None:
    if (len(size) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0
                                  for v in size)):
        raise _fail(where, name, list(size), "[width, height], two positive integers",
                    f"write e.g. {name.split('.')[-1]} = [224, 224]")


def _check_standard(p: Preprocess) -> None:
    yuv = p.format in ("YUV420SP_U8", "YVU420SP_U8")
    if yuv and p.color_standard is None:
        raise _fail(p.source, "color_standard", None, f"one of {', '.join(COLOR_STANDARDS)}",
                    f"{p.format} to {p.channels} needs the standard the video or JPEG was "
                    "encoded with (JPEG: BT-601WIDE)")
    if not yuv and p.color_standard is not None:
        raise _fail(p.source, "color_standard", p.color_standard, "no standard",
                    f"a colour standard converts YUV to RGB, and {p.format} is not YUV; drop it")
    if yuv and p.color_standard not in COLOR_STANDARDS:
        raise _fail(p.source, "color_standard", p.color_standard,
                    f"one of {', '.join(COLOR_STANDARDS)}", "name one of those standards")


def _check_crop(p: Preprocess) -> None:
    if p.crop is None:
        return
    c, (sw, sh) = p.crop, p.source_size
    if c.x < 0 or c.y < 0:
        raise _fail(p.source, "crop.start", [c.x, c.y], "[x, y] >= 0", "start inside the image")
    _check_size(p.source, "crop.size", (c.width, c.height))
    if c.x + c.width > sw or c.y + c.height > sh:
        raise _fail(p.source, "crop", {"start": [c.x, c.y], "size": [c.width, c.height]},
                    f"a window inside the {sw}x{sh} source (start + size <= source_size)",
                    f"shrink crop.size to at most [{sw - c.x}, {sh - c.y}] or move crop.start")


def _check_normalize(p: Preprocess) -> None:
    if p.normalize is None:
        return
    n = p.out_channels
    for name, values in (("normalize.mean", p.normalize.mean),
                         ("normalize.var_reci", p.normalize.var_reci)):
        if len(values) != n:
            raise _fail(p.source, name, list(values), f"{n} value(s), one per {p.channels} "
                        "channel", "give one value per channel the model takes")
        if not all(_finite(v) for v in values):
            raise _fail(p.source, name, list(values), "finite numbers",
                        "give a finite value per channel (no nan or inf)")


def _check_padding(p: Preprocess) -> None:
    if p.padding is None:
        return
    for side in ("left", "right", "top", "bottom"):
        value = getattr(p.padding, side)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise _fail(p.source, f"padding.{side}", value, "an integer >= 0",
                        "give the pixels added on that side")
    value = p.padding.value
    if not _finite(value):
        raise _fail(p.source, "padding.value", value, "a finite number (in the output dtype)",
                    "write e.g. value = 0.0")
    limit = _DTYPE_MAX.get(p.dtype, _DTYPE_MAX["float32"])
    if abs(value) > limit:
        raise _fail(p.source, "padding.value", value,
                    f"a number within {p.dtype}'s range (|value| <= {limit:g})",
                    "the padding is filled in the output dtype, which would make it inf; "
                    "pick a value within it (e.g. 0.0)")


#: the largest finite value of each output dtype
_DTYPE_MAX = {"float16": 65504.0, "float32": 3.4028234663852886e38}


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and \
        math.isfinite(value)


def _pair(where: str, table: Mapping[str, Any], key: str, name: str) -> tuple[int, int]:
    value = table.get(key)
    if not (isinstance(value, list) and len(value) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value)):
        raise _fail(where, name, value, "[a, b], two integers", f"write e.g. {key} = [16, 8]")
    return value[0], value[1]


def _known(where: str, table: Mapping[str, Any], prefix: str, allowed: Sequence[str]) -> None:
    for key in table:
        if key not in allowed:
            raise PreprocessError(
                f"{where}: unknown field '{prefix}{key}'; the fields here are "
                f"{', '.join(prefix + a for a in allowed)}")


def _table(where: str, data: Mapping[str, Any], key: str,
           allowed: Sequence[str]) -> dict[str, Any] | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _fail(where, key, value, "a table", f"write it as a [{key}] section")
    _known(where, value, f"{key}.", allowed)
    return value


def _numbers(where: str, t: Mapping[str, Any], key: str) -> list[float]:
    values = t.get(key, [])
    if not isinstance(values, list) or not all(_finite(v) for v in values):
        raise _fail(where, f"normalize.{key}", values, "a list of finite numbers, one per "
                    "channel", f"write e.g. {key} = [0.5, 0.5, 0.5]")
    return [float(v) for v in values]


def _normalize(where: str, t: Mapping[str, Any] | None) -> Normalize | None:
    if t is None:
        return None
    mean = _numbers(where, t, "mean")
    if ("std" in t) == ("var_reci" in t):
        raise _fail(where, "normalize", sorted(t), "mean with std or var_reci (one of them)",
                    "give std (the divisor) or var_reci (its reciprocal)")
    if "std" in t:
        std = _numbers(where, t, "std")
        if any(v == 0 for v in std):
            raise _fail(where, "normalize.std", std, "non-zero values", "a std of 0 divides by 0")
        reci = [1.0 / v for v in std]
    else:
        reci = _numbers(where, t, "var_reci")
    return Normalize(tuple(mean or [0.0] * len(reci)), tuple(reci))


_TOP = ("input", "format", "source_size", "color_standard", "channels", "mode", "crop",
        "resize", "normalize", "padding", "output")


def preprocess_from_dict(data: Mapping[str, Any], source: str = "preprocess") -> Preprocess:
    """A :class:`Preprocess` from the tables of a declaration file (see the module docstring).

    Example:
        >>> preprocess_from_dict({"format": "RGB888_U8", "source_size": [8, 6],
        ...                       "crop": {"start": [1, 1], "size": [4, 4]}}).crop
        Crop(x=1, y=1, width=4, height=4)
    """
    _known(source, data, "", _TOP)
    if "format" not in data or "source_size" not in data:
        raise PreprocessError(f"{source}: fields 'format' and 'source_size' are required, e.g. "
                              'format = "RGB888_U8" and source_size = [640, 480]')
    crop_t = _table(source, data, "crop", ("start", "size"))
    resize_t = _table(source, data, "resize", ("size", "interpolation"))
    pad_t = _table(source, data, "padding", ("left", "right", "top", "bottom", "value"))
    out_t = _table(source, data, "output", ("layout", "dtype")) or {}
    crop = None
    if crop_t is not None:
        (x, y), (w, h) = _pair(source, crop_t, "start", "crop.start"), \
            _pair(source, crop_t, "size", "crop.size")
        crop = Crop(x, y, w, h)
    resize = None
    if resize_t is not None:
        w, h = _pair(source, resize_t, "size", "resize.size")
        resize = Resize(w, h, resize_t.get("interpolation", "bilinear"))
    std = data.get("color_standard")
    return Preprocess(
        format=data["format"], source_size=_pair(source, data, "source_size", "source_size"),
        channels=data.get("channels", "RGB"),
        color_standard=(canonical_standard(std) or std) if isinstance(std, str) else std,
        crop=crop, resize=resize,
        normalize=_normalize(source, _table(source, data, "normalize",
                                            ("mean", "std", "var_reci"))),
        padding=Padding(**pad_t) if pad_t is not None else None,
        layout=out_t.get("layout", "NCHW"), dtype=out_t.get("dtype", "float32"),
        mode=data.get("mode", "static"), input=data.get("input"), source=source)


def load_preprocess(path: str | Path) -> Preprocess:
    """Read and check a declaration file (TOML, read with the standard library's tomllib).

    Raises:
        PreprocessError: the file is missing, not TOML, or a field is wrong (named).

    Example:
        >>> load_preprocess("preprocess.toml").output_size  # doctest: +SKIP
        (224, 224)
    """
    p = Path(path)
    data = read_toml(p, PreprocessError, "preprocessing declaration")
    return preprocess_from_dict(data, str(p))
