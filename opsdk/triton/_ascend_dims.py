"""Symbolic dims in the .onnx npu_ge loads: input dims it can name, output dims it can compute.

npu_ge reads the symbolic dim names of the model's inputs and outputs with ONNX Runtime and
computes each variable output dim from its name (see :mod:`opsdk.triton._npu_ge_expr`). So
the file written for ``--target ascend``:

* gives every variable input dim a name the backend can use: an identifier (a name with
  other characters, such as paddle2onnx's ``p2o.DynamicDimension.1``, has them replaced by
  ``_``; an unnamed dim, or exporters' ``dim_value -1``, becomes ``<input>_<axis>``);
* names every variable output dim by an expression of those names derived from the graph
  (:func:`opsdk.onnx._dimprop.propagate_dims`), or given by the user (``--output-dims``),
  or kept from the graph when it already is one; a dim the graph fixes is written fixed;
* proves each name by running the model with ONNX Runtime on at least two probe shapes and
  comparing every output dim with what the backend would compute from the name. That
  session runs in one child process per build (:class:`opsdk.onnx._ort_child.OrtChild`):
  a model that crashes ONNX Runtime fails the build naming the version, the signal and,
  where :mod:`opsdk.triton._crash` isolates it, the node.
"""

from __future__ import annotations

import copy
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import ModelProto

from ..onnx import (
    ModelError,
    OrtChild,
    OrtChildCrash,
    is_state_dim,
    probe_feeds,
    propagate_dims,
    value_candidates,
)
from ..onnx._dimexpr import Dim
from . import _npu_ge_expr as expr
from ._errors import TritonConfigError
from ._ort_check import OrtCrash as _OrtCrash

__all__ = ["DimNaming", "name_dims", "default_probes", "runnable_sizes", "check_output_names"]

Probe = dict[str, int]


@dataclass
class DimNaming:
    """What :func:`name_dims` did: notes, the input dim names and the probes it ran."""

    notes: list[str] = field(default_factory=list)
    inputs: dict[str, list[str | None]] = field(default_factory=dict)  # input -> dim names
    probes: list[Probe] = field(default_factory=list)


