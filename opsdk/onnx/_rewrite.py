"""Graph rewrites: fuse Conv -> BatchNormalization -> Relu, swap standard ops for opsdk ones.

Every rewrite works on a copy and reports, node by node, what it changed and what it left
alone (with the reason), so a user sees why a chain was not fused. A rewrite happens only
where it pays: a fusion the target's compiler does itself is kept as it is (``native``), and
on the CPU a chain is fused only in the shape classes where FusedConvBnRelu was measured
faster than ONNX Runtime's Conv+BatchNormalization+Relu (:data:`CPU_SLOWER_CLASSES`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import ModelProto, NodeProto, numpy_helper

from ..errors import SpecError
from ..spec import OpSpec
from ._constants import GraphConstants
from ._export import make_node, resolve_spec
from ._model import (
    attribute_value,
    consumers_of,
    has_shape,
    is_standard_domain,
    node_label,
    opset_version,
    tensor_type_of,
    value_types,
)
from ._names import FreshNames
from ._records import RewriteRecord, RewriteResult, ensure_import, replace_nodes
from ._schema import infer_shapes, node_attrs, register_schema

if TYPE_CHECKING:
    from ._pays import ModelTiming

__all__ = [
    "RewriteRecord",
    "RewriteResult",
    "FUSIONS",
    "CPU_SLOWER_CLASSES",
    "cpu_refusal",
    "fold_batch_norm",
    "fuse_conv_bn_relu",
    "replace_ops",
    "rewrite",
]

#: Fusions ``opsdk rewrite --fuse`` knows, by name.
FUSIONS = ("conv-bn-relu",)
FUSED_OP = "com.opsdk::FusedConvBnRelu"


# ------------------------------------------------------------------- when it pays
@dataclass(frozen=True)
class ShapeClass:
    """Convolutions in which FusedConvBnRelu is slower than ONNX Runtime, as measured."""

    name: str
    #: (input channels, output channels, group, kernel height, kernel width) -> in the class
    test: Callable[[int, int, int, int, int], bool]
    measured: str


#: Where the fused kernel loses (FusedConvBnRelu vs ONNX Runtime Conv+BN+Relu with BN folded):
#: a chain in one of these classes is refused on the CPU. The figures are from
#: benchmarks/conv_corpus.py, every Conv geometry of the corpus models (PP-OCR det/rec/cls,
#: YOLOv8n, ResNet-18, MobileNetV3-small; docs/benchmarks.md), medians of 11 interleaved
#: rounds at 1 and 2 threads on a 2-core VM at load average 3 to 5; the grouped class is from
#: benchmarks/conv_classes.py (no corpus model has such a conv). Outside them, on the same
#: run: 1x1 convs 0.35x to 1.44x ONNX Runtime's time at one thread (median 0.97x), 1x1 on
#: planes under 16 positions 0.29x to 1.48x (median 0.56x), dense 3x3 1.03x to 2.14x. The
#: depthwise figures are from the kernel's 16-channel blocks (medians of 7 to 11 interleaved
#: rounds at load 5): 3x3 0.41x to 1.24x at one thread, 5x5 0.69x to 1.29x at one thread
#: (20 corpus shapes; stride 2 0.83x to 1.12x) and 0.48x to 2.1x at two.
CPU_SLOWER_CLASSES: tuple[ShapeClass, ...] = (
    ShapeClass("depthwise convolution with a kernel larger than 5x5",
               lambda c, m, g, kh, kw: g > 1 and g == c and (kh > 5 or kw > 5),
               "no figure: not measured (no corpus model has one); 5x5 was 1.43x to 3.69x "
               "ONNX Runtime's time at one thread before the 16-channel blocks, 0.69x to "
               "1.29x with them"),
    ShapeClass("grouped convolution with more than 2 input channels per group",
               lambda c, m, g, kh, kw: 1 < g < c and c // g > 2,
               "1.06x to 1.81x ONNX Runtime's time (64->64 in 16, 8 and 4 groups, 3x3 at "
               "28x28)"),
    ShapeClass("convolution with fewer than 8 input channels",
               lambda c, m, g, kh, kw: g == 1 and c < 8,
               "0.82x to 1.28x ONNX Runtime's time at one thread and 0.44x to 5.6x at two "
               "with the direct first-layer kernel (3->8, 3->16 3x3 s2, 3->64 7x7 s2 of the "
               "corpus; 2.9x to 5.4x through the GEMM before): about ONNX Runtime's speed, "
               "not faster"),
)


def cpu_refusal(c_in: int, c_out: int, group: int, kernel: tuple[int, int] = (1, 1)
                ) -> str | None:
    """Why fusing a convolution of this shape would make the model slower on the CPU, or None.

    Example:
        >>> cpu_refusal(32, 32, 32, (7, 7))[:52]
        'depthwise convolution with a kernel larger than 5x5:'
        >>> cpu_refusal(32, 32, 32, (5, 5)) is None, cpu_refusal(64, 64, 1) is None
        (True, True)
    """
    for cls in CPU_SLOWER_CLASSES:
        if cls.test(c_in, c_out, group, *kernel):
            return (f"{cls.name}: FusedConvBnRelu measured {cls.measured}; "
                    "ONNX Runtime keeps it")
    return None


#: Why a Relu right after a Conv is no candidate (BatchNormalization was folded at export).
BN_FOLDED = (
    "no BatchNormalization between the Conv and this Relu: the exporter folded it into the "
    "Conv (torch.onnx.export does in eval mode); ONNX Runtime fuses Conv+Relu itself. To keep "
    "BatchNormalization, export with do_constant_folding=False or "
    "training=torch.onnx.TrainingMode.PRESERVE (dynamo=False), or optimize=False (dynamo=True)"
)


# ----------------------------------------------------------------------- folding
def fold_batch_norm(
    w: np.ndarray,
    b: np.ndarray | None,
    scale: np.ndarray,
    bias: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    epsilon: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Fold inference-mode BatchNormalization into the preceding convolution.

    ``BN(conv(x, w) + b) == conv(x, w') + b'`` with ``s = scale / sqrt(var + epsilon)``,
    ``w' = w * s`` (per output channel) and ``b' = (b - mean) * s + bias``. Computed in
    float64, returned in ``w``'s dtype.

    Example:
        >>> w2, b2 = fold_batch_norm(np.ones((1, 1, 1, 1)), None, np.array([2.0]),
        ...                          np.array([1.0]), np.array([0.5]), np.array([3.0]), 1.0)
        >>> float(w2.ravel()[0]), float(b2[0])
        (1.0, 0.5)
    """
    s = scale.astype(np.float64) / np.sqrt(var.astype(np.float64) + float(epsilon))
    w64 = w.astype(np.float64) * s.reshape((-1,) + (1,) * (w.ndim - 1))
    b64 = np.zeros(w.shape[0]) if b is None else b.astype(np.float64)
    b_new = (b64 - mean.astype(np.float64)) * s + bias.astype(np.float64)
    return w64.astype(w.dtype), b_new.astype(w.dtype)


