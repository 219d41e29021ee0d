"""Which dtype each node of a model runs in under an ATC precision setting.

The model's float tensors are float32 (a float16 model has nothing to lower). Per node, in
graph order (ONNX nodes are topologically sorted), after CANN's ATC documentation of
``--precision_mode`` / ``--precision_mode_v2``, ``--keep_dtype`` and ``--modify_mixlist``:

* ``force_fp16``: float16 when the op's AI Core kernel takes it;
* ``allow_fp32_to_fp16`` (``allow_fp32_to_bf16``): cube ops float16 (bfloat16); vector ops
  keep float32 when their kernel takes it, else float16;
* ``must_keep_origin_dtype``: float32 (an op without a float32 AI Core kernel runs on the AI
  CPU in float32);
* ``force_fp32`` / ``cube_fp16in_fp32out``: vector ops float32; cube ops take float16 inputs
  and give a float32 output (``low-in``);
* ``allow_mix_precision*``: the white list lowers, the black list keeps float32, a gray op
  follows its upstream op (lowered when a float input comes from a lowered op, else kept).
  ``--modify_mixlist`` moves op types between the lists;
* ``--keep_dtype``: a listed node (by name) or op type (``OpType::<CANN type>``) keeps
  float32 (not under ``must_keep_origin_dtype``, where everything does).

Ops that only move data (Reshape, Transpose, Concat ...) are exact in any dtype: they pass
on the dtype they receive and are never lowered on their own. opsdk's own operators (a node
of an operator's domain) follow their spec through :func:`opsdk.ascend.precision.kernel_dtypes`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ...errors import SpecError
from ...spec import OpSpec
from ..precision import PrecisionMode, kernel_dtypes
from ._lists import OpFacts, op_facts

__all__ = ["NodeDtype", "assign_dtypes", "low_dtype", "LOW", "LOW_IN", "KEEP", "NONE"]

#: ``NodeDtype.run`` values: lowered; cube with low inputs and a float32 output; float32; no
#: float tensor (or an op that only moves data).
LOW, LOW_IN, KEEP, NONE = "low", "low-in", "float32", "-"
_STANDARD_DOMAINS = ("", "ai.onnx")


@dataclass(frozen=True)
class NodeDtype:
    """The dtype ATC gives one node.

    ``index``: position in the graph; ``run``: one of LOW, LOW_IN, KEEP, NONE; ``dtype``:
    the float dtype it computes in; ``why``: the rule that decided it.
    """

    index: int
    name: str
    op_type: str
    cann_type: str
    mixlist: str
    cube: bool
    run: str
    dtype: str
    why: str

    @property
    def lowered(self) -> bool:
        """The node's float inputs are rounded to the low dtype."""
        return self.run in (LOW, LOW_IN)

    def as_dict(self) -> dict[str, Any]:
        """The fields as JSON-ready data."""
        return asdict(self)


def low_dtype(pm: PrecisionMode) -> str:
    """The reduced dtype of a mode: bfloat16 for the *_bf16 modes, else float16.

    Example:
        >>> low_dtype(PrecisionMode("allow_fp32_to_bf16")), low_dtype(PrecisionMode("fp16"))
        ('bfloat16', 'float16')
    """
    return "bfloat16" if pm.behaves_as.endswith("bf16") else "float16"


SpecLookup = Callable[[str, str], "OpSpec | None"]


def _spec_of(op_type: str, domain: str) -> OpSpec | None:
    """The spec of opsdk operator ``op_type`` in ``domain``, or None."""
    from ...registry import find_operator

    try:
        spec = find_operator(op_type).spec
    except Exception:  # not an opsdk operator (or a broken one): ATC's gray default applies
        return None
    return spec if spec.domain == domain else None