def name_dims(
    model: ModelProto,
    label: str,
    batched: bool = False,
    output_dims: Mapping[str, Sequence[str]] | None = None,
    probes: Sequence[Mapping[str, int]] = (),
    gears: Sequence[Sequence[int]] = (),
    values: Mapping[str, float] | None = None,
) -> DimNaming:
    """Name the variable input and output dims of ``model`` (in place) the way npu_ge needs.

    ``batched``: the leading dim is Triton's batch axis (its output names are not needed).
    ``output_dims``: ``{output: [expr, ...]}``, one entry per dim, overriding the graph.
    ``probes``: ``{input dim name: size}`` each, and ``gears``: GE shape gears (one size
    per variable input dim, in input order), for the ONNX Runtime check; with fewer than two
    different ones, :func:`default_probes` fill in. ``values``: ``{input: value}`` each
    input is filled with on the probes; an input the graph compares with a constant gets
    that constant (``Equal(sr, 16000)``: 16000), the others zeros
    (:func:`opsdk.onnx._probe.probe_feeds`).

    Raises:
        TritonConfigError: a variable output dim the backend needs a name for has none it
            can evaluate, a user expression is not in its grammar, or a name gives another
            size than ONNX Runtime on a probe (the numbers are in the message).

    Example:
        >>> from onnx import helper, TensorProto as T
        >>> g = helper.make_graph([helper.make_node("Concat", ["x", "x"], ["y"], axis=1)],
        ...     "g", [helper.make_tensor_value_info("x", T.FLOAT, [-1, "seq.len"])],
        ...     [helper.make_tensor_value_info("y", T.FLOAT, [-1, -1])])
        >>> m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        >>> done = name_dims(m, "m")
        >>> done.inputs, [d.dim_param for d in m.graph.output[0].type.tensor_type.shape.dim]
        ({'x': ['x_0', 'seq_len']}, ['x_0', '2*seq_len'])
    """
    out = DimNaming()
    symbols = _name_inputs(model, out)
    derived = propagate_dims(model, symbols)
    _give_ranks(model, derived)
    known = {n for names in out.inputs.values() for n in names if n}
    _check_probe_names(model, label, probes, values or {}, known)
    dropped = _dropped_leading(out, batched)
    inner = known - dropped
    wanted = _wanted_dims(model, batched)
    checked: list[tuple[str, int, str]] = []
    overrides = _overrides(model, output_dims or {}, known, inner, label)
    for o in model.graph.output:
        for axis, dim in enumerate(o.type.tensor_type.shape.dim):
            if (o.name, axis) not in wanted and (o.name, axis) not in overrides:
                continue
            name = _choose(o.name, axis, dim, derived, overrides, inner if axis else known,
                           out.notes)
            if name is not None:
                checked.append((o.name, axis, name))
    required = any(axis >= 1 for _, axis in wanted)
    named = {(o, a) for o, a, _ in checked}
    missing = [(o, a) for o, a in sorted(wanted, key=_order(model)) if (o, a) not in named]
    if missing:  # ops opsdk does not propagate: ONNX shape inference may carry a name through
        found = _from_onnx_inference(model, missing, known, inner, out.notes)
        checked += found
        missing = [m for m in missing if m not in {(o, a) for o, a, _ in found}]
    # one ONNX Runtime session for the fit and the proof, in a child process: a model that
    # crashes ONNX Runtime fails the build naming the node (OrtCrash), once
    sessions: list[_ChildRunner] = []
    crashed: list[_OrtCrash] = []

    def runner() -> _ChildRunner:
        if crashed:
            raise crashed[0]
        if not sessions:
            try:
                sessions.append(_ChildRunner(model, label, values))
            except _OrtCrash as e:
                crashed.append(e)
                raise
        return sessions[0]

    try:
        if required and missing:  # what the graph does not tell (an If whose branches differ)
            found = _fit_from_probes(model, missing, symbols, known, inner, runner, out.notes)
            checked += found
            missing = [m for m in missing if m not in {(o, a) for o, a, _ in found}]
        if required and missing:
            o, a = missing[0]
            raise _unnamed(label, o, a, derived, inner if a else known, dropped)
        if checked:  # every name written (or kept) is proven, needed by the backend or not
            defaults = default_probes(symbols)
            given = _given(out, defaults[0], probes, gears)
            out.probes = _prove(checked, given, defaults, runner(), label)
            shown = "; ".join(_show(p) for p in out.probes)
            out.notes.append(f"output dims checked with ONNX Runtime on {len(out.probes)} "
                             f"probes ({shown}){_show_values(model, values or {})}")
    finally:
        for s in sessions:
            s.close()
    if batched:
        out.notes += _shift_for_batching(model, checked, label)
    return out


def _check_probe_names(model: ModelProto, label: str, probes: Sequence[Mapping[str, int]],
                       values: Mapping[str, float], known: set[str]) -> None:
    """Refuse a ``--probe-dims`` name no variable input dim has and a ``--probe-values``
    input the model lacks: either would be ignored, and the check run on what the user did
    not ask for."""
    for probe in probes:
        for name in probe:
            if name not in known:
                names = ", ".join(sorted(known)) or "none (every input dim is fixed)"
                raise TritonConfigError(
                    f"{label}: --probe-dims {name}=... names no variable input dim of the "
                    f"model; its dim names are {names}")
    inits = {t.name for t in model.graph.initializer}
    inputs = [v.name for v in model.graph.input if v.name not in inits]
    for name in values:
        if name not in inputs:
            raise TritonConfigError(
                f"{label}: --probe-values {name}=... names no input of the model; its inputs "
                f"are {', '.join(inputs) or 'none'}")


def _shift_for_batching(model: ModelProto, named: list[tuple[str, int, str]], label: str,
                        ) -> list[str]:
    """When batching, npu_ge reads the name of config dim ``c`` (ONNX dim ``c + 1``) at ONNX
    dim ``c``: its source indexes the ONNX names, batch axis included, with the config dims,
    which leave it out. So each variable output dim's name is written one dim to the left.
    The batch axis itself (ONNX dim 0) is not a config dim: npu_ge reads no name for it, and
    its name (``--output-dims y=batch,...``) moves nowhere (there is no dim -1)."""
    moves: dict[str, dict[int, str]] = {}
    for output, axis, name in named:
        if axis >= 1 and not name.isdigit():
            moves.setdefault(output, {})[axis] = name
    notes = []
    for o in model.graph.output:
        dims = o.type.tensor_type.shape.dim
        for axis in sorted(moves.get(o.name, {})):
            left = dims[axis - 1]
            if left.HasField("dim_value") and left.dim_value > 0:
                raise TritonConfigError(
                    f"{label}: output '{o.name}' dim {axis} is variable and dim {axis - 1} is "
                    f"fixed ({left.dim_value}); when batching, npu_ge reads the name of each "
                    "variable output dim at the dim before it (its source indexes the ONNX dim "
                    "names with the config dims, which leave out the batch axis), and a fixed "
                    "dim has no name. Build with --max-batch-size 0 (npu_ge would not merge "
                    "this model's requests anyway)")
        for axis, name in sorted(moves.get(o.name, {}).items()):
            dims[axis - 1].dim_param = name
        if o.name in moves:
            notes.append(f"output '{o.name}' dim names written one dim to the left (ONNX dim k "
                         "holds dim k+1's), where npu_ge reads them when batching")
    return notes


