"""The graph executor: standard ops in ONNX Runtime, opsdk custom nodes in their kernels.

The graph is cut into stages (as-soon-as-possible levels): every maximal group of
standard nodes whose inputs are ready becomes one ONNX Runtime ``InferenceSession``
(built once), and every custom node runs in its opsdk kernel in-process. Values pass
between them as NumPy arrays: ONNX Runtime reads NumPy inputs and returns outputs backed by
its own buffers without copying, and the kernels read and write NumPy memory directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import ModelProto, NodeProto, TypeProto

from ..dtypes import dtype_name, native_order, to_numpy
from ..errors import OpsdkError, SpecError
from ..spec import OpSpec, TensorType
from ._buffers import BufferPool, output_layout
from ._constants import GraphConstants
from ._model import (
    ModelError,
    consumers_of,
    has_subgraphs,
    is_standard_domain,
    load_model,
    node_input_names,
    node_label,
    topological_sort,
    value_types,
)
from ._schema import check_custom_node, register_for_model

__all__ = ["Session", "IOInfo", "StepInfo", "ReferenceKernel"]

#: Domains whose nodes ONNX Runtime runs itself although they are not ONNX-standard.
ORT_DOMAINS = frozenset({"com.microsoft", "com.microsoft.nchwc", "ai.onnx.contrib"})


@dataclass(frozen=True)
class IOInfo:
    """A model input or output, like ``onnxruntime.NodeArg``: name, type, shape."""

    name: str
    type: str
    shape: list[int | str | None]


@dataclass(frozen=True)
class StepInfo:
    """One stage of the plan: an ONNX Runtime part or one opsdk custom node."""

    kind: str  # "onnxruntime" or "opsdk"
    nodes: tuple[str, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


@dataclass
class _OrtStep:
    info: StepInfo
    session: Any
    outputs: list[str]
    inputs: list[str]


@dataclass
class _CustomStep:
    info: StepInfo
    kernel: Any
    attrs: dict[str, Any]
    inputs: list[str]
    outputs: list[str]
    release: list[str] = field(default_factory=list)
    # (output index, input index): the output may be written over that input's buffer
    inplace: list[tuple[int, int]] = field(default_factory=list)
    inplace_ok: bool | None = None  # None: not yet verified on this kernel
    layouts: dict[Any, Any] = field(default_factory=dict)  # input signature -> outputs
    # a compiled operator: called like op(*inputs, **attrs), its C++ fast path, with
    # outputs from the process-wide output pool (see opsdk.runtime.cpu.output_pool_stats)
    direct: bool = False


class ReferenceKernel:
    """Runs a spec's NumPy reference with the executor interface (no compiler needed).

    Example:
        >>> k = ReferenceKernel(spec)  # doctest: +SKIP
        >>> k.run([x], {"alpha": 0.5})  # doctest: +SKIP
    """

    def __init__(self, spec: OpSpec) -> None:
        if spec.reference is None:
            raise SpecError(f"{spec.name}: no NumPy reference (reference.py) to run")
        self.spec = spec

    def run(
        self,
        inputs: Sequence[np.ndarray | None],
        attrs: Mapping[str, Any] | None = None,
        outputs: list[np.ndarray] | None = None,
    ) -> list[np.ndarray]:
        """Call the reference; results are cast to the spec's output dtypes."""
        resolved = self.spec.resolve_attrs(dict(attrs or {}))
        args = list(inputs)
        while args and args[-1] is None:
            args.pop()
        result = self.spec.reference(*args, **resolved)  # type: ignore[misc]
        results = [result] if isinstance(result, np.ndarray) else list(result)
        types = self.spec.infer(
            [TensorType(a.shape, dtype_name(a.dtype)) if a is not None else None for a in inputs],
            resolved,
        )
        arrays = [
            np.asarray(r).astype(to_numpy(t.dtype), copy=False)
            for r, t in zip(results, types, strict=True)
        ]
        if outputs is None:
            return arrays
        for buf, arr in zip(outputs, arrays, strict=True):
            buf[...] = arr
        return list(outputs)


