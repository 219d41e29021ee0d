"""Representative inputs of a model: given as .npy files, or generated from its inputs.

Generated (seeded, so every run sees the same values): a float input of rank 4 with 1 or 3
channels is an image, uniform in [0, 1) and normalised by mean 0.5 and std 0.5 to [-1, 1)
(what the PaddleOCR and many torchvision pipelines feed); another float input is standard
normal; an integer input that indexes a ``Gather`` table holds token ids in
``[0, table rows)``, another integer input values in [0, 10); a bool input random bits.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto

from ...errors import SpecError

__all__ = ["parse_input_shape", "make_inputs", "SEED"]

SEED = 0


def parse_input_shape(text: str | None) -> dict[str, tuple[int, ...]]:
    """ATC's ``--input_shape`` syntax (``"x:1,3,64,96;y:2"``) as a dict.

    Example:
        >>> parse_input_shape("x:1,3,64,96;ids:2,8")
        {'x': (1, 3, 64, 96), 'ids': (2, 8)}
    """
    out: dict[str, tuple[int, ...]] = {}
    for part in filter(None, (p.strip() for p in (text or "").split(";"))):
        name, sep, dims = part.rpartition(":")
        try:
            shape = tuple(int(d) for d in dims.split(",") if d.strip()) if sep else None
        except ValueError:
            shape = None
        if not name or shape is None or any(d < 0 for d in shape):
            raise SpecError(f"--input-shape {part!r}: expected name:d0,d1,... with fixed dims "
                            "(e.g. x:1,3,64,96)")
        out[name] = shape
    return out


def _vocab(model: onnx.ModelProto, name: str) -> int | None:
    inits = {i.name: i for i in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Gather" and len(n.input) > 1 and n.input[1] == name and \
                n.input[0] in inits:
            return int(inits[n.input[0]].dims[0])
    return None


def _shape(vi: onnx.ValueInfoProto, given: Mapping[str, tuple[int, ...]]) -> tuple[int, ...]:
    if vi.name in given:
        return given[vi.name]
    dims = vi.type.tensor_type.shape.dim
    if any(not d.HasField("dim_value") or d.dim_value <= 0 for d in dims):
        shown = ",".join(str(d.dim_value) if d.HasField("dim_value") else d.dim_param or "?"
                         for d in dims)
        raise SpecError(f"input {vi.name!r} has dynamic dims ({shown}); give its shape with "
                        f"--input-shape {vi.name}:<d0,d1,...> or its values with "
                        f"--input {vi.name}=file.npy")
    return tuple(d.dim_value for d in dims)


def _generate(model: onnx.ModelProto, vi: onnx.ValueInfoProto, shape: tuple[int, ...],
              rng: np.random.Generator) -> np.ndarray:
    elem = vi.type.tensor_type.elem_type
    dtype = onnx.helper.tensor_dtype_to_np_dtype(elem)
    if elem in (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE):
        if len(shape) == 4 and shape[1] in (1, 3):
            return ((rng.random(shape) - 0.5) / 0.5).astype(dtype)
        return rng.standard_normal(shape).astype(dtype)
    if elem == TensorProto.BOOL:
        return rng.random(shape) < 0.5
    high = _vocab(model, vi.name) or 10
    return rng.integers(0, high, size=shape).astype(dtype)


def make_inputs(model: onnx.ModelProto, shapes: Mapping[str, tuple[int, ...]] | None = None,
                files: Mapping[str, str | Path] | None = None,
                seed: int = SEED) -> dict[str, np.ndarray]:
    """Feeds for every graph input: from ``files`` (.npy), else generated (module docstring).

    Example:
        >>> import onnx.helper as h
        >>> g = h.make_graph([h.make_node("Relu", ["x"], ["y"])], "g",
        ...     [h.make_tensor_value_info("x", 1, ["N", 3, 8, 8])],
        ...     [h.make_tensor_value_info("y", 1, None)])
        >>> x = make_inputs(h.make_model(g), {"x": (1, 3, 8, 8)})["x"]
        >>> x.shape, bool(x.min() >= -1 and x.max() < 1)
        ((1, 3, 8, 8), True)
    """
    shapes, files = dict(shapes or {}), dict(files or {})
    inits = {i.name for i in model.graph.initializer}
    inputs = [vi for vi in model.graph.input if vi.name not in inits]
    names = {vi.name for vi in inputs}
    extra = sorted((set(shapes) | set(files)) - names)
    if extra:
        raise SpecError(f"the model has no input {', '.join(map(repr, extra))}; its inputs are "
                        f"{', '.join(sorted(names))}")
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    for vi in inputs:
        _check_numeric(vi)
        if vi.name in files:
            feeds[vi.name] = _load_file(vi, files[vi.name])
        else:
            feeds[vi.name] = _generate(model, vi, _sized(vi, _shape(vi, shapes)), rng)
    return feeds


MAX_ELEMENTS = 1 << 30
"""The most elements one generated input may hold (4 GiB of float32; the model runs many
times over): beyond it, a shape is refused naming the input instead of exhausting memory."""


def _check_numeric(vi: onnx.ValueInfoProto) -> None:
    elem = vi.type.tensor_type.elem_type if vi.type.HasField("tensor_type") else 0
    if elem in (TensorProto.STRING, TensorProto.UNDEFINED) or \
            not vi.type.HasField("tensor_type"):
        kind = onnx.TensorProto.DataType.Name(elem) if elem else "no tensor type"
        raise SpecError(f"input {vi.name!r} is {kind.lower()}; the precision emulation feeds "
                        "numeric tensors only: give the input a numeric tensor type")


def _sized(vi: onnx.ValueInfoProto, shape: tuple[int, ...]) -> tuple[int, ...]:
    count = int(np.prod(shape, dtype=object))
    if count > MAX_ELEMENTS:
        raise SpecError(f"input {vi.name!r} of shape {shape} has {count} elements, more than "
                        f"the {MAX_ELEMENTS} a generated input may hold; give a smaller shape "
                        f"with --input-shape {vi.name}:<d0,d1,...>")
    return shape


def _load_file(vi: onnx.ValueInfoProto, path: str | Path) -> np.ndarray:
    """The array of ``--input NAME=FILE.npy``, checked against the input's dtype and dims."""
    flag = f"--input {vi.name}={path}"
    try:
        arr = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        why = "not an .npy array (or one of objects, which opsdk does not unpickle)" \
            if "pickle" in str(e) else str(e)
        raise SpecError(f"{flag}: not a readable .npy array ({why}); write it with "
                        "numpy.save(path, array)") from None
    if not isinstance(arr, np.ndarray):
        raise SpecError(f"{flag}: holds several arrays (.npz); give one .npy per input")
    tt = vi.type.tensor_type
    want = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
    if arr.dtype != want:
        raise SpecError(f"{flag}: dtype {arr.dtype}, but input {vi.name!r} is {want}; "
                        f"save it as array.astype(numpy.{want})")
    if tt.HasField("shape"):
        dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
                for d in tt.shape.dim]
        if len(dims) != arr.ndim or any(d is not None and d != a
                                        for d, a in zip(dims, arr.shape)):
            shown = ",".join("?" if d is None else str(d) for d in dims)
            raise SpecError(f"{flag}: shape {arr.shape}, but input {vi.name!r} has dims "
                            f"({shown}); give an array of that shape")
    return arr
