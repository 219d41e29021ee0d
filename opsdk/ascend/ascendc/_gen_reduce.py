# ruff: noqa: E501  (the emitter's C++ lines keep their natural lengths)
"""AI Core kernels of decompositions with reductions over the last axis (RMSNorm, L2
normalisation, LayerNorm's mean and variance).

ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceSumSquare and ReduceL2 with ``axes=[-1]``
and ``keepdims=1``, their results broadcast back along the row. Each core takes whole rows.
A reduction whose input needs another reduction waits for it: the decomposition runs in
passes over the row (pass k accumulates the reductions of depth k; the last pass writes the
outputs). When a row fits the Unified Buffer (``tileNum == 1``) it is read once and every
pass runs on it there; otherwise each pass streams the row in tiles. Sums accumulate in
float32 whatever the I/O dtype. An input may also be one row (``[..., R]`` of R elements,
e.g. RMSNorm's gamma): in the row-in-UB path it is read once per core.

Example:
    >>> from opsdk.registry import load_spec
    >>> k = generate(load_spec("/tmp/rms_norm"))  # doctest: +SKIP
    >>> k.rows  # doctest: +SKIP
    True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from onnx import FunctionProto, NodeProto

from ...spec import OpSpec
from ..aicore_apis import UB_RESERVED
from ._gen import (
    API_TMP_BYTES,
    BUFFER_NUM,
    GRANULE,
    AicoreKernel,
    GenerateRefused,
    TuningRow,
    _attr,
    _emit,
    _Gen,
    _io,
    _node,
    _t,
    _Val,
    generate_elementwise,
    prepare,
)
from ._tiling import Tiling, TilingField

__all__ = ["generate", "generate_rows", "REDUCTIONS", "rows_applicable"]

#: ONNX reduction -> the Ascend C reduction of its pass.
REDUCTIONS = {"ReduceSum": "ReduceSum", "ReduceMean": "ReduceSum", "ReduceSumSquare": "ReduceSum",
              "ReduceL2": "ReduceSum", "ReduceMax": "ReduceMax", "ReduceMin": "ReduceMin"}
#: How a tile's partial result ``v`` joins the row's accumulator ``a`` (NaN propagates).
_COMBINE = {"ReduceSum": "{a} + v", "ReduceMax": "(v != v || v > {a}) ? v : {a}",
            "ReduceMin": "(v != v || v < {a}) ? v : {a}"}


@dataclass(frozen=True)
class _Red:
    index: int  # the node's index in the function
    op: str
    stage: int  # the pass that accumulates it
    src: str  # the value it reduces


def _refuse(spec: OpSpec, why: str) -> GenerateRefused:
    return GenerateRefused(f"{spec.name}: no AI Core kernel generated: {why}")


def _axes(spec: OpSpec, func: FunctionProto, node: NodeProto) -> list[int]:
    a = _attr(node, "axes")
    if a is not None:
        return list(a.ints)
    if len(node.input) < 2 or not node.input[1]:
        raise _refuse(spec, f"{node.op_type} over every axis; reduce the last one (axes=-1)")
    prod = next((n for n in func.node if node.input[1] in n.output), None)
    value = _attr(prod, "value_ints") if prod is not None and prod.op_type == "Constant" else None
    if value is None:
        raise _refuse(spec, f"{node.op_type} with axes computed at run time; write axes=-1")
    return list(value.ints)


def _plan(spec: OpSpec, func: FunctionProto) -> tuple[list[_Red], set[int]]:
    """The reductions with their passes, and the Constant nodes that only give their axes."""
    depth: dict[str, int] = {}
    reds: list[_Red] = []
    axes_consts: set[int] = set()
    for i, n in enumerate(func.node):
        d = max((depth.get(x, 0) for x in n.input if x), default=0)
        if n.op_type.startswith("Reduce"):
            if n.op_type not in REDUCTIONS:
                raise _refuse(spec, f"{n.op_type} (the generator takes {', '.join(REDUCTIONS)})")
            axes = _axes(spec, func, n)
            keep = _attr(n, "keepdims")
            if axes != [-1] or (keep is not None and keep.i != 1):
                raise _refuse(spec, f"{n.op_type} with axes={axes}, keepdims="
                              f"{keep.i if keep is not None else 1}; the generator reduces the "
                              "last axis with keepdims=1 (axes=-1) and broadcasts it back")
            d = depth.get(n.input[0], 0)
            reds.append(_Red(i, n.op_type, d, n.input[0]))
            if len(n.input) > 1 and n.input[1]:
                axes_consts |= {k for k, m in enumerate(func.node) if n.input[1] in m.output}
            d += 1
        for o in n.output:
            depth[o] = d
    return reds, axes_consts


def _needed(func: FunctionProto, targets: Sequence[str], stop: set[str]) -> set[int]:
    """Indices of the nodes computing ``targets``, not looking behind values in ``stop``."""
    want, need = set(targets), set()
    for i in range(len(func.node) - 1, -1, -1):
        n = func.node[i]
        if any(o in want for o in n.output):
            need.add(i)
            if not any(o in stop for o in n.output):
                want |= {x for x in n.input if x}
    return need


class _Pass:
    """The compute lines of one pass (a fresh emitter; the row kernel sizes its buffers for
    the largest)."""

    def __init__(self, spec: OpSpec, func: FunctionProto, reds: list[_Red], consts: set[int],
                 stage: int) -> None:
        self.spec, self.func, self.reds, self.stage = spec, func, reds, stage
        self.g = _Gen(spec, reduce=self._reduce)
        for p in spec.inputs:
            v = self.g.temp()
            v.dtype = "T"
            self.g.vals[p.name] = v
        for i in consts:  # the axes of a reduction: read by _plan, not computed
            self.g.vals[func.node[i].output[0]] = _Val("none")
        self.consts = consts

    def run(self, targets: Sequence[str]) -> None:
        done = {self.func.node[r.index].output[0] for r in self.reds if r.stage < self.stage}
        order = sorted(_needed(self.func, targets, done) - self.consts)
        for i in order:
            n = self.func.node[i]
            red = next((r for r in self.reds if r.index == i), None)
            if red is not None and red.stage < self.stage:
                self.g.vals[n.output[0]] = self._result(self.reds.index(red), red)
            else:
                _emit(self.g, self.func, [i], {})

    def _result(self, k: int, red: _Red) -> _Val:
        """A reduction of an earlier pass: its per-row value (from the accumulator)."""
        n = self.func.node[red.index]
        if red.op == "ReduceMean":
            return _Val("scalar", expr=f"(acc{k}_ * invLen_)", row=True)
        v = _Val("scalar", expr=f"acc{k}_", row=True)
        if red.op == "ReduceL2":
            fake = NodeProto(op_type="Sqrt", input=["_"], output=[n.output[0]])
            return _node(self.g, fake, [v])
        return v

    def _reduce(self, g: _Gen, node: NodeProto, args: list[_Val]) -> _Val:
        """A reduction of this pass: reduce the tile and join the row's accumulator."""
        k = next(j for j, r in enumerate(self.reds) if r.index == list(self.func.node).index(node))
        src = args[0]
        if src.kind != "tensor" or src.row:
            raise g.refuse(f"{node.op_type} of a {'per-row value' if src.row else src.kind}; "
                           "reduce a tensor of the row")
        if node.op_type in ("ReduceSumSquare", "ReduceL2"):
            sq = g.temp()
            g.emit(f"Mul({_t(sq)}, {_t(src)}, {_t(src)}, m);")
            src = sq
        api = REDUCTIONS[node.op_type]
        g.emit(f"{api}(q{k}, {_t(src)}, work, static_cast<int32_t>(n));")
        join = _COMBINE[api].format(a=f"acc{k}_")
        g.emit(f"{{ const float v = ScalarOf(q{k}); acc{k}_ = first ? v : {join}; }}")
        return _Val("none")