class Session:
    """Run an ONNX model holding opsdk custom nodes on the CPU.

    Same calling convention as ``onnxruntime.InferenceSession``.

    Args:
        model: a path, bytes or ModelProto.
        kernels: overrides, ``{"domain::Op" or "Op": executor}``; an executor has
            ``run(inputs, attrs, outputs=None) -> list[np.ndarray]`` and a ``spec``.
            Other custom nodes use :func:`opsdk.load`.
        providers: ONNX Runtime execution providers (default CPU).
        sess_options: ``onnxruntime.SessionOptions`` for every ONNX Runtime part.
        reference: run custom nodes with their NumPy references instead of the compiled
            kernels (slow; for checking graphs without a compiler).
        inplace: let an elementwise custom node write its result over an input buffer that
            an earlier part produced and nothing else reads (saves memory traffic). Before
            first use, each such node is checked: in place and out of place must give the
            same result on random inputs of the real shapes, else it never runs in place.
        threads: intra-op threads of every ONNX Runtime part and of the opsdk kernels
            (a process-wide setting of each kernel module). None keeps both defaults; 1
            keeps all work on the calling thread, for several model instances per host.

    Example:
        >>> sess = Session("model_with_custom_op.onnx")  # doctest: +SKIP
        >>> [y] = sess.run(None, {"x": x})  # doctest: +SKIP
    """

    def __init__(
        self,
        model: Any,
        *,
        kernels: Mapping[str, Any] | None = None,
        providers: Sequence[Any] | None = None,
        sess_options: Any = None,
        reference: bool = False,
        threads: int | None = None,
        inplace: bool = True,
    ) -> None:
        self._model = load_model(model)
        self._reference = reference
        self._threads = threads
        self._inplace = inplace
        self._providers = list(providers or ["CPUExecutionProvider"])
        self._options = sess_options
        self._kernels = dict(kernels or {})
        extra = [
            k.spec for k in self._kernels.values() if isinstance(getattr(k, "spec", None), OpSpec)
        ]
        self._specs = register_for_model(self._model, extra)
        self._attrs = {
            idx: check_custom_node(self._specs[(n.domain, n.op_type)], n, self._model, idx)
            for idx, n in enumerate(self._model.graph.node)
            if (n.domain, n.op_type) in self._specs
        }
        self._types = _infer_types(self._model)
        g = self._model.graph
        inits = {t.name for t in g.initializer}
        self._inputs = [i for i in g.input if i.name not in inits]
        self._output_names = [o.name for o in g.output]
        self._output_set = frozenset(self._output_names)
        self._input_set = frozenset(vi.name for vi in self._inputs)
        self._consts: dict[str, np.ndarray] = {
            t.name: onnx.numpy_helper.to_array(t)
            for t in g.initializer
            if t.name in self._output_names
        }
        self._steps: list[_OrtStep | _CustomStep] = []
        # values of folded Constant nodes (_fold_constants): initializers of the parts
        self._folded: dict[str, np.ndarray] = {}
        self._pool = BufferPool()
        self._plan()

    @classmethod
    def for_op(
        cls,
        op: OpSpec | str,
        *,
        attrs: Mapping[str, Any] | None = None,
        inputs: Sequence[np.ndarray | None] = (),
        **kwargs: Any,
    ) -> Session:
        """A Session over a single-node model of ``op``, typed like ``inputs``.

        Dims are symbolic, so one session serves every shape of the same ranks and dtypes.
        Feed it with the spec's input names: ``sess.run(None, {"x": x})``.

        Example:
            >>> sess = Session.for_op("ThresholdedRelu", attrs={"alpha": 0.5},
            ...                       inputs=[np.zeros((2, 3), np.float32)])  # doctest: +SKIP
        """
        from ._export import export_model, resolve_spec

        spec = resolve_spec(op)
        shapes: dict[str, tuple[Any, ...]] = {}
        dtypes: dict[str, str] = {}
        for decl, arr in zip(spec.inputs, inputs, strict=False):
            if arr is not None:
                shapes[decl.name] = tuple(f"{decl.name}_d{k}" for k in range(np.ndim(arr)))
                dtypes[decl.name] = dtype_name(np.asarray(arr).dtype)
        model = export_model(spec, shapes=shapes, dtype=dtypes, attrs=attrs)
        return cls(model, **kwargs)

    # ----------------------------------------------------------------- planning
    def _is_custom(self, node: NodeProto, idx: int) -> bool:
        if is_standard_domain(node.domain) or node.domain in ORT_DOMAINS:
            return False
        key = (node.domain, node.op_type)
        if key in self._specs:
            return True
        if any((f.domain, f.name) == key for f in self._model.functions):
            return False  # ONNX Runtime inlines the model-local function
        raise SpecError(
            f"node {node_label(node, idx)}: no opsdk operator {node.domain}::{node.op_type} "
            "is registered and the model carries no function for it; create it with "
            f"'opsdk new {node.op_type}', add its folder to OPSDK_OPERATORS_PATH, or pass "
            "kernels={...}"
        )

    def _plan(self) -> None:
        g = self._model.graph
        order = topological_sort(g)
        custom = {idx for idx in order if self._is_custom(g.node[idx], idx)}
        self._mixed = bool(custom)
        for idx in order:
            if idx not in custom and has_subgraphs(g.node[idx]):
                _reject_nested_custom(g.node[idx], idx, self._specs)
        stage = _stages(g, order, custom)
        last = max(stage.values(), default=0)
        consumers = consumers_of(g)
        folded = self._fold_constants(order, custom, consumers)
        for k in range(last + 1):
            ort_nodes = [i for i in order if i not in custom and i not in folded and stage[i] == k]
            if ort_nodes:
                step = self._ort_step(ort_nodes, consumers)
                if step.outputs:  # a part nobody reads is dead code: skip it
                    self._steps.append(step)
            for i in order:
                if i in custom and stage[i] == k + 1:
                    self._steps.append(self._custom_step(i))
        self._set_releases()
        if self._inplace:
            self._set_inplace(consumers)
        self._folded = {}  # in the parts' sessions now; the kernels' are in self._consts

    def _fold_constants(
        self, order: list[int], custom: set[int], consumers: Mapping[str, list[int]]
    ) -> set[int]:
        """Constant nodes (and Identity/Cast of constants), as paddle2onnx writes weights:
        resolved once here, handed to the kernels and written into every ONNX Runtime part
        that reads them as initializers, instead of being computed by the first part on every
        run and fed to the later ones. A weight that arrives as a feed is no constant to ONNX
        Runtime: it cannot fold BatchNormalization into the Conv, prepack the weights or
        convert the Conv to its NCHWc layout (PP-OCR v2.0 cls with its Conv+BN+Relu chains
        fused: the part after the last fused node took 3.26 ms with its weights fed, against
        1.78 ms for the whole original model; docs/onnx.md)."""
        g = self._model.graph
        consts = GraphConstants(g)
        folded: set[int] = set()
        if not custom:  # one ONNX Runtime session of the model as it is
            return folded
        for idx in order:
            node = g.node[idx]
            if node.op_type not in ("Constant", "Identity", "Cast") or idx in custom:
                continue
            outs = [o for o in node.output if o]
            if not is_standard_domain(node.domain) or any(
                o in self._output_set or not consts.is_constant(o) for o in outs
            ):
                continue
            values = {o: consts.value(o) for o in outs}
            if not any(consumers.get(o) for o in outs) or any(
                v is None for v in values.values()
            ):
                continue
            folded.add(idx)
            for o, value in values.items():
                # asarray keeps a 0-d value 0-d (ascontiguousarray would make it 1-d: a
                # Gather index turned into a list changes the rank of everything after it)
                self._folded[o] = np.asarray(value, order="C")
                if any(r in custom for r in consumers.get(o, ())):
                    self._consts[o] = self._folded[o]
        return folded

    def _set_inplace(self, consumers: Mapping[str, list[int]]) -> None:
        """Pair elementwise custom outputs with inputs whose buffers they may reuse."""
        produced = {o for s in self._steps for o in s.outputs}
        graph_io = set(self._output_names) | {vi.name for vi in self._inputs}
        for step in self._steps:
            if not isinstance(step, _CustomStep):
                continue
            spec = getattr(step.kernel, "spec", None)
            if not isinstance(spec, OpSpec) or not spec.elementwise:
                continue
            free = [
                i
                for i, v in enumerate(step.inputs)
                if v in produced and v not in graph_io and len(consumers.get(v, ())) == 1
            ]
            for j, out in enumerate(spec.outputs):
                match = next((i for i in free if spec.inputs[i].type == out.type), None)
                if match is not None:
                    step.inplace.append((j, match))  # in output order
                    free.remove(match)

    def _ort_step(self, idxs: list[int], consumers: Mapping[str, list[int]]) -> _OrtStep:
        g = self._model.graph
        nodes = [g.node[i] for i in idxs]
        produced = [o for n in nodes for o in n.output if o]
        produced_set = set(produced)
        inits = {t.name: t for t in g.initializer}
        needed = list(dict.fromkeys(v for n in nodes for v in node_input_names(n)))
        # folded constants (see _fold_constants) are the part's initializers, not feeds
        feeds = [v for v in needed
                 if v not in produced_set and v not in inits and v not in self._folded]
        graph_out = set(self._output_names)
        mine = set(idxs)
        outs = [
            o
            for o in produced
            if o in graph_out or any(c not in mine for c in consumers.get(o, ()))
        ]
        init_list = [inits[v] for v in needed if v in inits]
        init_list += [onnx.numpy_helper.from_array(self._folded[v], v)
                      for v in needed if v in self._folded and v not in produced_set]
        sub = _sub_model(self._model, nodes, feeds, outs, init_list, self._types)
        info = StepInfo(
            "onnxruntime", tuple(node_label(g.node[i], i) for i in idxs), tuple(feeds), tuple(outs)
        )
        return _OrtStep(info, self._ort_session(sub, info), outs, feeds)

    def _ort_session(self, sub: ModelProto, info: StepInfo) -> Any:
        import onnxruntime as ort

        opts = self._options
        if opts is None:
            opts = ort.SessionOptions()
            opts.log_severity_level = 3
            # Between opsdk kernels, ORT's threads poll while a part runs (between its
            # nodes) and stop when its run() returns, instead of polling ~40 ms after it as
            # by default, which took the cores from the opsdk kernels. The kernels' own pool
            # polls briefly after a kernel and yields to ORT's woken threads. Measured
            # alternatives (docs/benchmarks.md, Graph executor): parking the kernel threads
            # before each part, ORT threads that never poll, one global ORT pool. A model
            # without opsdk nodes keeps ORT's defaults: the stop made a whole ResNet-18 run
            # 1.9x slower (39.6 ms against 20.7 ms at 224x224, 2 threads).
            if self._mixed:
                opts.add_session_config_entry("session.intra_op.allow_spinning", "1")
                opts.add_session_config_entry("session.force_spinning_stop", "1")
            if self._threads is not None:
                opts.intra_op_num_threads = self._threads
        try:
            return ort.InferenceSession(
                sub.SerializeToString(), sess_options=opts, providers=self._providers
            )
        except Exception as e:
            raise ModelError(
                f"ONNX Runtime cannot load the part made of {', '.join(info.nodes[:5])}"
                f"{' ...' if len(info.nodes) > 5 else ''}: {e}"
            ) from None

    def _custom_step(self, idx: int) -> _CustomStep:
        g = self._model.graph
        node = g.node[idx]
        spec = self._specs[(node.domain, node.op_type)]
        attrs = self._attrs[idx]
        inits = {t.name: t for t in g.initializer}
        for v in node.input:
            if v in inits and v not in self._consts:
                self._consts[v] = onnx.numpy_helper.to_array(inits[v])
        label = node_label(node, idx)
        info = StepInfo("opsdk", (label,), tuple(v for v in node.input if v), tuple(node.output))
        kernel = self._kernel(spec)
        if self._threads is not None and hasattr(kernel, "set_num_threads"):
            kernel.set_num_threads(self._threads)
        from ..runtime.cpu import Operator

        # optional outputs the node leaves out are computed and dropped (name "")
        outputs = list(node.output) + [""] * (len(spec.outputs) - len(node.output))
        return _CustomStep(info, kernel, attrs, list(node.input), outputs,
                           direct=isinstance(kernel, Operator))

    def _kernel(self, spec: OpSpec) -> Any:
        for key in (f"{spec.domain}::{spec.name}", spec.name):
            if key in self._kernels:
                return self._kernels[key]
        if self._reference:
            return ReferenceKernel(spec)
        from ._ops import load_kernel

        return load_kernel(spec)

    def _set_releases(self) -> None:
        """Mark, for custom steps, values no later step reads (freed early)."""
        keep = set(self._output_names) | set(self._consts)
        later: set[str] = set()
        for step in reversed(self._steps):
            if isinstance(step, _CustomStep):
                step.release = [v for v in step.inputs if v and v not in later and v not in keep]
            later.update(step.inputs)

    # -------------------------------------------------------------------- public
    @property
    def steps(self) -> list[StepInfo]:
        """The execution plan, in order (for inspection and tests)."""
        return [s.info for s in self._steps]

    def get_inputs(self) -> list[IOInfo]:
        """The model inputs (initializers excluded), like ``InferenceSession.get_inputs``."""
        return [_io_info(vi.name, vi.type) for vi in self._inputs]

    def get_outputs(self) -> list[IOInfo]:
        """The model outputs with their inferred types."""
        return [_io_info(n, self._types.get(n)) for n in self._output_names]

    def run(
        self,
        output_names: Sequence[str] | None,
        input_feed: Mapping[str, Any],
        run_options: Any = None,
    ) -> list[np.ndarray]:
        """Run the model; returns the requested outputs (all when ``output_names`` is None).

        Example:
            >>> y, = sess.run(["y"], {"x": np.ones((2, 3), np.float32)})  # doctest: +SKIP
        """
        wanted = list(output_names) if output_names else list(self._output_names)
        env = self._feeds(input_feed, wanted)
        for step in self._steps:
            if isinstance(step, _OrtStep):
                feeds = {v: env[v] for v in step.inputs}
                values = step.session.run(step.outputs, feeds, run_options)
                env.update(zip(step.outputs, values, strict=True))
            else:
                self._run_custom(step, env)
        return [env[n] for n in wanted]

    def _feeds(self, input_feed: Mapping[str, Any], wanted: Iterable[str]) -> dict[str, Any]:
        known = self._input_set
        if len(input_feed) != len(known) or not known.issuperset(input_feed):
            missing = [n for n in known if n not in input_feed]
            extra = [n for n in input_feed if n not in known]
            expected = ", ".join(f"{i.name} {i.type} {i.shape}" for i in self.get_inputs())
            what = f"missing input(s) {missing}" if missing else f"unknown input(s) {extra}"
            raise ModelError(f"Session.run: {what}; the model takes: {expected}")
        unknown = [n for n in wanted if n not in self._output_set]
        if unknown:
            raise ModelError(
                f"Session.run: unknown output(s) {unknown}; outputs: {self._output_names}"
            )
        env: dict[str, Any] = dict(self._consts)
        for k, v in input_feed.items():
            env[k] = native_order(v if isinstance(v, np.ndarray) else np.asarray(v))
        return env

    def _run_custom(self, step: _CustomStep, env: dict[str, Any]) -> None:
        arrays = [env[v] if v else None for v in step.inputs]
        try:
            dest = _reuse(step, arrays)
            if dest is None and step.direct:
                while arrays and arrays[-1] is None:  # optional inputs left out
                    arrays.pop()
                out = step.kernel(*arrays, **step.attrs)
                outs = list(out) if isinstance(out, tuple) else [out]
            else:
                if dest is None:
                    dest = self._destinations(step, arrays)
                outs = step.kernel.run(arrays, step.attrs, dest)
        except OpsdkError as e:
            raise type(e)(f"{e} -- while running node {step.info.nodes[0]}") from e
        env.update(zip(step.outputs, outs, strict=True))
        env.pop("", None)  # an optional output the node leaves out
        for v in step.release:
            env.pop(v, None)

    def _destinations(self, step: _CustomStep, arrays: list[Any]) -> list[np.ndarray] | None:
        """Pooled output buffers, laid out by the spec's inference (cached per signature)."""
        spec = getattr(step.kernel, "spec", None)
        if not isinstance(spec, OpSpec):
            return None
        key = tuple(None if a is None else (a.shape, a.dtype.str) for a in arrays)
        layout = step.layouts.get(key)
        if layout is None:
            if len(step.layouts) > 64:
                step.layouts.clear()
            layout = step.layouts[key] = output_layout(spec, arrays, step.attrs) or []
        if not layout:
            return None
        return [self._pool.take(shape, dtype) for shape, dtype in layout]