def output_dim_names(names: Sequence[str], batched: bool) -> list[str]:
    """An output's dim names as npu_ge uses them (:func:`_shift_for_batching` undone):
    ``names`` are the ONNX dim names, ``""`` where a dim has none.

    Example:
        >>> output_dim_names(["seq", "seq"], batched=True), output_dim_names(["n", "s"], False)
        (['', 'seq'], ['n', 's'])
    """
    return ["", *names[:-1]] if batched and names else list(names)


def _dropped_leading(names: DimNaming, batched: bool) -> set[str]:
    """Without batching, when every input's leading dim is variable under one name, npu_ge
    drops that dim from the names it resolves (``ModelState::PreNegativeOne``)."""
    firsts = {dims[0] if dims else None for dims in names.inputs.values()}
    if batched or len(firsts) != 1 or None in firsts:
        return set()
    return {n for n in firsts if n}


def _dropped_note(dropped: set[str]) -> str:
    return (f" ({', '.join(sorted(dropped))}, the leading dim of every input, is left out: "
            "npu_ge does not resolve it when not batching)" if dropped else "")


def _order(model: ModelProto) -> Callable[[tuple[str, int]], tuple[int, int]]:
    names = [o.name for o in model.graph.output]
    return lambda oa: (names.index(oa[0]), oa[1])


# ---------------------------------------------------------------------------- inputs
_NOT_ID = re.compile(r"[^A-Za-z0-9_]")


def _identifier(text: str) -> str:
    name = _NOT_ID.sub("_", text)
    return name if name and not name[0].isdigit() else f"d_{name}"


