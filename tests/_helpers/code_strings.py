"""Lines of code held in Python strings: the counter behind the project's "generated code
lives in template files" rule.

A string literal counts when it is not a docstring nor a command's help text (``HELP``,
``EPILOG``, ``help=``, ``description=``, ``epilog=``) and its text holds a line break that
is not the last character (``"\\n".join(...)``, a message ending in a newline and one-line
fragments do not count): each source line it spans is one line of code held in a string.
Implicitly joined pieces (``"a\\n" "b\\n"``) are one literal, so a block built from
one-line pieces counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "opsdk"


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of the module, its classes and functions."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                found.add(id(body[0].value))
    return found


_PROSE_NAMES = ("HELP", "EPILOG", "DESCRIPTION", "USAGE")
_PROSE_KEYWORDS = ("help", "description", "epilog", "usage")


def _prose(tree: ast.AST) -> set[int]:
    """ids of the help texts of commands: prose for a reader, not code."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id.endswith(_PROSE_NAMES) for t in node.targets):
            found.add(id(node.value))
        elif isinstance(node, ast.keyword) and node.arg in _PROSE_KEYWORDS:
            found.add(id(node.value))
    return found


def _text(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values
                       if isinstance(v, ast.Constant) and isinstance(v.value, str))
    return None


def string_blocks(path: Path) -> list[tuple[int, int]]:
    """``(first line, lines)`` of each literal of ``path`` that holds lines of code."""
    tree = ast.parse(path.read_text(), str(path))
    docs = _docstrings(tree) | _prose(tree)
    inner = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    out = []
    for node in ast.walk(tree):
        if id(node) in docs or id(node) in inner or not isinstance(node, ast.expr):
            continue
        text = _text(node)
        if text is None or "\n" not in text.rstrip("\n") or not text.strip():
            continue
        out.append((node.lineno, (node.end_lineno or node.lineno) - node.lineno + 1))
    return out


def code_string_lines(root: Path = PKG) -> dict[str, int]:
    """``{path relative to root's parent: lines}`` of every module holding code in strings.

    Example:
        >>> sum(code_string_lines().values()) >= 0
        True
    """
    counts = {}
    for path in sorted(root.rglob("*.py")):
        lines = sum(n for _, n in string_blocks(path))
        if lines:
            counts[path.relative_to(root.parent).as_posix()] = lines
    return counts


if __name__ == "__main__":
    found = code_string_lines()
    for rel, n in sorted(found.items(), key=lambda kv: -kv[1]):
        print(f"{n:5d}  {rel}")
    print(f"{sum(found.values()):5d}  total")
