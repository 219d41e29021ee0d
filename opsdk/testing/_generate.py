"""Input generation: distributions, value ranges, edge values and non-contiguous views.

Every function takes a ``numpy.random.Generator``; the same seed gives the same arrays.
Values are drawn in float64 and then cast to the target dtype.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..dtypes import is_float
from ..dtypes import to_numpy as _to_numpy
from ..spec import Values

__all__ = [
    "DISTRIBUTIONS",
    "default_range",
    "generate",
    "edge_values",
    "domain_edges",
    "inject_edges",
    "non_contiguous",
    "LAYOUTS",
]

Shape = tuple[int, ...]


@functools.cache
def to_numpy(name: str) -> np.dtype[Any]:
    """:func:`opsdk.dtypes.to_numpy`, memoised (it is on the per-case hot path)."""
    return _to_numpy(name)
_Draw = Callable[[np.random.Generator, Shape, float, float], np.ndarray]


def _uniform(rng: np.random.Generator, shape: Shape, lo: float, hi: float) -> np.ndarray:
    return rng.uniform(lo, hi, shape)


def _normal(rng: np.random.Generator, shape: Shape, lo: float, hi: float) -> np.ndarray:
    return np.clip(rng.normal((lo + hi) / 2, (hi - lo) / 6, shape), lo, hi)


def _beta(rng: np.random.Generator, shape: Shape, lo: float, hi: float) -> np.ndarray:
    return lo + (hi - lo) * rng.beta(2.0, 5.0, shape)


def _laplace(rng: np.random.Generator, shape: Shape, lo: float, hi: float) -> np.ndarray:
    return np.clip(rng.laplace((lo + hi) / 2, (hi - lo) / 10, shape), lo, hi)


def _triangular(rng: np.random.Generator, shape: Shape, lo: float, hi: float) -> np.ndarray:
    if hi <= lo:
        return np.full(shape, lo)
    return rng.triangular(lo, (lo + hi) / 2, hi, shape)


def _relu(rng: np.random.Generator, shape: Shape, lo: float, hi: float) -> np.ndarray:
    return np.maximum(rng.uniform(lo, hi, shape), 0.0)


def _sigmoid(rng: np.random.Generator, shape: Shape, lo: float, hi: float) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-rng.uniform(lo, hi, shape)))


def _softmax(rng: np.random.Generator, shape: Shape, lo: float, hi: float) -> np.ndarray:
    z = rng.uniform(lo, hi, shape)
    if z.ndim == 0 or z.size == 0:
        return np.ones(shape) if z.ndim == 0 else z
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _tanh(rng: np.random.Generator, shape: Shape, lo: float, hi: float) -> np.ndarray:
    return np.tanh(rng.uniform(lo, hi, shape))


#: Distribution name -> sampler. The activation-shaped ones (relu, sigmoid, softmax over
#: the last axis, tanh) apply the activation to uniform samples of the value range, so
#: the data look like that activation's output, as msopst's distributions of that name.
DISTRIBUTIONS: dict[str, _Draw] = {
    "uniform": _uniform,
    "normal": _normal,
    "beta": _beta,
    "laplace": _laplace,
    "triangular": _triangular,
    "relu": _relu,
    "sigmoid": _sigmoid,
    "softmax": _softmax,
    "tanh": _tanh,
}


def default_range(dtype: str) -> tuple[float, float]:
    """The value range used when neither the spec nor the case gives one.

    Example:
        >>> default_range("float16"), default_range("uint8")
        ((-5.0, 5.0), (0.0, 255.0))
    """
    if is_float(dtype):
        return (-5.0, 5.0)
    if dtype == "bool":
        return (0.0, 1.0)
    info = np.iinfo(to_numpy(dtype))
    return (float(max(info.min, -100)), float(min(info.max, 100 if info.min < 0 else 255)))


def generate(
    rng: np.random.Generator,
    shape: Sequence[int],
    dtype: str,
    distribution: str = "uniform",
    value_range: tuple[float, float] | None = None,
) -> np.ndarray:
    """Draw a C-contiguous array of ``shape`` and ``dtype`` from a named distribution.

    Example:
        >>> x = generate(np.random.default_rng(0), (2, 3), "float16", "normal", (-1, 1))
        >>> x.dtype, x.shape, bool((abs(x) <= 1).all())
        (dtype('float16'), (2, 3), True)
    """
    try:
        draw = DISTRIBUTIONS[distribution]
    except KeyError:
        raise ValueError(
            f"unknown distribution {distribution!r}; expected one of {', '.join(DISTRIBUTIONS)}"
        ) from None
    shp = tuple(int(s) for s in shape)
    if dtype == "bool":
        return rng.random(shp) < 0.5
    lo, hi = value_range if value_range is not None else default_range(dtype)
    values = draw(rng, shp, float(lo), float(hi))
    if not is_float(dtype):
        info = np.iinfo(to_numpy(dtype))
        values = np.clip(np.rint(values), max(info.min, lo), min(info.max, hi))
    return np.asarray(values).astype(to_numpy(dtype))


def edge_values(dtype: str) -> np.ndarray:
    """The values kernels get wrong: NaN, +-Inf, -0.0, subnormals, extremes, fp16 limits.

    For floats: NaN, +-Inf, +-0.0, the smallest subnormal, the largest subnormal, the
    smallest normal, the largest finite (both signs), 1 +- eps, and for dtypes wider than
    float16 the float16 overflow boundary (65504 is float16's max, 65519.99 still rounds
    to it, 65520 rounds to Inf) and float16's smallest subnormal. For integers: min, max,
    0, +-1. For bool: False, True.

    Example:
        >>> v = edge_values("float16")
        >>> bool(np.isnan(v).any()), bool(np.isinf(v).any()), float(np.nanmax(v))
        (True, True, inf)
    """
    return _edge_values(dtype).copy()


@functools.cache
def _edge_values(dtype: str) -> np.ndarray:
    npdt = to_numpy(dtype)
    if dtype == "bool":
        return np.array([False, True])
    if not is_float(dtype):
        info = np.iinfo(npdt)
        ints = [info.min, info.max, 0, 1, info.min + 1, info.max - 1]
        ints += [-1] if info.min < 0 else []
        return np.array(ints, dtype=npdt)
    import ml_dtypes

    fi = ml_dtypes.finfo(npdt) if dtype == "bfloat16" else np.finfo(npdt)
    sub = float(fi.smallest_subnormal)
    tiny_, big, eps = float(fi.tiny), float(fi.max), float(fi.eps)
    vals: list[float] = [np.nan, np.inf, -np.inf, 0.0, -0.0, sub, -sub, tiny_ - sub, tiny_, -tiny_]
    vals += [big, -big, 1.0 + eps, 1.0 - eps / 2, -1.0]
    if dtype != "float16":
        vals += [65504.0, -65504.0, 65519.99, 65520.0, -65520.0, 2.0**-24, 2.0**-25]
    with np.errstate(over="ignore"):
        return np.array(vals, dtype=np.float64).astype(npdt)


def domain_edges(dtype: str, values: Values | None = None) -> np.ndarray:
    """The edge values of ``dtype`` an input with the declared ``values`` may hold: those
    in its range (NaN and +-Inf kept unless ``nan=False`` / ``inf=False``), whole numbers
    only for ``integer=True``, none for an index input.

    Example:
        >>> from opsdk.spec import Values
        >>> v = domain_edges("float32", Values(range=(0.0, 2.0), nan=False, inf=False))
        >>> float(v.min()), float(v.max()), bool(np.isfinite(v).all())
        (0.0, 1.0000001192092896, True)
    """
    edges = _edge_values(dtype)
    if values is None:
        return edges.copy()
    if values.index_of is not None:
        return edges[:0].copy()
    with np.errstate(invalid="ignore"):
        f = edges.astype(np.float64)
        finite = np.isfinite(f)
        keep = (np.isnan(f) & values.nan) | (np.isinf(f) & values.inf)
        ok = finite.copy()
        if values.range is not None:
            ok &= (f >= values.range[0]) & (f <= values.range[1])
        if values.integer:
            ok &= np.where(finite, f == np.round(f), False)
    return edges[keep | ok].copy()


def inject_edges(
    rng: np.random.Generator, array: np.ndarray, dtype: str, every: int = 4,
    values: Values | None = None,
) -> np.ndarray:
    """Return a copy of ``array`` with edge values written at random positions.

    Every edge value appears at least once when the array has room (one edge element per
    ``every`` elements); the rest keeps its drawn values. ``values``: the input's declared
    domain (:func:`domain_edges`).

    Example:
        >>> a = inject_edges(np.random.default_rng(0), np.zeros(64, np.float32), "float32")
        >>> bool(np.isnan(a).any()), bool(np.isneginf(a).any())
        (True, True)
    """
    out = np.array(array, copy=True)
    flat = out.reshape(-1)
    if flat.size == 0:
        return out
    edges = _edge_values(dtype) if values is None else domain_edges(dtype, values)
    if edges.size == 0:
        return out
    n = max(min(flat.size, len(edges)), flat.size // every)
    pos = rng.permutation(flat.size)[:n]
    flat[pos] = np.resize(edges, n)
    return out


#: The non-contiguous layouts of :func:`non_contiguous`.
LAYOUTS = ("strided", "transposed", "negative", "expanded")


def non_contiguous(array: np.ndarray, mode: str = "strided") -> np.ndarray:
    """A non-contiguous view holding the same values as ``array``.

    ``mode="strided"`` places the data in every other element of a larger buffer along
    the last axis; ``mode="transposed"`` returns the transpose of a contiguous transpose
    (``strided`` for rank 1); ``mode="negative"`` is a view with a negative stride along
    the last axis (its first element lies at the end of its buffer). ``mode="expanded"``
    is different: a broadcast view (stride 0) of the first slice along the first axis
    longer than 1, so its values repeat that slice (as ``torch.expand`` makes); an array
    with no such axis is returned strided. Scalars and empty arrays are returned as they
    are (they have no strides to vary).

    Example:
        >>> v = non_contiguous(np.arange(6.0).reshape(2, 3))
        >>> v.flags.c_contiguous, v.tolist()
        (False, [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    """
    if array.ndim == 0 or array.size == 0:
        return array
    if mode not in LAYOUTS:
        raise ValueError(f"unknown layout {mode!r}; expected one of {', '.join(LAYOUTS)}")
    if mode == "transposed" and array.ndim >= 2:
        return np.ascontiguousarray(array.T).T
    if mode == "negative":
        return np.ascontiguousarray(array[..., ::-1])[..., ::-1]
    axis = next((i for i, n in enumerate(array.shape) if n > 1), None)
    if mode == "expanded" and axis is not None:
        return np.broadcast_to(array.take([0], axis=axis), array.shape)
    buf = np.zeros((*array.shape[:-1], array.shape[-1] * 2), dtype=array.dtype)
    view: Any = buf[..., ::2]
    view[...] = array
    return np.asarray(view)
