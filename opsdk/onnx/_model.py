"""Reading, writing and walking ONNX models, with errors that name the file or the node.

Everything that touches a user's ``.onnx`` file goes through :func:`load_model` and
:func:`save_model`, so a truncated file, a non-ONNX file or an existing output file
always gives one clear message instead of a protobuf traceback.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import onnx
from onnx import AttributeProto, GraphProto, ModelProto, NodeProto, TypeProto

from .._written import OutputExistsError, check_output, write_output
from ..dtypes import onnx_dtype_name, onnx_elem_type
from ..spec import Dim, TensorType
from .errors import ModelError

__all__ = [
    "ModelError",
    "OutputExistsError",
    "STANDARD_DOMAINS",
    "load_model",
    "save_model",
    "node_label",
    "is_standard_domain",
    "opset_version",
    "onnx_type_str",
    "tensor_type_of",
    "make_type_proto",
    "topological_sort",
    "node_input_names",
    "value_types",
    "unique_name",
]

#: Domains whose operators ONNX and ONNX Runtime define themselves.
STANDARD_DOMAINS = frozenset({"", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training"})
_TWO_GB = 2**31


def load_model(source: str | os.PathLike[str] | bytes | ModelProto, *,
               external_data: bool = True) -> ModelProto:
    """Read an ONNX model from a path, bytes or a ModelProto; raise ModelError if unreadable.

    External data next to the file is loaded too, unless ``external_data`` is false.

    Example:
        >>> load_model("missing.onnx")
        Traceback (most recent call last):
        ...
        opsdk.onnx.errors.ModelError: missing.onnx: no such file; pass the path of an .onnx file
    """
    if isinstance(source, ModelProto):
        return source
    if isinstance(source, (bytes, bytearray)):
        return _parse(bytes(source), "<bytes>", None)
    path = Path(source)
    if not path.is_file():
        raise ModelError(f"{path}: {'is a directory' if path.is_dir() else 'no such file'}; "
                         "pass the path of an .onnx file")
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ModelError(f"{path}: cannot read: {e.strerror or e}") from None
    return _parse(data, str(path), path.parent if external_data else None)


def _parse(data: bytes, where: str, base_dir: Path | None) -> ModelProto:
    hint = "the file is truncated or not an ONNX model; re-export it or check the download"
    if not data:
        raise ModelError(f"{where}: the file is empty; {hint}")
    model = ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as e:  # protobuf raises DecodeError or RuntimeError by backend
        raise ModelError(f"{where}: not a readable ONNX model ({e}); {hint}") from None
    if model.ir_version <= 0 or not model.HasField("graph"):
        raise ModelError(f"{where}: parses as protobuf but holds no ONNX graph; {hint}")
    if base_dir is not None and _uses_external_data(model):
        try:
            onnx.external_data_helper.load_external_data_for_model(model, str(base_dir))
        except (OSError, ValueError) as e:
            raise ModelError(f"{where}: cannot load external tensor data: {e}") from None
    return model


def _uses_external_data(model: ModelProto) -> bool:
    return any(
        t.data_location == onnx.TensorProto.EXTERNAL
        for t in onnx.external_data_helper._get_all_tensors(model)
    )


def save_model(model: ModelProto, path: str | os.PathLike[str], *, force: bool = False) -> Path:
    """Write ``model`` through opsdk's one writer (:func:`opsdk._written.write_output`): a
    symlink at ``path`` is refused, an existing file is replaced only with ``force``, and
    the file is recorded in the folder's ``.opsdk-outputs.json``.

    Models over 2 GB are written with external data beside the file (``<name>.data``).

    Example:
        >>> save_model(model, "out.onnx")  # doctest: +SKIP
        PosixPath('out.onnx')
    """
    out = Path(path)
    check_output(out, force)
    if out.parent and not out.parent.is_dir():
        raise ModelError(f"{out}: folder {out.parent} does not exist")
    if model.ByteSize() < _TWO_GB:
        return write_output(out, model.SerializeToString(), force=force)
    import copy
    import tempfile

    big = copy.deepcopy(model)
    with tempfile.TemporaryDirectory(prefix=".opsdk-save-", dir=out.parent) as tmp:
        onnx.save_model(big, str(Path(tmp) / out.name), save_as_external_data=True,
                        location=out.name + ".data")
        data = (Path(tmp) / (out.name + ".data")).read_bytes()
        return write_output(out, (Path(tmp) / out.name).read_bytes(), force=force,
                            also={out.name + ".data": data})


# ------------------------------------------------------------------------- naming
_DATA_FIELDS = ("float_data", "int32_data", "string_data", "int64_data", "double_data",
                "uint64_data")


def tensor_data_problem(t: onnx.TensorProto) -> str | None:
    """Why an initializer holds no usable data (ONNX's checker and ONNX Runtime reject it),
    or None: it must carry its ``prod(dims)`` values in exactly one field (or externally).

    Example:
        >>> import numpy as np
        >>> t = onnx.numpy_helper.from_array(np.ones(4, np.float32), "w")
        >>> tensor_data_problem(t) is None
        True
        >>> t.ClearField("raw_data"); tensor_data_problem(t)
        "initializer 'w' (shape [4]) has no data: 4 values expected, none stored"
    """
    if t.data_location == onnx.TensorProto.EXTERNAL:
        return None
    count = 1
    for d in t.dims:
        count *= d
    stored = ["raw_data"] if t.HasField("raw_data") else []
    stored += [f for f in _DATA_FIELDS if len(getattr(t, f))]
    shape = list(t.dims)
    if count > 0 and not stored:
        return (f"initializer {t.name!r} (shape {shape}) has no data: {count} values expected, "
                "none stored")
    if len(stored) > 1:
        return f"initializer {t.name!r} stores its values in several fields ({', '.join(stored)})"
    return None


def node_label(node: NodeProto, index: int | None = None) -> str:
    """How errors name a node: ``'conv1' (Conv)`` or ``#3 (com.x::MyOp)``.

    Example:
        >>> node_label(onnx.helper.make_node("Relu", ["x"], ["y"], name="r"))
        "'r' (Relu)"
    """
    op = f"{node.domain}::{node.op_type}" if node.domain not in ("", "ai.onnx") else node.op_type
    if node.name:
        return f"{node.name!r} ({op})"
    if index is not None:
        return f"#{index} ({op})"
    return f"producing {', '.join(repr(o) for o in node.output if o) or '?'} ({op})"


def is_standard_domain(domain: str) -> bool:
    """True for the ONNX-defined domains ('' / ai.onnx / ai.onnx.ml / training)."""
    return domain in STANDARD_DOMAINS


def opset_version(model: ModelProto, domain: str) -> int | None:
    """The opset version ``model`` imports for ``domain`` ('' and 'ai.onnx' are the same)."""
    wanted = {"", "ai.onnx"} if domain in ("", "ai.onnx") else {domain}
    for imp in model.opset_import:
        if imp.domain in wanted:
            return int(imp.version)
    return None


def unique_name(base: str, taken: set[str]) -> str:
    """``base`` or ``base_1``, ``base_2``... not in ``taken``; the result is added to it."""
    name, i = base, 0
    while name in taken:
        i += 1
        name = f"{base}_{i}"
    taken.add(name)
    return name


# -------------------------------------------------------------------------- types
def onnx_type_str(dtype: str) -> str:
    """ONNX's spelling of an opsdk dtype: float32 -> 'tensor(float)'.

    Example:
        >>> onnx_type_str("float32"), onnx_type_str("float16")
        ('tensor(float)', 'tensor(float16)')
    """
    name = onnx.TensorProto.DataType.Name(onnx_elem_type(dtype)).lower()
    return f"tensor({name})"


def tensor_type_of(tp: TypeProto | None) -> TensorType | None:
    """A TensorType from a TypeProto, or None if it is no tensor of an opsdk dtype.

    Unknown dims become None, symbolic dims their name. A tensor of unknown rank comes
    back with an empty placeholder shape that :func:`has_shape` reports as unknown.
    """
    if tp is None or not tp.HasField("tensor_type"):
        return None
    tt = tp.tensor_type
    try:
        dtype = onnx_dtype_name(tt.elem_type)
    except ValueError:
        return None
    if not tt.HasField("shape"):
        return _UnknownRank((), dtype)
    dims: list[Dim] = []
    for d in tt.shape.dim:
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        elif d.HasField("dim_param") and d.dim_param:
            dims.append(d.dim_param)
        else:
            dims.append(None)
    return TensorType(tuple(dims), dtype)


class _UnknownRank(TensorType):
    """A TensorType whose rank is unknown (its shape field is a placeholder)."""


def has_shape(t: TensorType | None) -> bool:
    """True when ``t`` is known with a known rank."""
    return t is not None and not isinstance(t, _UnknownRank)


def make_type_proto(dtype: str, shape: Sequence[Dim] | None) -> TypeProto:
    """A tensor TypeProto; int dims are values, str dims symbolic, None dims unknown."""
    tp = TypeProto()
    tp.tensor_type.elem_type = onnx_elem_type(dtype)
    if shape is not None:
        tp.tensor_type.shape.SetInParent()
        for d in shape:
            dim = tp.tensor_type.shape.dim.add()
            if isinstance(d, int):
                dim.dim_value = d
            elif isinstance(d, str):
                dim.dim_param = d
    return tp


def value_types(model: ModelProto) -> dict[str, TypeProto]:
    """Types of every named value: inputs, outputs, value_info and initializers."""
    g = model.graph
    types: dict[str, TypeProto] = {}
    for vi in list(g.value_info) + list(g.output) + list(g.input):
        if vi.type.WhichOneof("value") is not None:
            types[vi.name] = vi.type
    for init in g.initializer:
        types.setdefault(init.name, make_type_proto_from_tensor(init))
    return types


def make_type_proto_from_tensor(t: onnx.TensorProto) -> TypeProto:
    """The TypeProto of an initializer."""
    tp = TypeProto()
    tp.tensor_type.elem_type = t.data_type
    tp.tensor_type.shape.SetInParent()
    for d in t.dims:
        tp.tensor_type.shape.dim.add().dim_value = d
    return tp


# -------------------------------------------------------------------------- graphs
def _subgraphs(node: NodeProto) -> Iterator[GraphProto]:
    for a in node.attribute:
        if a.type == AttributeProto.GRAPH:
            yield a.g
        elif a.type == AttributeProto.GRAPHS:
            yield from a.graphs


def _outer_refs(graph: GraphProto) -> set[str]:
    """Names a subgraph reads from enclosing scopes."""
    defined = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    used: set[str] = set()
    for n in graph.node:
        used.update(n.input)
        for sg in _subgraphs(n):
            used |= _outer_refs(sg)
        defined.update(n.output)
    used.update(o.name for o in graph.output)
    return {u for u in used if u and u not in defined}


def node_input_names(node: NodeProto) -> list[str]:
    """The node's inputs plus names its subgraphs (If/Loop/Scan bodies) capture."""
    names = [i for i in node.input if i]
    for sg in _subgraphs(node):
        names.extend(sorted(_outer_refs(sg)))
    return names


def has_subgraphs(node: NodeProto) -> bool:
    """True for control-flow nodes (If, Loop, Scan) carrying graphs."""
    return any(True for _ in _subgraphs(node))


def topological_sort(graph: GraphProto) -> list[int]:
    """Indices of ``graph.node`` in a topological order (stable: keeps file order).

    Raises ModelError naming the node when an input is never produced or on a cycle.
    """
    available = {i.name for i in graph.input} | {t.name for t in graph.initializer} | {""}
    available |= {t.values.name for t in graph.sparse_initializer}
    producers: dict[str, int] = {}
    for idx, n in enumerate(graph.node):
        for o in n.output:
            if o:
                producers[o] = idx
    waiting: dict[int, set[str]] = {}
    consumers: dict[str, list[int]] = {}
    ready: list[int] = []
    for idx, n in enumerate(graph.node):
        need = {i for i in node_input_names(n) if i not in available}
        for name in need:
            if name not in producers:
                raise ModelError(
                    f"node {node_label(n, idx)} reads {name!r}, which no node, graph input "
                    "or initializer provides"
                )
            consumers.setdefault(name, []).append(idx)
        waiting[idx] = need
        if not need:
            ready.append(idx)
    return _kahn(graph, ready, waiting, consumers)


def _kahn(
    graph: GraphProto,
    ready: list[int],
    waiting: dict[int, set[str]],
    consumers: dict[str, list[int]],
) -> list[int]:
    import heapq

    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        idx = heapq.heappop(ready)
        order.append(idx)
        for o in graph.node[idx].output:
            for c in consumers.get(o, ()):
                w = waiting[c]
                if o in w:
                    w.discard(o)
                    if not w:
                        heapq.heappush(ready, c)
    if len(order) != len(graph.node):
        stuck = next(i for i in range(len(graph.node)) if waiting[i])
        raise ModelError(
            f"the graph has a cycle through node {node_label(graph.node[stuck], stuck)}"
        )
    return order


def consumers_of(graph: GraphProto) -> dict[str, list[int]]:
    """For each value name, the indices of nodes reading it (subgraph captures included)."""
    out: dict[str, list[int]] = {}
    for idx, n in enumerate(graph.node):
        for name in dict.fromkeys(node_input_names(n)):
            out.setdefault(name, []).append(idx)
    return out


def attribute_value(attr: AttributeProto) -> Any:
    """A Python value of an attribute (strings decoded)."""
    value = onnx.helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [v.decode("utf-8", errors="replace") for v in value]
    return value


def iter_all_nodes(graph: GraphProto) -> Iterable[NodeProto]:
    """Every node of ``graph`` and of its subgraphs, depth first."""
    for n in graph.node:
        yield n
        for sg in _subgraphs(n):
            yield from iter_all_nodes(sg)


def iter_nested_nodes(graph: GraphProto) -> Iterable[NodeProto]:
    """Every node inside the subgraphs of ``graph``'s nodes (not the top level)."""
    for n in graph.node:
        for sg in _subgraphs(n):
            yield from iter_all_nodes(sg)