class _Skip(Exception):
    """This match cannot be rewritten; the message says why."""


@dataclass
class _Graph:
    """Lookups over one graph, rebuilt after each pass."""

    model: ModelProto
    producer: dict[str, int]
    consumers: dict[str, list[int]]
    consts: GraphConstants
    outputs: set[str]

    @classmethod
    def of(cls, model: ModelProto) -> _Graph:
        g = model.graph
        producer = {o: i for i, n in enumerate(g.node) for o in n.output if o}
        return cls(
            model,
            producer,
            consumers_of(g),
            GraphConstants(g),
            {o.name for o in g.output},
        )

    def node(self, value: str) -> NodeProto | None:
        idx = self.producer.get(value)
        return None if idx is None else self.model.graph.node[idx]

    def sole_reader(self, value: str, reader: str) -> None:
        """Skip unless ``value`` is read only by the node producing ``reader``."""
        readers = self.consumers.get(value, [])
        if value in self.outputs:
            raise _Skip(f"{value!r} is a graph output")
        if readers != [self.producer[reader]]:
            raise _Skip(f"{value!r} has {len(readers)} readers (fusing needs exactly one)")

    def const(self, value: str, what: str) -> np.ndarray:
        """The constant behind ``value`` (initializer, Constant node, Identity/Cast of one)."""
        array = self.consts.value(value)
        if array is None:
            raise _Skip(
                f"{what} {value!r} is computed at run time (not an initializer, Constant "
                "node, or Identity/Cast of one)"
            )
        return array