def _outputs(p: _Pass) -> list[tuple[str, str]]:
    """(output, the float tile holding it) of the last pass; the template stores them."""
    g, stores = p.g, []
    for o, name in zip(p.spec.outputs, p.func.output, strict=True):
        v = g.vals[name]
        if v.row or v.kind != "tensor":
            raise g.refuse(f"output {o.name!r} is one value per row; broadcast it back along "
                           "the row (e.g. multiply with the input) so the output has the "
                           "input's shape")
        stores.append((o.name, _t(v)))
    return stores


def _body(g: _Gen) -> list[str]:
    views = [f"{g.indent}LocalTensor<float> v{i} = temps[{i} * td_.tileLength];"
             for i in range(g.temps)]
    rows = [f"{g.indent}LocalTensor<float> r{i} = rowBuf_.Get<float>()[{i * GRANULE}];"
            for i in range(g.rows)]
    masks = [f"{g.indent}LocalTensor<uint8_t> k{i} = maskBuf_.Get<uint8_t>()[{i} * MaskStride()];"
             for i in range(g.masks)]
    return views + rows + masks + g.lines


def generate(spec: OpSpec, banner: str = "", tuning: Sequence[TuningRow] | None = None
             ) -> AicoreKernel:
    """The generated AI Core kernel of ``spec``: the row kernel when its decomposition
    reduces (see the module doc), else the elementwise one; raises :class:`GenerateRefused`
    with the reason. ``tuning``: the table ``opsdk tune`` chose.

    Example:
        >>> from opsdk.registry import load_spec
        >>> generate(load_spec("operators/thresholded_relu")).rows  # doctest: +SKIP
        False
    """
    func, dtype, macro = prepare(spec)
    if any(n.op_type.startswith("Reduce") for n in func.node):
        return generate_rows(spec, func, dtype, macro, banner, tuning)
    return generate_elementwise(spec, func, dtype, macro, banner, tuning)


