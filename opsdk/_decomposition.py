"""``opsdk new --decomposition EXPR``: an ONNX decomposition written as one expression.

The expression calls ONNX operators by name (``Where(Greater(x, alpha), x, Mul(x, 0.1))``),
uses ``+ - * /`` and unary minus, the operator's inputs and attributes by name, and numeric
literals; keyword arguments become node attributes (``Cast(x, to=1)``). Numbers and numeric
attributes are cast to the first input's dtype (``CastLike``), as a decomposition that
computes in the input's dtype needs. Several outputs: expressions separated by ``;``.
:func:`decomposition_source` turns it into the ``@SPEC.register_function`` block of spec.py.

Example:
    >>> print(decomposition_source("Mul(x, alpha)", ["x"], {"alpha": "float"}))
    <BLANKLINE>
    <BLANKLINE>
    @SPEC.register_function
    def _decomposition(fb):  # type: ignore[no-untyped-def]
        \"\"\"Mul(x, alpha)\"\"\"
        x = fb.input("x")
        alpha = fb.op("CastLike", fb.op("Constant", value_float=fb.attr("alpha")), x)
        t1 = fb.op("Mul", x, alpha)
        return t1
    <BLANKLINE>
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence

from .errors import ScaffoldError

__all__ = ["decomposition_source"]

_BINOPS = {ast.Add: "Add", ast.Sub: "Sub", ast.Mult: "Mul", ast.Div: "Div"}
_CONST_KEYS = {"float": "value_float", "int": "value_int", "bool": "value_int",
               "string": "value_string"}


class _Writer:
    def __init__(self, inputs: Sequence[str], attrs: Mapping[str, str], expr: str) -> None:
        self.inputs, self.attrs, self.expr = list(inputs), dict(attrs), expr
        self.lines = [f'    {i} = fb.input("{i}")' for i in self.inputs]
        self.bound: dict[str, str] = {i: i for i in self.inputs}
        self.count = 0

    def fail(self, why: str) -> ScaffoldError:
        return ScaffoldError(f"--decomposition {self.expr!r}: {why}")

    def new(self, code: str) -> str:
        self.count += 1
        self.lines.append(f"    t{self.count} = {code}")
        return f"t{self.count}"

    def name(self, n: str) -> str:
        if n in self.bound:
            return self.bound[n]
        if n not in self.attrs:
            raise self.fail(f"{n!r} is neither an input ({', '.join(self.inputs)}) nor an "
                            f"attribute ({', '.join(self.attrs) or 'none'})")
        kind = self.attrs[n]
        if kind not in _CONST_KEYS:
            raise self.fail(f"attribute {n!r} of type {kind} cannot be used as a value")
        const = f'fb.op("Constant", {_CONST_KEYS[kind]}=fb.attr("{n}"))'
        code = const if kind == "string" else f'fb.op("CastLike", {const}, {self.inputs[0]})'
        self.lines.append(f"    {n} = {code}")
        self.bound[n] = n
        return n

    def number(self, v: float) -> str:
        return self.new(f'fb.op("CastLike", fb.op("Constant", value_float={float(v)!r}), '
                        f"{self.inputs[0]})")

    def value(self, node: ast.expr) -> str:
        if isinstance(node, ast.Name):
            return self.name(node.id)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float) \
                and not isinstance(node.value, bool):
            return self.number(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            operand = node.operand
            if isinstance(operand, ast.Constant) and isinstance(operand.value, int | float):
                return self.number(-operand.value)
            return self.new(f'fb.op("Neg", {self.value(node.operand)})')
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            a, b = self.value(node.left), self.value(node.right)
            return self.new(f'fb.op("{_BINOPS[type(node.op)]}", {a}, {b})')
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return self.call(node)
        raise self.fail(f"cannot use {ast.unparse(node)!r}: write ONNX calls such as "
                        "Mul(x, 2.0), inputs, attributes, numbers and + - * /")

    def call(self, node: ast.Call) -> str:
        assert isinstance(node.func, ast.Name)
        op = node.func.id
        if not op[:1].isupper():
            raise self.fail(f"{op}(...) is not an ONNX operator name (they start uppercase)")
        args = [self.value(a) for a in node.args]
        kws = []
        for k in node.keywords:
            try:
                value = ast.literal_eval(k.value) if k.arg is not None else None
            except ValueError:
                value = None
            if not _literal_ok(value):
                raise self.fail(f"keyword {k.arg}= of {op} must be a literal: a number, a "
                                "string or a list of numbers (axes=-1, axes=[-2, -1])")
            kws.append(f"{k.arg}={list(value) if isinstance(value, tuple) else value!r}")
        return self.new(f'fb.op("{op}", ' + ", ".join(args + kws) + ")")


def _literal_ok(value: object) -> bool:
    """A node attribute the writer takes: a number, a string, or a list of numbers."""
    if isinstance(value, list | tuple):
        return bool(value) and all(_literal_ok(v) and not isinstance(v, str | list | tuple)
                                   for v in value)
    return isinstance(value, int | float | str) and not isinstance(value, bool)


def decomposition_source(expr: str, inputs: Sequence[str], attrs: Mapping[str, str]) -> str:
    """The ``@SPEC.register_function`` block of spec.py for ``expr`` (see the module doc)."""
    w = _Writer(inputs, attrs, expr)
    results = []
    for part in [p.strip() for p in expr.split(";")]:
        try:
            tree = ast.parse(part, mode="eval")
        except SyntaxError as e:
            raise w.fail(f"does not parse: {e.msg}") from None
        results.append(w.value(tree.body))
    ret = results[0] if len(results) == 1 else "(" + ", ".join(results) + ")"
    doc = expr.replace('"""', "'''").replace("\\", "\\\\")
    body = "\n".join(w.lines)
    head = "\n\n@SPEC.register_function\ndef _decomposition(fb):  # type: ignore[no-untyped-def]\n"
    return head + f'    """{doc}"""\n{body}\n    return {ret}\n'
