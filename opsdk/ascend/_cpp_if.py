"""The code of an Ascend C source that one SoC family compiles: ``#if`` branches on
``__CCE_AICORE__`` that it does not take are dropped.

A kernel written for several families keeps each family's code under ``#if __CCE_AICORE__ ...``
(the compiler and the CPU-debug build define it: 100, 200, 220, 300). :func:`live_code` keeps
what ``arch`` compiles, so that an API named only in another family's branch does not count
against this one. A condition it cannot evaluate (a macro it does not know) keeps every branch,
as before. Integer macros ``#define``\\ d in the live code (``#define HAS_X 1``) are known.

Example:
    >>> src = "#if __CCE_AICORE__ == 200\\nA();\\n#else\\nB();\\n#endif\\n"
    >>> live_code(src, 200).split(), live_code(src, 220).split()
    (['A();'], ['B();'])
"""

from __future__ import annotations

import re

__all__ = ["live_code"]

_DIRECTIVE = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif|define)\b(.*)$")
_TOKEN = re.compile(r"\s*(\d+|[A-Za-z_]\w*|==|!=|<=|>=|&&|\|\||[()<>!])")
_PY = {"&&": " and ", "||": " or ", "!": " not "}


def _value(cond: str, macros: dict[str, int]) -> bool | None:
    """The truth of a preprocessor condition over known integer macros; None when a name in
    it is not known or it does not parse."""
    cond = re.sub(r"//.*|/\*.*?\*/", " ", cond).strip()
    unknown = False

    def _defined(m: re.Match[str]) -> str:
        nonlocal unknown
        name = m.group(1) or m.group(2)
        unknown |= name not in macros  # perhaps defined by the build: not known here
        return "1"

    cond = re.sub(r"\bdefined\s*(?:\(\s*([A-Za-z_]\w*)\s*\)|\s([A-Za-z_]\w*))",
                  _defined, cond)
    out, pos = [], 0
    while pos < len(cond):
        t = _TOKEN.match(cond, pos)
        if t is None:
            return None
        tok, pos = t.group(1), t.end()
        if re.fullmatch(r"[A-Za-z_]\w*", tok):
            if tok not in macros:
                return None
            tok = str(macros[tok])
        out.append(_PY.get(tok, tok))
    if unknown:
        return None
    try:
        return bool(eval(" ".join(out), {"__builtins__": {}}))  # noqa: S307 - tokens checked
    except SyntaxError:
        return None


def live_code(source: str, arch: int) -> str:
    """``source`` without the lines ``__CCE_AICORE__ == arch`` does not compile.

    Example: see the module docstring.
    """
    macros: dict[str, int] = {"__CCE_AICORE__": arch}
    # per open #if: (this branch is live, some earlier branch was taken, the conditions are known)
    stack: list[tuple[bool, bool, bool]] = []
    kept = []
    for line in source.splitlines(keepends=True):
        live = all(s[0] for s in stack)
        m = _DIRECTIVE.match(line)
        if m is None:
            if live:
                kept.append(line)
            continue
        kind, rest = m.group(1), m.group(2).strip()
        if kind == "define" and live:
            d = re.match(r"([A-Za-z_]\w*)(?:\s+(\d+))?\s*(?://.*)?$", rest)
            if d:
                macros[d.group(1)] = int(d.group(2) or 1)
        elif kind in ("if", "ifdef", "ifndef"):
            cond = rest if kind == "if" else ("" if kind == "ifdef" else "!") + f"defined({rest})"
            v = _value(cond, macros)
            stack.append((v is not False, v is True, v is not None))
        elif kind == "elif" and stack:
            _, taken, known = stack[-1]
            v = _value(rest, macros) if known and not taken else None
            stack[-1] = ((not taken) and v is not False, taken or v is True,
                         known and (taken or v is not None))
        elif kind == "else" and stack:
            _, taken, known = stack[-1]
            stack[-1] = (not (known and taken), True, known)
        elif kind == "endif" and stack:
            stack.pop()
    return "".join(kept)
