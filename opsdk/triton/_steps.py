"""Calling a pipeline's Python step: the one code path the server's model.py and the
in-process run (:func:`opsdk.triton.run_pipeline`) share, so both compute the same thing.

Kept to the standard library and numpy: the Python backend's stub imports it.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["load_function", "call_step", "preprocess_function"]


def load_function(path: str | Path, name: str, module_name: str) -> Callable[..., Any]:
    """Import ``path`` as ``module_name`` and return its function ``name``.

    Example:
        >>> fn = load_function("steps.py", "scale", "opsdk_step_scale")  # doctest: +SKIP
    """
    spec = importlib.util.spec_from_file_location(module_name, str(path))
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path} (not a Python file)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    keep, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:  # no __pycache__ in the model folder: --force replaces only opsdk's own files
        spec.loader.exec_module(module)
    finally:
        sys.dont_write_bytecode = keep
    fn = getattr(module, name, None)
    if not callable(fn):
        raise ImportError(f"{path} has no function {name!r}")
    return fn


def preprocess_function(declaration: str | Path) -> Callable[..., np.ndarray]:
    """A preprocess step's function: ``[N, *raw image shape]`` uint8 -> the model tensor
    (:func:`opsdk.preprocess.preprocess_images` of the declaration); the served module and
    the in-process run both take it from here.

    Example:
        >>> fn = preprocess_function("det_preprocess.toml")  # doctest: +SKIP
        >>> fn(image=pixels).shape  # doctest: +SKIP
        (1, 3, 96, 320)
    """
    from ..preprocess import load_preprocess, preprocess_images

    p = load_preprocess(declaration)

    def preprocess(**images: np.ndarray) -> np.ndarray:
        (image,) = images.values()
        return preprocess_images(p, image)
    return preprocess


def call_step(step: str, fn: Callable[..., Any], feeds: Mapping[str, np.ndarray],
              outputs: Sequence[tuple[str, np.dtype[Any]]]) -> list[np.ndarray]:
    """``fn(**feeds)`` as the arrays of ``outputs`` (name, dtype), in that order.

    ``fn`` returns a dict by output name, a tuple in the declared order, or one array for a
    single output. A missing output, a wrong dtype or a non-array is an error naming the
    step, the output, what was declared and what came back.

    Example:
        >>> call_step("neg", lambda x: {"y": -x}, {"x": np.ones(2, np.float32)},
        ...           [("y", np.dtype(np.float32))])
        [array([-1., -1.], dtype=float32)]
    """
    result = fn(**feeds)
    names = [n for n, _ in outputs]
    if isinstance(result, Mapping):
        missing = [n for n in names if n not in result]
        if missing:
            raise ValueError(f"step {step!r}: the function returned {sorted(result)}, not the "
                             f"declared output {missing[0]!r}; return a dict with {names}")
        values = [result[n] for n in names]
    elif isinstance(result, tuple | list):
        if len(result) != len(names):
            raise ValueError(f"step {step!r}: the function returned {len(result)} values for "
                             f"the {len(names)} declared outputs {names}")
        values = list(result)
    elif len(names) == 1:
        values = [result]
    else:
        raise ValueError(f"step {step!r}: the function returned one {type(result).__name__} "
                         f"for the {len(names)} declared outputs {names}; return a dict")
    return [_checked(step, n, dt, v) for (n, dt), v in zip(outputs, values, strict=True)]


def _checked(step: str, name: str, dtype: np.dtype[Any], value: Any) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise TypeError(f"step {step!r}: output {name!r} is a {type(value).__name__}, not a "
                        "numpy array; return np.asarray(...)")
    if dtype.kind == "O":
        if value.dtype.kind not in "OSU":
            raise TypeError(f"step {step!r}: output {name!r} is declared string but has dtype "
                            f"{value.dtype}; return an array of str or bytes")
        return value.astype(object)
    if value.dtype != dtype:
        raise TypeError(f"step {step!r}: output {name!r} has dtype {value.dtype}, the pipeline "
                        f"declares {dtype}; cast it in the function (value.astype(np.{dtype}))"
                        " or declare its dtype")
    return value