def _rule(pm: PrecisionMode, f: OpFacts, upstream_low: bool) -> tuple[str, str]:
    """(run, why) of a float32 op by the mode's rule."""
    mode = pm.behaves_as
    if mode == "force_fp16":
        return (LOW, "force_fp16: the kernel takes float16") if f.has_fp16 else (
            KEEP, "force_fp16: no float16 kernel")
    if mode in ("allow_fp32_to_fp16", "allow_fp32_to_bf16"):
        if f.cube:
            return LOW, f"{mode}: cube op"
        return (KEEP, f"{mode}: vector op with a float32 kernel") if f.has_fp32 else (
            LOW, f"{mode}: vector op without a float32 kernel")
    if mode == "must_keep_origin_dtype":
        return KEEP, "must_keep_origin_dtype" + ("" if f.has_fp32 else
                                                 ": no float32 AI Core kernel, AI CPU in float32")
    if mode == "force_fp32":
        return (LOW_IN, "force_fp32: cube op, float16 in, float32 out") if f.cube and f.has_fp16 \
            else (KEEP, "force_fp32")
    lst = pm.mixlist(f.cann_type)
    lst = f.mixlist if lst == "gray" else lst
    if not f.has_fp32:
        return LOW, f"{mode}: no float32 kernel"
    if lst == "white":
        return LOW, f"{mode}: white list"
    if lst == "black":
        return KEEP, f"{mode}: black list"
    return (LOW, f"{mode}: gray list, upstream lowered") if upstream_low else (
        KEEP, f"{mode}: gray list, upstream float32")


def _custom(spec: OpSpec, ins: Sequence[str | None], pm: PrecisionMode) -> tuple[str, str]:
    kd = kernel_dtypes(spec, ins, pm)
    low = [d for d in kd if d in ("float16", "bfloat16")]
    if low:
        return LOW, f"opsdk operator {spec.name}: spec kernel {'/'.join(filter(None, kd))}"
    return KEEP, f"opsdk operator {spec.name}: spec kernel {'/'.join(filter(None, kd))}"


def assign_dtypes(
    nodes: Sequence[Any], float_tensors: set[str], pm: PrecisionMode, soc: str | None = None,
    spec_of: SpecLookup | None = None,
) -> list[NodeDtype]:
    """The dtype of every node (``onnx.NodeProto``) whose float32 tensors are ``float_tensors``.

    Example:
        >>> import onnx.helper as h
        >>> n = h.make_node("Conv", ["x", "w"], ["y"], name="conv")
        >>> [d.run for d in assign_dtypes([n], {"x", "w", "y"}, PrecisionMode("force_fp16"))]
        ['low']
    """
    spec_of = spec_of or _spec_of
    low = low_dtype(pm)
    lowered: set[str] = set()  # tensors that carry low-dtype values
    out: list[NodeDtype] = []
    for i, node in enumerate(nodes):
        fin = [t for t in node.input if t in float_tensors]
        fout = [t for t in node.output if t in float_tensors]
        custom = node.domain not in _STANDARD_DOMAINS
        spec = spec_of(node.op_type, node.domain) if custom else None
        f = OpFacts(node.op_type, node.op_type, known=spec is not None) if custom else \
            op_facts(node.op_type, soc)
        upstream = any(t in lowered for t in fin)
        if not fin and not fout:
            run, why = NONE, "no float32 tensor"
        elif f.transparent:
            run, why = NONE, "moves data only" + (" (passes on low values)" if upstream else "")
            if upstream:
                lowered.update(fout)
        elif pm.behaves_as != "must_keep_origin_dtype" and (
                node.name in pm.keep_nodes or f.cann_type in pm.keep_dtype) and f.has_fp32:
            run, why = KEEP, "--keep_dtype"
        elif spec is not None:
            run, why = _custom(spec, ["float16" if t in lowered else "float32"
                                      if t in float_tensors else None for t in node.input], pm)
        else:
            run, why = _rule(pm, f, upstream)
            if not f.known:
                why += f" ({node.op_type} is not in opsdk's table: gray, float16 and float32)"
        if run == LOW:
            lowered.update(fout)
        out.append(NodeDtype(i, node.name, node.op_type, f.cann_type, f.mixlist, f.cube, run,
                             low if run in (LOW, LOW_IN) else "float32", why))
    return out


def check_names(nodes: Sequence[Any], pm: PrecisionMode, where: str) -> None:
    """Refuse ``--keep_dtype`` node names the model does not have (ATC would ignore them)."""
    names = {n.name for n in nodes}
    unknown = sorted(pm.keep_nodes - names)
    if unknown:
        raise SpecError(f"{where}: --keep-dtype names node(s) {', '.join(unknown[:5])} that the "
                        "model does not have; use the model's node names (or OpType::<CANN type>)")


def summary(assigned: Sequence[NodeDtype]) -> Mapping[str, int]:
    """How many nodes run in each way."""
    counts: dict[str, int] = {}
    for d in assigned:
        counts[d.run] = counts.get(d.run, 0) + 1
    return dict(sorted(counts.items()))