def generate_rows(spec: OpSpec, func: FunctionProto, dtype: str, macro: str, banner: str,
                  tuning: Sequence[TuningRow] | None = None) -> AicoreKernel:
    """The row kernel of a decomposition with last-axis reductions (see the module doc)."""
    if tuning:
        raise _refuse(spec, "opsdk tune searches elementwise generated kernels only; the row "
                      "kernel of a reduction sizes its tiles from the Unified Buffer")
    reds, consts = _plan(spec, func)
    stages = max(r.stage for r in reds) + 1
    passes = []
    for s in range(stages):
        p = _Pass(spec, func, reds, consts, s)
        p.run([r.src for r in reds if r.stage == s])
        for r in reds:
            if r.stage == s:
                _emit(p.g, func, [r.index], {})
        passes.append((p, _body(p.g)))
    last = _Pass(spec, func, reds, consts, stages)
    last.run(list(func.output))
    stores = _outputs(last)
    passes.append((last, _body(last.g)))
    gs = [p.g for p, _ in passes]
    size = _Gen(spec, temps=max(g.temps for g in gs), masks=max(g.masks for g in gs),
                scratch=any(g.scratch for g in gs), api_tmp=any(g.api_tmp for g in gs),
                rows=max(g.rows for g in gs))
    source = _render(spec, size, [b for _, b in passes], stores, len(reds), dtype, banner)
    names = tuple(p.name for p in _io(spec))
    return AicoreKernel(spec.name, spec.snake_name, source, _tiling(spec, size, len(reds)),
                        names, macro, "generated", needs_same_shape=False,
                        applicable=rows_applicable, rows=True)