# ------------------------------------------------------------------------ fusion
def _conv_attrs(conv: NodeProto) -> dict[str, Any]:
    raw = {a.name: attribute_value(a) for a in conv.attribute}
    auto_pad = raw.pop("auto_pad", "NOTSET")
    raw.pop("kernel_shape", None)
    if auto_pad not in ("NOTSET", "VALID"):
        raise _Skip(f"Conv auto_pad={auto_pad} (write explicit pads to fuse it)")
    attrs = {
        "strides": list(raw.pop("strides", [1, 1])),
        "pads": list(raw.pop("pads", [0, 0, 0, 0])),
        "dilations": list(raw.pop("dilations", [1, 1])),
        "group": int(raw.pop("group", 1)),
    }
    if raw:
        raise _Skip(f"Conv has unsupported attributes {sorted(raw)}")
    if auto_pad == "VALID":
        attrs["pads"] = [0, 0, 0, 0]
    return attrs


def _bn_params(g: _Graph, bn: NodeProto) -> tuple[list[np.ndarray], float]:
    attrs = {a.name: attribute_value(a) for a in bn.attribute}
    if int(attrs.get("training_mode", 0)):
        raise _Skip("BatchNormalization runs in training mode")
    if len([o for o in bn.output if o]) != 1:
        raise _Skip("BatchNormalization has running-statistics outputs")
    if len(bn.input) != 5:
        raise _Skip(f"BatchNormalization has {len(bn.input)} inputs, expected 5")
    names = ("scale", "B", "input_mean", "input_var")
    params = [
        g.const(v, f"BatchNormalization {n}") for v, n in zip(bn.input[1:], names, strict=True)
    ]
    return params, float(attrs.get("epsilon", 1e-5))


class _Refuse(_Skip):
    """A chain that matches but that the target should keep (the message says why)."""

    def __init__(self, why: str, chain: Sequence[NodeProto]) -> None:
        super().__init__(why)
        self.chain = " -> ".join(node_label(n) for n in chain)


def _fuse_one(
    g: _Graph, relu: NodeProto, spec: OpSpec, fresh: FreshNames, native: str | None, force: bool
) -> tuple[NodeProto, list[NodeProto]]:
    bn = g.node(relu.input[0])
    if bn is not None and bn.op_type == "Conv" and is_standard_domain(bn.domain):
        raise _Skip(BN_FOLDED)
    if bn is None or bn.op_type != "BatchNormalization" or not is_standard_domain(bn.domain):
        raise _Skip("no BatchNormalization before this Relu")
    conv = g.node(bn.input[0])
    if conv is None or conv.op_type != "Conv" or not is_standard_domain(conv.domain):
        raise _Skip("no Conv before the BatchNormalization")
    g.sole_reader(conv.output[0], bn.output[0])
    g.sole_reader(bn.output[0], relu.output[0])
    attrs = _conv_attrs(conv)
    w = g.const(conv.input[1], "Conv weight")
    if w.ndim != 4:
        raise _Skip(f"Conv weight has rank {w.ndim}; FusedConvBnRelu is 2-D (rank 4)")
    if w.dtype not in (np.float16, np.float32):
        raise _Skip(f"Conv weight is {w.dtype}; FusedConvBnRelu takes float16 or float32")
    b = g.const(conv.input[2], "Conv bias") if len(conv.input) > 2 and conv.input[2] else None
    (scale, bias, mean, var), eps = _bn_params(g, bn)
    why = native or (None if force else cpu_refusal(
        w.shape[1] * attrs["group"], w.shape[0], attrs["group"], (w.shape[2], w.shape[3])))
    if why:
        raise _Refuse(why, [conv, bn, relu])
    w_new, b_new = fold_batch_norm(w, b, scale, bias, mean, var, eps)
    base = conv.name or relu.output[0]
    w_name, b_name = fresh(f"{base}_w_folded"), fresh(f"{base}_b_folded")
    inits = [numpy_helper.from_array(w_new, w_name), numpy_helper.from_array(b_new, b_name)]
    g.model.graph.initializer.extend(inits)
    name = conv.name or fresh("fused_conv_bn_relu")  # the Conv goes away
    fused = make_node(spec, [conv.input[0], w_name, b_name], [relu.output[0]], attrs, name=name)
    return fused, [conv, bn, relu]