# ---------------------------------------------------------------------- helpers
def _reuse(step: _CustomStep, arrays: list[Any]) -> list[np.ndarray] | None:
    """Output buffers for an elementwise step: its freed inputs, when shapes allow."""
    if not step.inplace or len(step.inplace) != len(step.outputs) or step.inplace_ok is False:
        return None
    shapes = {a.shape for a in arrays if a is not None}
    shape = shapes.pop() if len(shapes) == 1 else np.broadcast_shapes(*shapes)
    outs: list[np.ndarray] = [arrays[i] for _, i in step.inplace]
    for buf in outs:
        if buf.shape != shape or not buf.flags.c_contiguous or not buf.flags.writeable:
            return None
    if step.inplace_ok is None:
        step.inplace_ok = _inplace_agrees(step, arrays)
        if not step.inplace_ok:
            return None
    return outs


def _inplace_agrees(step: _CustomStep, arrays: list[Any]) -> bool:
    """Does the kernel give the same result in place as out of place (random inputs)?"""
    rng = np.random.default_rng(0)

    def like(a: np.ndarray | None) -> np.ndarray | None:
        if a is None:
            return None
        if a.dtype.kind in "iu":
            return rng.integers(-100, 100, a.shape).astype(a.dtype)
        if a.dtype.kind == "b":
            return rng.random(a.shape) < 0.5
        return rng.standard_normal(a.shape).astype(a.dtype)

    probe = [like(a) for a in arrays]
    try:
        expected = step.kernel.run([None if a is None else a.copy() for a in probe], step.attrs)
        outs = [probe[i] for _, i in step.inplace]
        got = step.kernel.run(probe, step.attrs, outs)
    except Exception:  # a kernel that refuses aliasing: run it out of place
        return False
    return all(
        np.array_equal(np.asarray(g), np.asarray(e), equal_nan=np.asarray(e).dtype.kind == "f")
        for g, e in zip(got, expected, strict=True)
    )