def rows_applicable(shapes: Sequence[tuple[int, ...] | None], attrs: object) -> str | None:
    """Why a call is out of the row kernel's reach, or None: the first input is the full
    tensor (rank >= 1); every other input has its shape or is one row of it.

    Example:
        >>> rows_applicable([(4, 8), (8,)], {}) is None
        True
        >>> rows_applicable([(4, 8), (4, 1)], {})
        "input 1 has shape [4, 1]; the row kernel takes the first input's shape [4, 8] or one row of it ([8])"
    """
    first = shapes[0]
    if first is None or len(first) == 0:
        return "the row kernel reduces the last axis of a tensor of rank >= 1; this call's first input is a scalar"
    for i, s in enumerate(shapes[1:], 1):
        if s is None or tuple(s) == tuple(first):
            continue
        if not (len(s) and s[-1] == first[-1] and math.prod(s) == first[-1]):
            return (f"input {i} has shape {list(s)}; the row kernel takes the first input's shape "
                    f"{list(first)} or one row of it ([{first[-1]}])")
    return None


def _tiling(spec: OpSpec, g: _Gen, reds: int) -> Tiling:
    """Whole rows per core; a tile of what the Unified Buffer holds, the whole row when it
    fits (``tileNum`` 1: the row is read once)."""
    io = len(spec.inputs) + len(spec.outputs)
    fixed = (32 * (g.masks + 8) + UB_RESERVED + (API_TMP_BYTES if g.api_tmp else 0)
             + 4 * GRANULE * g.rows + 32 * reds + 64 + 288 * len(spec.outputs))
    temps = 4 * (g.temps + (1 if g.scratch else 0))
    fields = (TilingField("rowLength"), TilingField("blockRows"), TilingField("lastBlockRows"),
              TilingField("tileLength", "uint32_t"), TilingField("tileNum", "uint32_t"),
              TilingField("rowMask", "uint32_t"))
    steps = (
        ("rowLength", "lastDim"),
        ("rows", "floordiv(totalLength, lastDim)"),
        ("blockRows", "ceildiv(rows, coreNum)"),
        ("usedCores", "max2(1, ceildiv(rows, blockRows))"),
        ("lastBlockRows", "rows - (usedCores - 1) * blockRows"),
        ("bytesPer8", f"8 * ({BUFFER_NUM * io} * typeBytes + {temps}) + {g.masks} + 1"),
        ("fitTile", f"aligndown(floordiv((ubBytes - {fixed}) * 8, bytesPer8), {GRANULE})"),
        ("tileLength", f"max2({GRANULE}, min2(fitTile, alignup(rowLength, {GRANULE})))"),
        ("tileNum", "max2(1, ceildiv(rowLength, tileLength))"),
        ("rowMask", "rowInputs"),
    )
    return Tiling(spec.name, fields, steps, "usedCores")


def _render(spec: OpSpec, g: _Gen, passes: list[list[str]], stores: list[tuple[str, str]],
            reds: int, dtype: str, banner: str) -> str:
    from ._templates import prelude, render

    return render(
        "aicore", "rows", banner=banner, op=spec.name, snake=spec.snake_name, dtype=dtype,
        prelude=prelude(), io=[p.name for p in _io(spec)],
        inputs=[p.name for p in spec.inputs], outputs=[p.name for p in spec.outputs],
        temps=max(g.temps, 1), masks=g.masks, rows=g.rows, reds=reds,
        api_tmp=API_TMP_BYTES if g.api_tmp else 0, scratch=g.scratch, passes=passes,
        stores=stores,
        block_copy=_block_copy())


def _block_copy() -> str:
    """opsdk's whole-block copies for SoCs without DataCopyPad (``include/opsdk_block_copy.h``,
    put into the kernel as text as for a hand-written kernel)."""
    from pathlib import Path

    name = "opsdk_block_copy.h"
    body = (Path(__file__).with_name("include") / name).read_text()
    return f"// ---- {name}: opsdk's helper, put here by opsdk ----\n{body}// ---- end of {name} ----"
