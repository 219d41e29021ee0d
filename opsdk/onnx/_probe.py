"""Inputs a model actually runs on: sizes for its dynamic dims and values for its value inputs.

A model with dynamic dims or value inputs does not run on any input: YOLOv8 needs spatial
sizes divisible by 32 (1x1 fails), silero-vad needs at least 192 samples and a sample rate
``sr`` it compares with 16000 (zeros take its 8 kHz branch). Three helpers find inputs that
run, for placeholder shapes (``opsdk doctor``, ``opsdk atc``) and for the runs that check a
Triton model file:

* :func:`value_candidates`: the constants the graph compares each input with (``Equal``,
  ``Less``, ``Greater``, ... through ``Cast``/``Reshape``/``Squeeze``, subgraphs included);
* :func:`dim_roles`: ``"batch"`` for a leading dim, or the one dynamic dim of an input
  whose other dims are fixed and that is neither first nor last (an RNN state
  ``[layers, batch, hidden]``), ``"size"`` otherwise;
* :func:`runnable_shapes`: the first sizing ONNX Runtime runs: batch dims 1, the others
  32, 64, 224 or 640 (one size for all, tried in turn; 1 for every dim last).

Example:
    >>> from onnx import helper, TensorProto as T
    >>> g = helper.make_graph(
    ...     [helper.make_node("Equal", ["sr", "c"], ["is16k"])], "g",
    ...     [helper.make_tensor_value_info("sr", T.INT64, [])],
    ...     [helper.make_tensor_value_info("is16k", T.BOOL, [])],
    ...     [helper.make_tensor(name="c", data_type=T.INT64, dims=[], vals=[16000])])
    >>> value_candidates(helper.make_model(g))
    {'sr': [16000]}
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import onnx

from ._constants import constant_node_value, input_dims
from ._model import iter_all_nodes
from .errors import ModelError, ProbeTooBig

__all__ = ["value_candidates", "dim_roles", "is_state_dim", "probe_feeds", "runnable_shapes",
           "SIZES"]

#: Sizes tried for non-batch dynamic dims, in turn (multiples of 32, as strided vision
#: models need; 224 and 640 as image and audio-chunk models are exported at).
SIZES = (32, 64, 224, 640)
_PASS = frozenset({"Cast", "CastLike", "Identity", "Squeeze", "Unsqueeze", "Reshape",
                   "Flatten"})
# comparison -> the value that makes "input OP constant" true
_COMPARE = {"Equal": 0, "GreaterOrEqual": 0, "LessOrEqual": 0, "Greater": 1, "Less": -1}


def _inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    inits = {t.name for t in model.graph.initializer}
    return [v for v in model.graph.input if v.name not in inits]


def _constants(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """The one-element initializers and Constant nodes anywhere in the model (subgraphs
    included): what a comparison with an input can use (weights are not read)."""
    out = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer
           if math.prod(t.dims) == 1}
    for node in iter_all_nodes(model.graph):
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            try:
                value = constant_node_value(node)
            except ValueError:  # not a valid Constant: nothing to compare with
                continue
            if value.size == 1:
                out[node.output[0]] = value
    return out


def value_candidates(model: onnx.ModelProto) -> dict[str, list[int | float]]:
    """For each graph input the graph compares with a one-element constant, the values that
    make those comparisons true, in graph order (``Equal(sr, 16000)`` gives ``16000``,
    ``Greater(x, 3)`` gives ``4``).

    Example:
        >>> value_candidates(onnx.ModelProto())
        {}
    """
    consts = _constants(model)
    nodes = list(iter_all_nodes(model.graph))
    out: dict[str, list[int | float]] = {}
    for v in _inputs(model):
        aliases, found = {v.name}, []
        for node in nodes:  # topological within each graph; aliases flow forward
            if node.domain not in ("", "ai.onnx") or not node.input:
                continue
            if node.op_type in _PASS and node.input[0] in aliases:
                aliases.add(node.output[0])
            elif node.op_type in _COMPARE and len(node.input) == 2:
                found += _compared(node, aliases, consts)
        if found:
            out[v.name] = list(dict.fromkeys(found))
    return out


def _compared(node: onnx.NodeProto, aliases: set[str], consts: Mapping[str, np.ndarray],
              ) -> list[int | float]:
    a, b = node.input
    if a in aliases and b in consts:
        c, sign = consts[b], 1
    elif b in aliases and a in consts:
        c, sign = consts[a], -1  # "const OP input": the input sits on the other side
    else:
        return []
    if c.size != 1:
        return []
    value = c.reshape(-1)[0].item()
    step = _COMPARE[node.op_type] * sign
    return [value + step if isinstance(value, int) or step == 0 else value + step * 0.5]


def dim_roles(model: onnx.ModelProto) -> dict[tuple[str, int], str]:
    """``{(input, axis): role}`` for each dynamic input dim: ``"batch"`` or ``"size"``.

    Example:
        >>> from onnx import helper, TensorProto as T
        >>> g = helper.make_graph([], "g", [
        ...     helper.make_tensor_value_info("x", T.FLOAT, ["n", "t"]),
        ...     helper.make_tensor_value_info("state", T.FLOAT, [2, "b", 128])], [])
        >>> dim_roles(helper.make_model(g))
        {('x', 0): 'batch', ('x', 1): 'size', ('state', 1): 'batch'}
    """
    roles: dict[tuple[str, int], str] = {}
    for v in _inputs(model):
        dims = input_dims(v) or []
        dynamic = [a for a, d in enumerate(dims) if not isinstance(d, int)]
        for axis in dynamic:
            batch = (axis == 0 and len(dims) > 1) or is_state_dim(axis, dynamic, len(dims))
            roles[(v.name, axis)] = "batch" if batch else "size"
    return roles


def is_state_dim(axis: int, dynamic: Sequence[int], rank: int) -> bool:
    """True for the one dynamic dim of an input, neither first nor last: the batch dim of an
    RNN state ``[layers, batch, hidden]``, which must match the data's batch.

    Example:
        >>> is_state_dim(1, [1], 3), is_state_dim(1, [0, 1], 3)
        (True, False)
    """
    return len(dynamic) == 1 and 0 < axis < rank - 1


PROBE_BYTES = 1 << 30
"""The most bytes one probe input may take: a larger one is :class:`ProbeTooBig`."""


def _check_probe_size(name: str, shape: list[int], dtype: Any) -> None:
    nbytes = int(np.prod(shape, dtype=object)) * np.dtype(dtype).itemsize
    if nbytes > PROBE_BYTES:
        raise ProbeTooBig(f"input {name!r} of shape {tuple(shape)} would take {nbytes} bytes "
                          f"for one probe run, more than {PROBE_BYTES}; give smaller sizes")


def probe_feeds(
    model: onnx.ModelProto,
    sizes: Mapping[tuple[str, int], int] | Mapping[str, int],
    values: Mapping[str, Any] | None = None,
    random: bool = False,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Inputs for one run: dynamic dims from ``sizes`` (by ``(input, axis)``, or by dim
    name; 1 where missing), each input filled with its value from ``values``, else its
    first :func:`value_candidates` value, else zeros (``random``: normal floats, integers
    0-3, booleans).

    Example:
        >>> from onnx import helper, TensorProto as T
        >>> g = helper.make_graph([], "g", [helper.make_tensor_value_info("x", T.FLOAT,
        ...     ["n", 3])], [])
        >>> probe_feeds(helper.make_model(g), {"n": 2})["x"].shape
        (2, 3)
    """
    rng = np.random.default_rng(seed)
    given = dict(values or {})
    derived = value_candidates(model)
    feeds = {}
    for v in _inputs(model):
        t = v.type.tensor_type
        shape = [_size(v.name, a, d, sizes) for a, d in enumerate(t.shape.dim)]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
        _check_probe_size(v.name, shape, dtype)
        fill = given.get(v.name, derived.get(v.name, [None])[0])
        if fill is not None:
            feeds[v.name] = np.full(shape, fill, dtype)
        elif not random:
            feeds[v.name] = np.zeros(shape, dtype)
        elif dtype == np.bool_:
            feeds[v.name] = rng.random(shape) > 0.5
        elif np.issubdtype(dtype, np.integer):
            feeds[v.name] = rng.integers(0, 4, shape).astype(dtype)
        else:
            feeds[v.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def _size(name: str, axis: int, d: onnx.TensorShapeProto.Dimension,
          sizes: Mapping[Any, int]) -> int:
    if d.HasField("dim_value") and d.dim_value > 0:
        return d.dim_value
    for key in ((name, axis), d.dim_param):
        if key in sizes:
            return int(sizes[key])
    return 1


def _sizings(model: onnx.ModelProto, sizes: Sequence[int]) -> Iterable[dict[tuple[str, int], int]]:
    """Each distinct sizing once (a fixed-shape model has one: its own shapes)."""
    roles = dim_roles(model)
    seen: list[dict[tuple[str, int], int]] = []
    for sizing in [*({key: 1 if role == "batch" else size for key, role in roles.items()}
                     for size in sizes), dict.fromkeys(roles, 1)]:
        if sizing not in seen:
            seen.append(sizing)
            yield sizing


def runnable_shapes(
    model: onnx.ModelProto,
    values: Mapping[str, Any] | None = None,
    sizes: Sequence[int] = SIZES,
    crashes: list[str] | None = None,
    python: str | None = None,
    refusals: list[str] | None = None,
) -> dict[str, tuple[int, ...]] | None:
    """The input shapes of the first sizing ONNX Runtime runs (see the module docstring),
    or None when none runs or ONNX Runtime cannot open the model (custom ops).

    ONNX Runtime runs in a child process (:class:`~opsdk.onnx._ort_child.OrtChild`): when
    it crashes, the answer is None and ``crashes`` (if given) gets one line naming the
    version, the signal, the stage and, where more children isolate it
    (:mod:`opsdk.onnx._crash`), the node and its fix. When it refuses to open the model,
    the answer is None and ``refusals`` (if given) gets its reason. ``python``: the
    interpreter whose ONNX Runtime runs it (default: this one).

    Example:
        >>> runnable_shapes(yolo)  # doctest: +SKIP
        {'images': (1, 3, 32, 32)}
    """
    from ._crash import crash_note
    from ._ort_child import OrtChild
    from .errors import OrtChildCrash

    def crashed(e: OrtChildCrash, feeds: Mapping[str, np.ndarray] | None = None) -> None:
        if crashes is not None:
            crashes.append(str(e) + (f" ({e.last_words})" if e.last_words else "")
                           + crash_note(model, feeds if feeds is not None else
                                        _first_feeds(model), python or sys.executable))

    try:
        child = OrtChild(model, python or sys.executable)
    except OrtChildCrash as e:
        crashed(e)
        return None
    except ModelError as e:  # custom ops, or a model ONNX Runtime refuses: no sizing to offer
        if refusals is not None:
            refusals.append(str(e))
        return None
    feeds: dict[str, np.ndarray] | None = None
    try:
        for sizing in _sizings(model, sizes):
            try:
                feeds = probe_feeds(model, sizing, values)
            except ProbeTooBig:  # inputs no probe run can hold: try the next sizing
                continue
            try:
                child.run(feeds)
            except RuntimeError:  # this sizing does not run: try the next
                continue
            return {name: tuple(int(n) for n in arr.shape) for name, arr in feeds.items()}
    except OrtChildCrash as e:
        crashed(e, feeds)
    finally:
        child.close()
    return None


def _first_feeds(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """The inputs of the first probe sizing ({} when they are too big to make)."""
    try:
        return probe_feeds(model, next(iter(_sizings(model, SIZES))))
    except ProbeTooBig:
        return {}
