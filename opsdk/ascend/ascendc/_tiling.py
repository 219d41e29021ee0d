"""Host tiling of an AI Core kernel, described once and evaluated twice.

A :class:`Tiling` lists the tiling-data fields a kernel reads and the integer steps that
compute them from a few facts about one call (``totalLength``, ``lastDim``, ``typeBytes``,
``coreNum``, ``ubBytes``, ``rowInputs``: bit i set when input i has fewer elements than
the output, one row of it for a row kernel, and the input dims a kernel declares in
``dims``). :func:`evaluate` runs the steps in Python for a run on opsdk's Ascend C model;
:func:`cpp_steps` prints the same steps as C++ for the op_host TilingFunc of the CANN
project. Steps use ``+ - *``, integer literals, names defined earlier, the search parameters
(``Tiling(..., search=...)``, for ``opsdk tune``) and the functions ``floordiv ceildiv
alignup aligndown min2 max2``, ``le(a, b)`` (1 when a <= b, else 0) and ``pick(c, a, b)``
(a when c is not 0, else b; a tuned table per shape bucket is written with them) (unsigned
64-bit; dividing by 0 gives 0).

Example:
    >>> t = Tiling("Demo", fields=(TilingField("blockLength"),),
    ...            steps=(("blockLength", "alignup(ceildiv(totalLength, coreNum), 64)"),),
    ...            block_dim="max2(1, ceildiv(totalLength, blockLength))")
    >>> evaluate(t, {"totalLength": 1000, "coreNum": 8})
    (8, {'blockLength': 128})
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ...errors import SpecError

__all__ = ["Tiling", "TilingField", "evaluate", "cpp_steps", "cpp_tiling", "FACTS",
           "with_params", "dim_facts"]

#: The facts of one call the steps may read.
FACTS = ("totalLength", "lastDim", "typeBytes", "coreNum", "ubBytes", "rowInputs")
_MASK = (1 << 64) - 1


def _div(a: int, b: int) -> int:
    return a // b if b else 0


_FUNCS: dict[str, Callable[..., int]] = {
    "floordiv": _div,
    "ceildiv": lambda a, b: _div(a + b - 1, b) if b else 0,
    "alignup": lambda a, b: _div(a + b - 1, b) * b if b else 0,
    "aligndown": lambda a, b: _div(a, b) * b,
    "min2": min,
    "max2": max,
    "le": lambda a, b: int(a <= b),
    "pick": lambda c, a, b: a if c else b,
}

@dataclass(frozen=True)
class TilingField:
    """One computed tiling-data field (attributes are added from the spec)."""

    name: str
    ctype: str = "uint64_t"


@dataclass(frozen=True)
class Tiling:
    """The tiling of one kernel: its fields, the steps computing them and the block count.

    ``search``: the parameters ``opsdk tune`` may choose, name -> candidate values (integers
    >= 0, the first one the default); the steps read them by name like the facts.
    """

    op: str
    fields: tuple[TilingField, ...]
    steps: tuple[tuple[str, str], ...]
    block_dim: str
    search: Mapping[str, Sequence[int]] = field(default_factory=dict)
    #: facts beyond :data:`FACTS` that the kernel's tiling module computes per call
    #: (``call_facts``); such a tiling has no C++ form for the op_host yet
    facts: tuple[str, ...] = ()
    #: ``(name, input, axis)``: a fact holding dim ``axis`` of input number ``input`` (the op
    #: host's ``GetInputShape(input)``), for kernels whose tiling needs more than the facts.
    dims: tuple[tuple[str, int, int], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "search", {k: tuple(v) for k, v in dict(self.search).items()})
        for name, values in self.search.items():
            if not name.isidentifier() or name in FACTS or not values or any(
                    isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in values):
                raise SpecError(
                    f"{self.op}: search parameter {name!r} = {list(values)}: a parameter is a "
                    f"new name (not one of {', '.join(FACTS)}) with a non-empty list of "
                    "integers >= 0, the first one its default")
        known = (set(FACTS) | set(self.search) | set(self.facts)
                 | {name for name, _, _ in self.dims})
        for name, expr in self.steps:
            for used in _names(self.op, expr):
                if used not in known:
                    raise SpecError(
                        f"{self.op}: tiling step {name} = {expr} reads {used!r} before it is "
                        f"defined; known: {', '.join(sorted(known))}"
                    )
            known.add(name)
        missing = [f.name for f in self.fields if f.name not in known]
        if missing:
            raise SpecError(f"{self.op}: tiling fields {missing} have no step computing them")
        _names(self.op, self.block_dim)


def _names(op: str, expr: str) -> set[str]:
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as e:
        raise SpecError(f"{op}: tiling expression {expr!r} does not parse: {e.msg}") from None
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS:
                raise SpecError(
                    f"{op}: tiling expression {expr!r} calls something other than "
                    f"{', '.join(_FUNCS)}"
                )
            want = 3 if node.func.id == "pick" else 2
            if len(node.args) != want or node.keywords:
                raise SpecError(f"{op}: tiling expression {expr!r}: {node.func.id} takes "
                                f"{want} arguments, got {len(node.args)}")
        elif isinstance(node, ast.Name) and node.id not in _FUNCS:
            names.add(node.id)
        elif isinstance(node, ast.BinOp) and not isinstance(node.op, ast.Add | ast.Sub | ast.Mult):
            raise SpecError(f"{op}: tiling expression {expr!r} may use + - * and the functions "
                            f"{', '.join(_FUNCS)} only")
        elif isinstance(node, ast.Constant) and not isinstance(node.value, int):
            raise SpecError(f"{op}: tiling expression {expr!r} has a non-integer literal")
    return names


def _eval(node: ast.AST, env: Mapping[str, int]) -> int:
    if isinstance(node, ast.Expression):
        return _eval(node.body, env)
    if isinstance(node, ast.Constant):
        return int(node.value)  # type: ignore[arg-type]
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left, env), _eval(node.right, env)
        if isinstance(node.op, ast.Add):
            return (a + b) & _MASK
        return (a - b) & _MASK if isinstance(node.op, ast.Sub) else (a * b) & _MASK
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        args = [_eval(a, env) for a in node.args]
        return _FUNCS[node.func.id](*args) & _MASK
    raise SpecError(f"unsupported tiling expression node {ast.dump(node)}")  # pragma: no cover


def with_params(tiling: Tiling, table: Sequence[tuple[int | None, Mapping[str, int]]] = ()
                ) -> Tiling:
    """``tiling`` with its search parameters fixed: per shape bucket from ``table`` (rows
    ``(up_to, {name: value})`` sorted by ``up_to``, the last one None: calls with
    ``totalLength <= up_to`` take that row), else their defaults.

    Example:
        >>> t = Tiling("Demo", (TilingField("n"),), (("n", "min2(totalLength, cap)"),), "1",
        ...            search={"cap": [0, 256]})
        >>> with_params(t, [(1000, {"cap": 256}), (None, {"cap": 0})]).steps[0]
        ('cap', 'pick(le(totalLength, 1000), 256, 0)')
    """
    steps = []
    for name, values in tiling.search.items():
        rows = [(up, int(p.get(name, values[0]))) for up, p in table] or [(None, values[0])]
        expr = str(rows[-1][1])
        for up, value in reversed(rows[:-1]):
            expr = expr if str(value) == expr else f"pick(le(totalLength, {up}), {value}, {expr})"
        steps.append((name, expr))
    return Tiling(tiling.op, tiling.fields, (*steps, *tiling.steps), tiling.block_dim)


def evaluate(tiling: Tiling, facts: Mapping[str, int]) -> tuple[int, dict[str, int]]:
    """``(blockDim, {field: value})`` of ``tiling`` for one call's ``facts`` (its search
    parameters at their defaults unless fixed by :func:`with_params`).

    Example: see the module docstring.
    """
    if tiling.search:
        tiling = with_params(tiling)
    env = dict(facts)
    for name, expr in tiling.steps:
        env[name] = _eval(ast.parse(expr, mode="eval"), env)
    block_dim = _eval(ast.parse(tiling.block_dim, mode="eval"), env)
    return block_dim, {f.name: env[f.name] for f in tiling.fields}


def dim_facts(tiling: Tiling, shapes: Sequence[Sequence[int] | None]) -> dict[str, int]:
    """The facts of ``tiling.dims`` for one call's input ``shapes`` (None: an absent input).

    Example:
        >>> t = Tiling("Demo", (TilingField("h"),), (("h", "inH"),), "1", dims=(("inH", 0, -2),))
        >>> dim_facts(t, [(1, 3, 7, 9)])
        {'inH': 7}
    """
    out = {}
    for name, index, axis in tiling.dims:
        shape = shapes[index] if index < len(shapes) else None
        if shape is None or not -len(shape) <= axis < len(shape):
            raise SpecError(f"{tiling.op}: tiling fact {name} reads dim {axis} of input {index}, "
                            f"which has shape {None if shape is None else list(shape)}")
        out[name] = int(shape[axis])
    return out


def cpp_steps(tiling: Tiling, indent: str = "    ") -> str:
    """The steps as C++ statements (``const uint64_t name = expr;`` / ``tiling.set_...``).

    Example:
        >>> t = Tiling("Demo", (TilingField("n"),), (("n", "totalLength * 2"),), "1")
        >>> print(cpp_steps(t))
            const uint64_t n = totalLength * 2;
            tiling.set_n(static_cast<uint64_t>(n));
            const uint64_t blockDim = 1;
    """
    if tiling.search:
        tiling = with_params(tiling)
    ctypes = {f.name: f.ctype for f in tiling.fields}
    lines = []
    for name, expr in tiling.steps:
        lines.append(f"{indent}const uint64_t {name} = {expr};")
        if name in ctypes:
            lines.append(f"{indent}tiling.set_{name}(static_cast<{ctypes[name]}>({name}));")
    lines.append(f"{indent}const uint64_t blockDim = {tiling.block_dim};")
    return "\n".join(lines)


def cpp_tiling(tiling: Tiling) -> str:
    """The op_host TilingFunc statements of ``tiling``: facts, functions, steps, block count.

    Example:
        >>> t = Tiling("Demo", (TilingField("n"),), (("n", "totalLength * 2"),), "1")
        >>> "tiling.set_n(static_cast<uint64_t>(n));" in cpp_tiling(t)
        True
    """
    tiling = with_params(tiling) if tiling.search else tiling
    exprs = [e for _, e in tiling.steps] + [tiling.block_dim]
    table = any({"le", "pick"} & _called(e) for e in exprs)
    row_inputs = any("rowInputs" in _names(tiling.op, e) for e in exprs)
    from ._templates import render  # the facts and functions are C++ in a template file

    return render("aicore", "tiling_func", table=table, row_inputs=row_inputs,
                  steps=cpp_steps(tiling), dims=tiling.dims)


def _called(expr: str) -> set[str]:
    return {n.func.id for n in ast.walk(ast.parse(expr, mode="eval"))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