def fuse_conv_bn_relu(
    model: ModelProto,
    *,
    spec: OpSpec | str = FUSED_OP,
    native: str | None = None,
    force: bool = False,
) -> RewriteResult:
    """Replace Conv -> BatchNormalization -> Relu chains by FusedConvBnRelu nodes where it
    pays.

    ``native``: the reason the target's own compiler fuses the chain (e.g.
    ``opsdk.ascend.parser.ATC_NATIVE_FUSIONS["conv-bn-relu"]``): every chain is then kept and
    recorded as ``refused`` with it. Otherwise a chain in one of the
    :data:`CPU_SLOWER_CLASSES` is refused with the measured figure, unless ``force``.

    BatchNormalization is folded into new weight and bias initializers. A chain is fused
    only when its intermediates have one reader each and are no graph outputs, the BN is
    in inference mode and every weight and statistic is a constant: an initializer, a
    ``Constant`` node (as paddle2onnx writes weights), or an ``Identity``/``Cast`` of one.
    Constants the fused chains consumed and nothing else reads are removed.

    Example:
        >>> result = fuse_conv_bn_relu(onnx.load("resnet.onnx"))  # doctest: +SKIP
        >>> result.changed  # doctest: +SKIP
        16
    """
    spec = resolve_spec(spec)
    register_schema(spec)
    out = ModelProto()
    out.CopyFrom(model)
    g = _Graph.of(out)
    fresh = FreshNames(out)
    records: list[RewriteRecord] = []
    replaced: dict[int, NodeProto] = {}
    dropped: set[int] = set()
    for idx, node in enumerate(out.graph.node):
        if node.op_type != "Relu" or not is_standard_domain(node.domain):
            continue
        try:
            fused, old = _fuse_one(g, node, spec, fresh, native, force)
        except _Refuse as why:
            records.append(RewriteRecord(why.chain, "refused", str(why)))
            continue
        except _Skip as why:
            records.append(RewriteRecord(node_label(node, idx), "skipped", str(why)))
            continue
        conv_idx = g.producer[old[0].output[0]]
        replaced[conv_idx] = fused
        dropped |= {g.producer[n.output[0]] for n in old}
        labels = " -> ".join(node_label(n) for n in old)
        because = ("forced" if force else "its shape is in no class measured slower than "
                   "ONNX Runtime's Conv+BN+Relu")
        records.append(RewriteRecord(labels, "fused", f"into {node_label(fused)} ({because})"))
    if replaced:
        replace_nodes(out, replaced, dropped, spec)
    return RewriteResult(out, records)


# ------------------------------------------------------------------- replacement
def _onnx_defaults(node: NodeProto, model: ModelProto) -> dict[str, Any]:
    """Attribute defaults of the node's standard schema at the model's opset."""
    version = opset_version(model, node.domain) or onnx.defs.onnx_opset_version()
    try:
        schema = onnx.defs.get_schema(node.op_type, version, node.domain)
    except onnx.defs.SchemaError:
        return {}
    out = {}
    for name, a in schema.attributes.items():
        if a.default_value.type != onnx.AttributeProto.UNDEFINED:
            out[name] = attribute_value(a.default_value)
    return out


def _check_semantics(spec: OpSpec, model: ModelProto) -> None:
    """Skip when the operator's fallback function (its ONNX equivalent) cannot be built at
    the model's opset: the node's ONNX semantics there are not the operator's (Softmax
    before opset 13 normalises over every axis from ``axis`` on)."""
    if spec.function is None:
        return
    from ._functions import build_function

    try:
        build_function(spec, opset_version(model, "") or onnx.defs.onnx_opset_version())
    except SpecError as e:
        raise _Skip(str(e)) from None