def _infer_types(model: ModelProto) -> dict[str, TypeProto]:
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except SpecError:
        raise
    except Exception as e:
        raise ModelError(f"ONNX shape inference failed on the model: {e}") from None
    return value_types(inferred)


def _stages(graph: onnx.GraphProto, order: list[int], custom: set[int]) -> dict[int, int]:
    """ASAP stages: standard node -> stage of its ORT part; custom node -> stage >= 1.

    Standard nodes of stage k run in ORT part k; custom nodes of stage k run after part
    k-1 and before part k.
    """
    value_stage: dict[str, int] = {}
    stage: dict[int, int] = {}
    for idx in order:
        node = graph.node[idx]
        base = max((value_stage.get(v, 0) for v in node_input_names(node)), default=0)
        stage[idx] = base + 1 if idx in custom else base
        for o in node.output:
            value_stage[o] = stage[idx]
    return stage


def _reject_nested_custom(node: NodeProto, idx: int, specs: Mapping[Any, OpSpec]) -> None:
    from ._model import iter_all_nodes

    for attr in node.attribute:
        for sg in ([attr.g] if attr.HasField("g") else list(attr.graphs)):
            for inner in iter_all_nodes(sg):
                if (inner.domain, inner.op_type) in specs:
                    raise SpecError(
                        f"node {node_label(node, idx)}: its subgraph holds custom node "
                        f"{node_label(inner)}; Session runs custom nodes only in the main "
                        "graph. Embed the fallback function (opsdk export --with-function)"
                    )


