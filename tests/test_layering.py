"""The package layers: onnx/ stays target-neutral (cann/ and triton/ import it, never the reverse)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "opsdk"


def _imported_modules(path: Path) -> set[str]:
    """Absolute names of the opsdk modules a file imports (relative imports resolved)."""
    package = ".".join(path.relative_to(PKG.parent).with_suffix("").parts[:-1])
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            names.add(mod)
            names.update(f"{mod}.{a.name}" for a in node.names)
    return names


@pytest.mark.parametrize("lower,upper", [("onnx", "cann"), ("onnx", "triton"), ("cann", "triton")])
def test_lower_layer_never_imports_upper(lower: str, upper: str) -> None:
    offenders = [
        f"{p.relative_to(PKG.parent)} imports {m}"
        for p in sorted((PKG / lower).rglob("*.py"))
        for m in sorted(_imported_modules(p))
        if m == f"opsdk.{upper}" or m.startswith(f"opsdk.{upper}.")
    ]
    assert not offenders, "\n".join(offenders)


def test_the_check_sees_relative_imports() -> None:
    assert "opsdk.onnx._model" in _imported_modules(PKG / "cann" / "doctor.py")