def _replacement(
    node: NodeProto, spec: OpSpec, model: ModelProto, types: dict[str, Any], idx: int,
    fresh: FreshNames,
) -> NodeProto:
    present = [i for i in node.input if i]
    _check_semantics(spec, model)
    n_req = sum(1 for i in spec.inputs if not i.optional)
    if not n_req <= len(node.input) <= len(spec.inputs):
        raise _Skip(f"has {len(present)} inputs, {spec.name} takes {n_req}-{len(spec.inputs)}")
    for inp, value in zip(spec.inputs, node.input, strict=False):
        t = tensor_type_of(types.get(value)) if value else None
        if t is not None and t.dtype not in spec.allowed_dtypes(inp.type):
            allowed = ", ".join(spec.allowed_dtypes(inp.type))
            raise _Skip(f"input {inp.name!r} is {t.dtype}; {spec.name} takes {allowed}")
    probe = onnx.NodeProto()
    probe.CopyFrom(node)
    defaults = _onnx_defaults(node, model)
    _drop_implied(spec, probe, defaults, types)
    given = {a.name for a in node.attribute}
    for a in spec.attrs:
        if a.name not in given and a.name in defaults:
            from ._schema import onnx_attr

            probe.attribute.append(onnx_attr(a, defaults[a.name]))
    try:
        attrs = node_attrs(spec, probe, f"node {node_label(node, idx)}")
    except SpecError as e:
        raise _Skip(str(e)) from None
    given_types = [tensor_type_of(types.get(v)) if v else None for v in node.input]
    if all(t is not None and has_shape(t) for t in given_types if t is not None):
        try:  # the shape function refuses inputs the kernel would (a scale of shape (1,))
            spec.infer(given_types, attrs)
        except SpecError as e:
            raise _Skip(str(e)) from None
    outputs = list(node.output)
    if len(outputs) > len(spec.outputs):
        raise _Skip(f"has {len(outputs)} outputs, {spec.name} produces {len(spec.outputs)}")
    for extra in spec.outputs[len(outputs):]:  # outputs the node has not: left out or unused
        outputs.append("" if extra.optional else fresh(f"{outputs[0]}_{extra.name}_unused"))
    return make_node(spec, list(node.input), outputs, attrs, name=node.name or None)


def _drop_implied(spec: OpSpec, node: NodeProto, defaults: dict[str, Any],
                  types: dict[str, Any]) -> None:
    """Drop the node's attributes the operator does not declare but computes as given: at
    ONNX's default, or an ``axis`` naming the last axis (RMSNormalization's axis=-1 or
    rank-1 for an operator over the last axis). Others stay, and are refused by name."""
    declared = set(spec.attr_map)
    x = tensor_type_of(types.get(node.input[0])) if node.input else None
    rank = len(x.shape) if x is not None and isinstance(x.shape, tuple) else None
    kept = []
    for a in node.attribute:
        value = attribute_value(a)
        implied = a.name not in declared and (
            (a.name in defaults and value == defaults[a.name]) or
            (a.name == "axis" and defaults.get("axis") == -1 and rank is not None
             and isinstance(value, int) and value % max(rank, 1) == rank - 1))
        if implied:
            continue
        if a.name not in declared:
            default = ("the last axis (-1)" if a.name == "axis" else
                       repr(defaults[a.name]) if a.name in defaults else "its absence")
            raise _Skip(f"attribute {a.name}={value!r}: {spec.name} declares no {a.name!r} "
                        f"and computes ONNX's {node.op_type} only at {default}")
        kept.append(a)
    del node.attribute[:]
    node.attribute.extend(kept)


