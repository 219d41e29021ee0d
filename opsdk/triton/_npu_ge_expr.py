"""The output-dim expressions npu_ge evaluates: writing them, and evaluating them as it does.

npu_ge sizes each variable output dim from the ONNX symbolic name of that dim, read with
ONNX Runtime (``ModelState::CreateInputdimToOutputdim``, ``Inference::GetDimNum``):

* the variables are the runs of ``[A-Za-z_][A-Za-z0-9_]*`` in the name (spaces removed),
  and each must be the symbolic name of an input dim, else the model fails to load
  (``"<name> have not find"``); so ``p2o.DynamicDimension.1`` is read as the two variables
  ``p2o`` and ``DynamicDimension``;
* each variable is replaced by its value, in sorted name order, wherever it occurs with no
  letter or digit on either side (``_`` is not a boundary character there, so ``h`` is also
  replaced inside ``x_h``);
* the result is read as infix arithmetic over non-negative integer literals with ``+ - * /``
  (``*`` and ``/`` before ``+`` and ``-``, left to right) and parentheses, every other
  character ignored, and computed with C ``int``: ``/`` truncates toward zero; there is no
  unary minus.

:func:`render` writes a :class:`~opsdk.onnx._dimexpr.Dim` in that grammar (each floor
division's numerator is non-negative in canonical form, so truncation equals floor);
:func:`evaluate` computes a name exactly as the backend does; :func:`check` refuses a name
the backend cannot evaluate.

Example:
    >>> from opsdk.onnx._dimexpr import Dim
    >>> w = Dim.symbol("w")
    >>> text = render((w + 1).floordiv(2).floordiv(4) * 3 - 1)
    >>> text, evaluate(text, {"w": 160})
    ('3*((w+1)/8)-1', 59)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from ..onnx._dimexpr import Dim, Floor
from ._errors import ExpressionError

__all__ = ["render", "evaluate", "check", "variables", "ExpressionError"]

_VAR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ALLOWED = re.compile(r"^[A-Za-z0-9_+\-*/() ]+$")
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


# ------------------------------------------------------------------------ writing
def render(dim: Dim) -> str:
    """``dim`` in npu_ge's grammar (a bare name, a number, or an expression)."""
    text = _sum(dim)
    if len(dim.terms) == 1 and dim.terms[0][1] == 1 and len(dim.terms[0][0]) == 1:
        atom = dim.terms[0][0][0]
        if isinstance(atom, Floor) and text.startswith("(") and text.endswith(")"):
            return text[1:-1]  # a lone division needs no outer parentheses
    return text


def _sum(dim: Dim) -> str:
    if not dim.terms:
        return "0"
    terms = sorted(dim.terms, key=lambda mc: mc[1] < 0)  # positive terms first
    out = ""
    for m, c in terms:
        body = "*".join(_atom(a) for a in m)
        mag = abs(c)
        text = body if mag == 1 and body else (f"{mag}*{body}" if body else str(mag))
        out += ("-" if c < 0 else ("+" if out else "")) + text
    return "0" + out if out.startswith("-") else out  # no unary minus in the grammar


def _atom(atom: str | Floor) -> str:
    if isinstance(atom, str):
        return atom
    num = atom.num
    simple = len(num.terms) == 1 and num.terms[0][1] >= 0 and len(num.terms[0][0]) <= 1
    inner = _sum(num) if simple else f"({_sum(num)})"
    return f"({inner}/{atom.den})"


# ---------------------------------------------------------------------- evaluating
def variables(name: str) -> list[str]:
    """The variables npu_ge finds in a symbolic name, in order, each once."""
    return list(dict.fromkeys(_VAR.findall(name.replace(" ", ""))))


def evaluate(name: str, values: Mapping[str, int]) -> int:
    """What npu_ge computes for the symbolic name ``name`` with input dims ``values``.

    Raises:
        ExpressionError: a variable is not in ``values`` (the backend fails the model
            load), the expression is malformed, divides by zero or leaves C ``int``.
    """
    names = variables(name)
    missing = [v for v in names if v not in values]
    if missing:
        raise ExpressionError(f"{', '.join(missing)} is not an input dim name")
    text = _replace(name, {v: values[v] for v in names})
    return _postfix_value(_to_postfix(text))