def _name_inputs(model: ModelProto, out: DimNaming) -> dict[str, tuple[Dim | None, ...]]:
    """Identifier names on every variable input dim; the inputs as symbolic shapes."""
    inits = {i.name for i in model.graph.initializer}
    renamed: dict[str, str] = {}
    taken = {d.dim_param for v in model.graph.input for d in v.type.tensor_type.shape.dim
             if d.dim_param and _identifier(d.dim_param) == d.dim_param}
    shapes: dict[str, tuple[Dim | None, ...]] = {}
    for v in model.graph.input:
        if v.name in inits:
            continue
        names: list[str | None] = []
        dims: list[Dim | None] = []
        for axis, d in enumerate(v.type.tensor_type.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                names.append(None)
                dims.append(Dim.const(d.dim_value))
                continue
            old = d.dim_param if re.search(r"[A-Za-z0-9]", d.dim_param) else ""  # "?": unnamed
            new = old if old and _identifier(old) == old else renamed.get(old) if old else None
            if new is None:
                new = _fresh(_identifier(old) if old else f"{_identifier(v.name)}_{axis}", taken)
                if old:
                    renamed[old] = new
            if new != old:
                what = f"named {d.dim_param!r}" if d.dim_param else (
                    f"dim_value {d.dim_value}" if d.HasField("dim_value") else "unnamed")
                out.notes.append(f"input '{v.name}' dim {axis} ({what}) named {new!r}: npu_ge "
                                 "needs identifier names on variable input dims")
            d.dim_param = new  # clears dim_value (a oneof)
            names.append(new)
            dims.append(Dim.symbol(new))
        out.inputs[v.name] = names
        shapes[v.name] = tuple(dims)
    return shapes


def _fresh(name: str, taken: set[str]) -> str:
    base, k = name, 1
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


# --------------------------------------------------------------------------- outputs
def _give_ranks(model: ModelProto, derived: Mapping[str, tuple[Dim | None, ...] | None]) -> None:
    """An output without a shape gets one dim per axis the graph gives it (unnamed yet)."""
    for o in model.graph.output:
        tt = o.type.tensor_type
        if tt.HasField("shape"):
            continue
        shape = derived.get(o.name)
        rank = len(shape) if shape is not None else _inferred_rank(model, o.name)
        if rank is not None:
            tt.shape.SetInParent()
            for _ in range(rank):
                tt.shape.dim.add()


def _inferred_rank(model: ModelProto, output: str) -> int | None:
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # custom schemas may be missing
        return None
    for o in inferred.graph.output:
        if o.name == output and o.type.tensor_type.HasField("shape"):
            return len(o.type.tensor_type.shape.dim)
    return None


def _wanted_dims(model: ModelProto, batched: bool) -> set[tuple[str, int]]:
    """The variable output dims (outside the batch axis when batching)."""
    return {(o.name, axis) for o in model.graph.output
            for axis, d in enumerate(o.type.tensor_type.shape.dim)
            if not (d.HasField("dim_value") and d.dim_value > 0) and not (batched and axis == 0)}


def _overrides(model: ModelProto, given: Mapping[str, Sequence[str]], known: set[str],
               inner: set[str], label: str) -> dict[tuple[str, int], str]:
    outputs = {o.name: len(o.type.tensor_type.shape.dim) for o in model.graph.output}
    found: dict[tuple[str, int], str] = {}
    for name, items in given.items():
        if name not in outputs:
            raise TritonConfigError(
                f"{label}: --output-dims names output '{name}', but the model's outputs are "
                f"{', '.join(repr(o) for o in outputs)}")
        if len(items) != outputs[name]:
            raise TritonConfigError(
                f"{label}: --output-dims gives {len(items)} dims for output '{name}', which "
                f"has {outputs[name]}; give one expression (or size) per dim, e.g. "
                f"{name}={','.join(['batch'] + ['1'] * (outputs[name] - 1))}")
        for axis, text in enumerate(items):
            try:
                expr.check(text.strip(), inner if axis else known)
            except expr.ExpressionError as e:
                raise TritonConfigError(
                    f"{label}: --output-dims {name} dim {axis} {text!r}: {e}; npu_ge evaluates "
                    f"+ - * / and parentheses over the input dim names "
                    f"({', '.join(sorted(inner if axis else known)) or 'none'})"
                    + _dropped_note(known - inner if axis else set())) from e
            found[(name, axis)] = text.strip()
    return found


def _choose(output: str, axis: int, dim: onnx.TensorShapeProto.Dimension,
            derived: Mapping[str, tuple[Dim | None, ...] | None],
            overrides: Mapping[tuple[str, int], str], known: set[str],
            notes: list[str]) -> str | None:
    """Write the dim's name (or fixed size); return the name to prove, or None."""
    if (output, axis) in overrides:
        text = overrides[(output, axis)]
        _set(dim, text)
        notes.append(f"output '{output}' dim {axis} is {text!r} (--output-dims)")
        return text
    if dim.dim_param and _usable(dim.dim_param, known):
        return dim.dim_param
    shape = derived.get(output)
    found = shape[axis] if shape is not None and axis < len(shape) else None
    if found is None:
        return None
    text = expr.render(found)
    if not _usable(text, known):
        return None
    _set(dim, text)
    kind = "is" if found.is_const() else "named"
    notes.append(f"output '{output}' dim {axis} {kind} {text!r} (from the graph: {found})")
    return text


def _from_onnx_inference(model: ModelProto, missing: list[tuple[str, int]], known: set[str],
                         inner: set[str], notes: list[str]) -> list[tuple[str, int, str]]:
    """Names (or sizes) ONNX shape inference gives the dims still unnamed."""
    probe = copy.deepcopy(model)
    for o in probe.graph.output:
        o.type.tensor_type.ClearField("shape")
    try:
        inferred = onnx.shape_inference.infer_shapes(probe)
    except Exception:  # custom schemas may be missing
        return []
    dims = {(o.name, axis): d for o in inferred.graph.output
            for axis, d in enumerate(o.type.tensor_type.shape.dim)}
    outputs = {o.name: o for o in model.graph.output}
    found = []
    for output, axis in missing:
        d = dims.get((output, axis))
        text = (str(d.dim_value) if d is not None and d.HasField("dim_value") and d.dim_value > 0
                else (d.dim_param if d is not None else ""))
        if text and (text.isdigit() or _usable(text, inner if axis else known)):
            _set(outputs[output].type.tensor_type.shape.dim[axis], text)
            notes.append(f"output '{output}' dim {axis} is {text!r} (from ONNX shape inference)")
            found.append((output, axis, text))
    return found


def _fit_from_probes(model: ModelProto, missing: list[tuple[str, int]],
                     symbols: Mapping[str, tuple[Dim | None, ...]], known: set[str],
                     inner: set[str], session: Callable[[], Any],
                     notes: list[str]) -> list[tuple[str, int, str]]:
    """Names for dims neither opsdk's propagation nor ONNX inference found, from three
    ONNX Runtime runs: two probe sizings on random inputs and the first again on zeros (value
    inputs keep their values): the input dim whose size the output dim has on every run
    (its size changing between them), else the size itself when it is the same non-zero
    size on every run. A data-dependent size (NonZero's count: all of a random input, none
    of zeros) differs between the runs and is not fitted. :func:`_prove` then checks the
    names with the others."""
    probes = default_probes(symbols)
    try:
        runner = session()
    except Exception:  # ONNX Runtime cannot open it: nothing to fit on
        return []
    runs: list[tuple[Probe, dict[str, tuple[int, ...]]]] = []
    for p in probes:  # two sizings that run, on random data
        try:
            runs.append((p, runner.shapes(p, seed=len(runs))))
        except TritonConfigError:
            continue
        if len(runs) == 2:
            break
    if runs:  # and the first again on zeros: a data-dependent size (NonZero's) differs
        try:
            runs.append((runs[0][0], runner.shapes(runs[0][0])))
        except TritonConfigError:
            pass
    if len(runs) < 3:
        return []
    outputs = {o.name: o for o in model.graph.output}
    found = []
    for output, axis in missing:
        allowed = inner if axis else known
        for name in [n for n in runs[0][0] if n in allowed]:
            sizes = {p[name] for p, _ in runs}
            if len(sizes) > 1 and all(
                    axis < len(shapes[output]) and shapes[output][axis] == p[name]
                    for p, shapes in runs):
                _set(outputs[output].type.tensor_type.shape.dim[axis], name)
                notes.append(f"output '{output}' dim {axis} is {name!r} (the graph does not "
                             f"determine it; it equals {name} on the {len(runs)} probe "
                             "runs of ONNX Runtime, random and zero inputs)")
                found.append((output, axis, name))
                break
        else:
            sizes = {shapes[output][axis] for _, shapes in runs if axis < len(shapes[output])}
            if len(sizes) == 1 and min(sizes) > 0 and all(
                    axis < len(shapes[output]) for _, shapes in runs):
                text = str(sizes.pop())
                _set(outputs[output].type.tensor_type.shape.dim[axis], text)
                notes.append(f"output '{output}' dim {axis} is {text} (the graph does not "
                             f"determine it; it is {text} on the {len(runs)} probe runs of ONNX "
                             "Runtime, random and zero inputs)")
                found.append((output, axis, text))
    return found


def _usable(name: str, known: set[str]) -> bool:
    try:
        expr.check(name, known)
    except expr.ExpressionError:
        return False
    return True


def _set(dim: onnx.TensorShapeProto.Dimension, text: str) -> None:
    if text.isdigit():
        dim.dim_value = int(text)
    else:
        dim.dim_param = text


def _unnamed(label: str, output: str, axis: int,
             derived: Mapping[str, tuple[Dim | None, ...] | None], known: set[str],
             dropped: set[str]) -> TritonConfigError:
    shape = derived.get(output)
    found = shape[axis] if shape is not None and axis < len(shape) else None
    if found is None:
        why = "the graph does not determine it from the input dims (a data-dependent size?)"
    elif found.symbols() & dropped:
        why = (f"its expression {found} uses {', '.join(sorted(found.symbols() & dropped))}, "
               "the leading dim of every input, which npu_ge leaves out of the names it "
               "resolves when not batching (batch with --max-batch-size N if it is a batch axis)")
    else:
        try:
            expr.check(expr.render(found), known)
            why = f"its expression {found} cannot be written for npu_ge"
        except expr.ExpressionError as e:
            why = f"its expression {found} cannot be written for npu_ge: {e}"
    return TritonConfigError(
        f"{label}: output '{output}' dim {axis} is variable but {why}; npu_ge sizes such an "
        "output from an expression of the input dims (names, integers, + - * / and "
        f"parentheses); {_names_left(known, dropped if axis else set())}. Give it "
        f"with --output-dims {output}=EXPR,... (one entry per dim), or export the model with "
        "named dynamic axes (dynamic_axes={'y': {1: 'seq'}}) or fixed output shapes")


def _names_left(known: set[str], dropped: set[str]) -> str:
    """What the output dim can be written with, said plainly when nothing is left."""
    if known:
        return f"input dims are named {', '.join(sorted(known))}{_dropped_note(dropped)}"
    if dropped:
        lead = ", ".join(sorted(dropped))
        return (f"the inputs' only variable dim is {lead}, their leading dim, which npu_ge does "
                "not resolve when not batching, so no input dim is left to write it with: if "
                f"{lead} is a batch axis, build with --max-batch-size N (every output's leading "
                "dim must be variable too)")
    return ("every input dim is fixed, so this size depends on input values, not shapes, and "
            "npu_ge cannot compute it; if it is fixed in fact, give that size")


# ------------------------------------------------------------------------------ probes
_SPREADS = ((64, 32), (96, 64), (32, 16), (48, 32), (128, 32), (160, 64), (224, 32),
            (640, 64))


def default_probes(symbols: Mapping[str, tuple[Dim | None, ...]]) -> list[Probe]:
    """Probe sizings of the named input dims, tried in turn until two run: leading dims
    (and the one dynamic dim of an RNN state ``[layers, batch, hidden]``) 1, 2, 1, ...; each
    other dim ``base + step * i`` for the ``i``-th such dim, with ``(base, step)`` from
    (64, 32), (96, 64), (32, 16), (48, 32), ..., (224, 32), (640, 64) (multiples of 16, as
    strided vision models need, each dim different so that a name using the wrong dim fails).

    Example:
        >>> from opsdk.onnx._dimexpr import Dim
        >>> default_probes({"x": (Dim.symbol("n"), Dim.const(3), Dim.symbol("h"),
        ...                       Dim.symbol("w"))})[:2]
        [{'n': 1, 'h': 64, 'w': 96}, {'n': 2, 'h': 96, 'w': 160}]
    """
    leading: dict[str, bool] = {}
    for shape in symbols.values():
        dynamic = [a for a, d in enumerate(shape) if d is not None and not d.is_const()]
        for axis in dynamic:
            (name,) = shape[axis].symbols()  # type: ignore[union-attr]
            lead = axis == 0 or is_state_dim(axis, dynamic, len(shape))
            leading[name] = leading.get(name, True) and lead
    probes: list[Probe] = []
    for k, (base, step) in enumerate(_SPREADS):
        others = iter(range(len(leading)))
        probes.append({name: 1 + k % 2 if lead else base + step * next(others)
                       for name, lead in leading.items()})
    return probes


def _given(names: DimNaming, defaults: Probe, probes: Sequence[Mapping[str, int]],
           gears: Sequence[Sequence[int]]) -> list[Probe]:
    """The user's probes and shape gears (one size per variable input dim, in order)."""
    order = [n for dims in names.inputs.values() for n in dims if n]
    out = [{**defaults, **p} for p in probes]
    for gear in gears:
        probe: Probe = {}
        for name, size in zip(order, gear, strict=False):
            probe.setdefault(name, size)
        out.append({**defaults, **probe})
    return out


def _show(probe: Mapping[str, float]) -> str:
    return ", ".join(f"{k}={v}" for k, v in probe.items())


class _Runner:
    """One ONNX Runtime session of the model; output shapes per probe."""

    def __init__(self, model: ModelProto, label: str,
                 values: Mapping[str, float] | None = None) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.log_severity_level = 4
        self.model, self.label, self.values = model, label, dict(values or {})
        self.sess = ort.InferenceSession(model.SerializeToString(), opts,
                                         providers=["CPUExecutionProvider"])
        self.outputs = [o.name for o in model.graph.output]

    def shapes(self, probe: Probe, seed: int | None = None) -> dict[str, tuple[int, ...]]:
        """Output shapes on ``probe``; inputs zeros, or random with ``seed``."""
        feeds = probe_feeds(self.model, probe, self.values, random=seed is not None,
                            seed=seed or 0)
        try:
            results = self.sess.run(self.outputs, feeds)
        except Exception as e:
            raise run_error(self.label, self.model, probe, self.values, e) from e
        return dict(zip(self.outputs, (tuple(np.shape(r)) for r in results), strict=True))


def run_error(label: str, model: ModelProto, probe: Probe, values: Mapping[str, float],
              e: Exception) -> TritonConfigError:
    """The error of a probe ONNX Runtime could not run, with the fixes."""
    return TritonConfigError(
        f"{label}: checking the output dim names, ONNX Runtime could not run the "
        f"model with input dims {_show(probe)}{_show_values(model, values)}: "
        f"{str(e).splitlines()[0][:300]}; {_baked_hint(e)}pass sizes the model "
        "accepts with --probe-dims NAME=SIZE,... (twice) or --shape-gears, and values "
        "for its value inputs with --probe-values NAME=VALUE")


class _ChildRunner:
    """The session in a child: ``shapes(probe, seed)`` as the in-process runner has it.

    A crash is :class:`~opsdk.triton.OrtCrash`, on that call and every later one
    (no second child)."""

    def __init__(self, model: ModelProto, label: str,
                 values: Mapping[str, float] | None = None,
                 python: str | Path = sys.executable) -> None:
        self.model, self.label, self.values = model, label, dict(values or {})
        self.outputs = [o.name for o in model.graph.output]
        self._python = python
        self._crash: _OrtCrash | None = None
        try:
            self._child = OrtChild(model, python)
        except OrtChildCrash as e:
            raise self._crashed(e, {}) from None
        except ModelError as e:
            raise TritonConfigError(f"{label}: checking the output dim names, {e}") from None
        self.version = self._child.version

    def shapes(self, probe: Mapping[str, int], seed: int | None = None,
               ) -> dict[str, tuple[int, ...]]:
        """Output shapes on ``probe``; inputs zeros, or random with ``seed``."""
        if self._crash is not None:
            raise self._crash
        feeds = probe_feeds(self.model, dict(probe), self.values, random=seed is not None,
                            seed=seed or 0)
        try:
            got = self._child.run(feeds)
        except OrtChildCrash as e:
            raise self._crashed(e, feeds) from None
        except RuntimeError as e:
            raise run_error(self.label, self.model, dict(probe), self.values, e) from None
        return {o: tuple(got[o]) for o in self.outputs}

    def close(self) -> None:
        child = getattr(self, "_child", None)
        if child is not None:
            child.close()

    def _crashed(self, e: OrtChildCrash, feeds: Mapping[str, Any]) -> _OrtCrash:
        from ._crash import isolate_crash

        found = isolate_crash(self.model, feeds, self._python)
        where = f"; the crash is node {found.node}: {found.why}" if found else ""
        fix = f"; fix: {found.fix}" if found and found.fix else ""
        words = f" (its last words: {e.last_words})" if e.last_words else ""
        self._crash = _OrtCrash(f"{self.label}: checking the output dim names, {e}{where}{fix}"
                               f"{words}", e.signal, e.version, e.stage, e.last_words)
        return self._crash


def _baked_hint(e: Exception) -> str:
    """Why a Reshape fails on sizes other than the export's: they were fixed at export."""
    if "Reshape" not in str(e) or "cannot be reshaped" not in str(e):
        return ""
    return ("a Reshape whose target sizes were fixed at export makes the declared dynamic dims "
            "untrue (torch.onnx.export(dynamo=False) traces nn.MultiheadAttention's sizes into "
            "constants): re-export with dynamo=True, or give the dims fixed sizes; else ")


def _run_probes(runner: Any, given: list[Probe], defaults: list[Probe],
                ) -> list[tuple[Probe, dict[str, tuple[int, ...]]]]:
    """The user's probes (each must run), then defaults until two different ones ran (one
    when every input dim is fixed: there is nothing to vary)."""
    runs = [(p, runner.shapes(p)) for p in given]
    failed: list[TritonConfigError] = []
    if not any([*given, *defaults]):
        return runs or [({}, runner.shapes({}))]
    for p in defaults:
        if len({tuple(sorted(q.items())) for q, _ in runs}) >= 2:
            break
        if p in given:
            continue
        try:
            runs.append((p, runner.shapes(p)))
        except TritonConfigError as e:
            failed.append(e)
    if len({tuple(sorted(q.items())) for q, _ in runs}) < 2:
        raise failed[0] if failed else TritonConfigError(
            f"{runner.label}: checking the output dim names needs two different probe "
            "sizings; pass another with --probe-dims NAME=SIZE,...")
    return runs


def _show_values(model: ModelProto, values: Mapping[str, float]) -> str:
    """The values the value inputs were filled with, as a note on a probe."""
    filled = {**{k: v[0] for k, v in value_candidates(model).items()}, **values}
    return f" and values {_show(filled)}" if filled else ""


def _prove(named: list[tuple[str, int, str]], given: list[Probe], defaults: list[Probe],
           runner: Any, label: str) -> list[Probe]:
    """Every name must give the size ONNX Runtime computes, on every probe; return them."""
    runs = _run_probes(runner, given, defaults)
    for probe, shapes in runs:
        for output, axis, name in named:
            actual = shapes[output][axis]
            got = int(name) if name.isdigit() else expr.evaluate(name, probe)
            if got != actual:
                raise TritonConfigError(
                    f"{label}: output '{output}' dim {axis} named {name!r} gives {got} for "
                    f"input dims {_show(probe)}, but ONNX Runtime gives {actual}; give the "
                    f"right expression with --output-dims {output}=...")
    return [p for p, _ in runs]


# ------------------------------------------------------------- checking a written model
def runnable_sizes(model: ModelProto, values: Mapping[str, float] | None = None) -> Probe:
    """The first default probe sizing of ``model``'s named input dims that ONNX Runtime
    runs, value inputs filled as :func:`name_dims` fills them (the first sizing if none
    runs: running it will then report the error)."""
    symbols = {v.name: tuple(Dim.symbol(d.dim_param) if d.dim_param else Dim.const(d.dim_value)
                             for d in v.type.tensor_type.shape.dim)
               for v in model.graph.input}
    probes = default_probes(symbols)
    try:
        runner = _Runner(model, "model", values)
    except Exception:  # ONNX Runtime cannot open it: the caller's run says why
        return probes[0]
    for p in probes:
        try:
            runner.shapes(p)
            return p
        except TritonConfigError:
            continue
    return probes[0]


def check_output_names(
    inputs: Sequence[tuple[str, Sequence[int | str]]],
    outputs: Sequence[tuple[str, Sequence[int | str]]],
    sizes: Mapping[str, Sequence[int]],
    batched: bool,
) -> list[str]:
    """Problems with the output dim names as npu_ge uses them: ``inputs`` / ``outputs`` are
    the dims ONNX Runtime reports (names for symbolic dims), ``sizes`` the shapes of one
    run (inputs and outputs by name).

    Example:
        >>> check_output_names([("x", ["n", "s"])], [("y", ["n", "2*s"])],
        ...                    {"x": [1, 3], "y": [1, 5]}, batched=False)
        ["output 'y' dim 1: npu_ge computes 2*s = 6, ONNX Runtime gives 5"]
    """
    values = {d: n for name, dims in inputs for d, n in zip(dims, sizes[name], strict=True)
              if isinstance(d, str)}
    firsts = {dims[0] if dims else None for _, dims in inputs}
    dropped = (set() if batched or len(firsts) != 1 or not isinstance(next(iter(firsts)), str)
               else {str(next(iter(firsts)))})
    problems = []
    for name, dims in outputs:
        if not any(isinstance(d, str) for d in dims[1:]):
            continue  # npu_ge computes no dim of this output
        used = output_dim_names([d if isinstance(d, str) else "" for d in dims], batched)
        for axis in range(1 if batched or dropped else 0, len(dims)):
            dim = dims[axis]
            if isinstance(dim, int) and dim >= 0:
                continue
            problems += _check_one(name, axis, used[axis], sizes[name][axis],
                                   {k: v for k, v in values.items() if k not in dropped})
    return problems


def _check_one(output: str, axis: int, name: str, actual: int, values: Mapping[str, int],
               ) -> list[str]:
    if not name:
        return [f"output '{output}' dim {axis} has no symbolic name: npu_ge fails the load"]
    try:
        got = expr.evaluate(name, values)
    except expr.ExpressionError as e:
        return [f"output '{output}' dim {axis}: npu_ge cannot evaluate {name!r}: {e}"]
    if got != actual:
        return [f"output '{output}' dim {axis}: npu_ge computes {name} = {got}, ONNX Runtime "
                f"gives {actual}"]
    return []