def _replace_gelu_patterns(
    model: ModelProto, spec: OpSpec, types: dict[str, Any]
) -> list[RewriteRecord]:
    """Fold the Erf and Tanh GELU decompositions exporters write at opset <= 19 into one
    ``spec`` node each (:mod:`opsdk.onnx._gelu_match`)."""
    from ._gelu_match import find_gelu

    g = model.graph
    records, replaced, dropped = [], {}, set()
    for match in find_gelu(model):
        t = tensor_type_of(types.get(match.x))
        if t is not None and t.dtype not in spec.allowed_dtypes(spec.inputs[0].type):
            records.append(RewriteRecord(match.label, "skipped", f"GELU ({match.approximate}) "
                                         f"input is {t.dtype}; {spec.name} does not take it"))
            continue
        last = match.nodes[-1]
        name = g.node[last].name or None
        replaced[last] = make_node(spec, [match.x], [match.output],
                                   {"approximate": match.approximate}, name=name)
        dropped |= set(match.nodes)
        detail = (f"the {match.approximate if match.approximate == 'tanh' else 'Erf'} GELU "
                  f"decomposition ({len(match.nodes)} nodes) by {spec.domain}::{spec.name} "
                  f"approximate={match.approximate!r}")
        records.append(RewriteRecord(match.label, "replaced", detail))
    if replaced:
        replace_nodes(model, replaced, dropped, spec)
    return records


def replace_ops(
    model: ModelProto, op_types: Iterable[str], *, extra: Iterable[OpSpec] = (),
    check: bool = True,
) -> RewriteResult:
    """Swap standard nodes for the opsdk operators implementing them (``spec.onnx_op``), and
    fold the decompositions of the operators named instead (:mod:`._fold`; ``check``:
    prove those folds in ONNX Runtime).

    A name is a standard ONNX op type when an operator declares it as its ``onnx_op``,
    otherwise an operator's name (``Name`` or ``domain::Name``).

    Example:
        >>> result = replace_ops(onnx.load("flow.onnx"), ["GridSample"])  # doctest: +SKIP
        >>> result = replace_ops(onnx.load("llama.onnx"), ["RmsNorm"])  # doctest: +SKIP
    """
    from ._ops import by_onnx_op

    extra = list(extra)
    table = by_onnx_op(extra)
    wanted: dict[str, OpSpec] = {}
    named: list[OpSpec] = []
    for op in op_types:
        if op in table:
            wanted[op] = table[op]
            register_schema(table[op])
        else:
            named.append(_operator_named(op, extra))
    if named:
        from ._fold import fold_decompositions

        folded = fold_decompositions(model, named, check=check)
        model, first = folded.model, folded.records
    else:
        first = []
    out = ModelProto()
    out.CopyFrom(model)
    try:
        types = value_types(infer_shapes(out, extra))
    except Exception:  # types only refine the checks; rewrite without them
        types = value_types(out)
    records: list[RewriteRecord] = []
    if "Gelu" in wanted:
        records += _replace_gelu_patterns(out, wanted["Gelu"], types)
    fresh = FreshNames(out)
    for idx, node in enumerate(out.graph.node):
        spec = wanted.get(node.op_type)
        if spec is None or not is_standard_domain(node.domain):
            continue
        try:
            new = _replacement(node, spec, out, types, idx, fresh)
        except _Skip as why:
            records.append(RewriteRecord(node_label(node, idx), "skipped", str(why)))
            continue
        detail = f"by {spec.domain}::{spec.name}"
        records.append(RewriteRecord(node_label(node, idx), "replaced", detail))
        out.graph.node[idx].CopyFrom(new)
        ensure_import(out, spec)
    return RewriteResult(out, first + records)


def _operator_named(name: str, extra: Sequence[OpSpec]) -> OpSpec:
    """The operator ``name`` (or ``domain::name``) names, else a SpecError with the fix."""
    from ._ops import catalog

    domain, _, op = name.rpartition("::")
    found = [s for s in catalog(extra).values()
             if s.name == op and (not domain or s.domain == domain)]
    if len(found) == 1:
        register_schema(found[0])
        return found[0]
    if found:
        names = ", ".join(f"{s.domain}::{s.name}" for s in found)
        raise SpecError(f"--replace {name}: operators in several domains have that name "
                        f"({names}); give one as DOMAIN::NAME")
    if onnx.defs.has(name):
        raise SpecError(f"--replace {name}: no opsdk operator implements ONNX {name} "
                        f"(spec.onnx_op); create one with 'opsdk new {name} --like onnx:{name}'")
    from .._starters import STARTERS

    starters = " | ".join(f"llm:{k}" for k in STARTERS)
    raise SpecError(
        f"--replace {name}: {name} is neither a standard ONNX op nor an opsdk operator's name "
        "(none is found in ./operators or OPSDK_OPERATORS_PATH); give an ONNX op type (e.g. "
        f"RMSNormalization) or create the operator, e.g. 'opsdk new {name} --like "
        f"llm:rms_norm' (starters: {starters}), and run the command where it is found")