def _sub_model(
    model: ModelProto,
    nodes: list[NodeProto],
    feeds: list[str],
    outs: list[str],
    inits: list[onnx.TensorProto],
    types: Mapping[str, TypeProto],
) -> ModelProto:
    graph_inputs = {vi.name: vi for vi in model.graph.input}

    def vi(name: str, required: bool) -> onnx.ValueInfoProto:
        if name in graph_inputs:
            return graph_inputs[name]
        v = onnx.ValueInfoProto(name=name)
        if name in types:
            v.type.CopyFrom(types[name])
        elif required:
            raise ModelError(
                f"cannot tell the type of {name!r}, which an ONNX Runtime part reads; "
                "add a value_info for it or make shape inference reach it"
            )
        return v

    graph = onnx.helper.make_graph(
        nodes,
        "opsdk_part",
        [vi(n, True) for n in feeds],
        [vi(n, False) for n in outs],
        initializer=inits,
    )
    sub = onnx.helper.make_model(
        graph, opset_imports=list(model.opset_import), ir_version=model.ir_version
    )
    sub.functions.extend(model.functions)
    return sub


def _io_info(name: str, tp: TypeProto | None) -> IOInfo:
    if tp is None or not tp.HasField("tensor_type"):
        return IOInfo(name, "unknown", [])
    tt = tp.tensor_type
    type_name = onnx.TensorProto.DataType.Name(tt.elem_type).lower()
    shape: list[int | str | None] = []
    for d in tt.shape.dim:
        shape.append(
            int(d.dim_value) if d.HasField("dim_value") else (d.dim_param or None)
        )
    return IOInfo(name, f"tensor({type_name})", shape)