def _replace(formula: str, values: Mapping[str, int]) -> str:
    """``Inference::ReplaceVariables``: sorted names, letters and digits as boundaries."""
    out = formula
    for var in sorted(values):
        value = str(values[var])
        pos = out.find(var)
        while pos != -1:
            end = pos + len(var)
            before = pos == 0 or not out[pos - 1].isascii() or not out[pos - 1].isalnum()
            after = end == len(out) or not out[end].isascii() or not out[end].isalnum()
            if before and after:
                out = out[:pos] + value + out[end:]
                pos = out.find(var, pos + len(value))
            else:
                pos = out.find(var, end)
    return out


def _priority(op: str) -> int:
    return 1 if op in "+-" else (2 if op in "*/" else 0)


def _to_postfix(formula: str) -> list[str]:
    """``Inference::InfixToPostfix``; characters other than digits, ops and () are skipped."""
    stack: list[str] = []
    out: list[str] = []
    number = ""
    for c in formula:
        if c.isdigit() and c.isascii():
            number += c
            continue
        if number:
            out.append(number)
            number = ""
        if c == "(":
            stack.append(c)
        elif c == ")":
            while stack and stack[-1] != "(":
                out.append(stack.pop())
            if stack:
                stack.pop()
        elif c in "+-*/":
            while stack and _priority(stack[-1]) >= _priority(c):
                out.append(stack.pop())
            stack.append(c)
    if number:
        out.append(number)
    return out + stack[::-1]


def _postfix_value(tokens: Iterable[str]) -> int:
    """``Inference::EvaluatePostfix`` with C ``int`` arithmetic."""
    stack: list[int] = []
    for tok in tokens:
        if tok[0].isdigit():
            stack.append(int(tok))
        elif tok in ("+", "-", "*", "/"):
            if len(stack) < 2:
                raise ExpressionError("invalid expression (an operator lacks an operand)")
            b, a = stack.pop(), stack.pop()
            stack.append(_apply(a, b, tok))
    if len(stack) != 1:
        raise ExpressionError("invalid expression (operands without an operator)")
    return stack[0]


def _apply(a: int, b: int, op: str) -> int:
    if op == "/":
        if b == 0:
            raise ExpressionError("division by zero")
        q = abs(a) // abs(b)
        r = q if (a >= 0) == (b >= 0) else -q  # C truncates toward zero
    else:
        r = a + b if op == "+" else (a - b if op == "-" else a * b)
    if not _INT_MIN <= r <= _INT_MAX:
        raise ExpressionError(f"{a} {op} {b} overflows the C int npu_ge computes with")
    return r


# ------------------------------------------------------------------------ checking
def check(name: str, input_dims: Iterable[str]) -> None:
    """Refuse a symbolic name npu_ge cannot evaluate over the input dim names given.

    Raises:
        ExpressionError: characters outside the grammar, unbalanced parentheses, a variable
            that is no input dim name, or two variables that npu_ge's replacement mixes up.

    Example:
        >>> check("(w+1)/8", ["b", "w"])
        >>> check("h+x_h", ["h", "x_h"])
        Traceback (most recent call last):
        ...
        opsdk.triton._errors.ExpressionError: npu_ge replaces 'h' inside 'x_h' too (it \
stops a name only at letters and digits); rename one of these input dims
    """
    known = set(input_dims)
    if not _ALLOWED.match(name):
        bad = sorted(set(re.sub(r"[A-Za-z0-9_+\-*/() ]", "", name)))
        raise ExpressionError(f"{''.join(bad)!r} is not in npu_ge's grammar (names, "
                              "integers, + - * / and parentheses)")
    depth = 0
    for c in name:
        depth += 1 if c == "(" else (-1 if c == ")" else 0)
        if depth < 0:
            break
    if depth:
        raise ExpressionError("unbalanced parentheses")
    names = variables(name)
    unknown = [v for v in names if v not in known]
    if unknown:
        raise ExpressionError(f"{', '.join(unknown)} is not an input dim name")
    for a in names:
        for b in names:
            if a != b and _replace(b, {a: 1}) != b:
                raise ExpressionError(
                    f"npu_ge replaces {a!r} inside {b!r} too (it stops a name only at letters "
                    "and digits); rename one of these input dims")
    evaluate(name, {v: 7 for v in names})  # well-formed (operands and operators pair up)