#: The node column of the record of the model-level decision.
WHOLE_MODEL = "the whole model"


def rewrite(
    model: ModelProto,
    *,
    fuse: Sequence[str] = (),
    replace: Sequence[str] = (),
    native: Mapping[str, str] | None = None,
    force: bool = False,
    pays: Callable[[ModelProto, ModelProto], ModelTiming] | None = None,
) -> RewriteResult:
    """Apply the named fusions, then the replacements; records are concatenated.

    ``native`` maps a fusion name to the reason the target's compiler does it itself (the
    chains are then kept); ``force`` fuses even where the CPU kernel was measured slower.

    ``pays`` judges the fusions on the whole model: called with the model before and after
    them (e.g. ``functools.partial(opsdk.onnx.time_models, feeds=...)``), it returns their
    :class:`~opsdk.onnx.ModelTiming`; unless that says the fused model is faster
    (:attr:`ModelTiming.pays`), every fusion is undone and recorded ``refused`` with the
    figures. Replacements are what the caller asked for by name and are not judged.

    A graph that is broken (a dangling tensor, a value made twice, a graph output nothing
    makes, a missing opset import, a cycle: :mod:`._structure`) is refused first, as
    :class:`ModelError` naming the node, the tensor and the fix.

    Example:
        >>> rewrite(model, fuse=["conv-bn-relu"], replace=["GridSample"])  # doctest: +SKIP
    """
    from ._structure import check_structure

    check_structure(model, "rewrite")
    records: list[RewriteRecord] = []
    before = model
    for name in fuse:
        if name not in FUSIONS:
            raise SpecError(f"unknown fusion {name!r}; known: {', '.join(FUSIONS)}")
        result = fuse_conv_bn_relu(model, native=(native or {}).get(name), force=force)
        model, records = result.model, records + result.records
    if pays is not None and any(r.action == "fused" for r in records):
        model, records = _judge_whole_model(before, model, records, pays)
    if replace:
        result = replace_ops(model, replace)
        model, records = result.model, records + result.records
    return RewriteResult(model, records)


def _judge_whole_model(
    before: ModelProto,
    fused: ModelProto,
    records: list[RewriteRecord],
    pays: Callable[[ModelProto, ModelProto], ModelTiming],
) -> tuple[ModelProto, list[RewriteRecord]]:
    """Keep the fusions only if the whole model got faster; else undo them, saying why."""
    from ._pays import KEEP_BELOW, timing_text

    timing = pays(before, fused)
    n = sum(1 for r in records if r.action == "fused")
    figures = timing_text(timing)
    if timing.pays:
        return fused, [*records, RewriteRecord(
            WHOLE_MODEL, "measured", f"the {n} fusion(s) pay for the whole model: {figures}")]
    if timing.ratio < 1:
        cause = (f"faster by less than the {1 - KEEP_BELOW:.0%} margin that medians on a "
                 "shared machine can be trusted to")
    else:
        cause = ("slower: each fused node splits ONNX Runtime's part of the graph under "
                 "Session, and the hand-overs cost more than the kernels saved")
    why = (f"the chain is in no class measured slower, but with all {n} fusion(s) the whole "
           f"model was {cause.split(':')[0]}: {figures}")
    undone = [RewriteRecord(r.node, "refused", why) if r.action == "fused" else r
              for r in records]
    kept = ModelProto()
    kept.CopyFrom(before)  # a copy, as every rewrite returns
    return kept, [*undone, RewriteRecord(
        WHOLE_MODEL, "refused",
        f"{n} fusion(s) undone, the fused model was {cause}: {figures}. --force-fuse keeps "
        "them anyway; --input-shape times it on the shape it will run on")]
