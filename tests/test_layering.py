"""The package layers (docs/architecture.md): the import graph has no cycle (imports under
``if TYPE_CHECKING:`` count), no arrow running back up the floors beyond an allow-list of
one, and at most :data:`MAX_REACH_INS` imports of another wing's private modules; onnx/ stays target-neutral; no
module inside the package imports the package face (opsdk/__init__)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests._helpers.import_graph import (
    ALLOWED_BACK_ARROWS,
    FLOORS,
    MAX_REACH_INS,
    back_arrows,
    cycles,
    floor,
    graph,
    imports,
    modules,
    private,
    reach_ins,
    wing,
)

PKG = Path(__file__).resolve().parents[1] / "opsdk"


def test_every_module_is_on_a_floor() -> None:
    for m in modules():
        floor(m)  # KeyError names the module and where to place it


def test_no_import_cycle() -> None:
    found = cycles(graph())
    assert not found, "import cycles (deferred imports count):\n" + "\n".join(
        " -> ".join(c) for c in found)


def test_no_arrow_runs_back_up_beyond_the_allow_list() -> None:
    assert len(ALLOWED_BACK_ARROWS) <= 1
    arrows = back_arrows(graph())
    new = [f"{a} (floor {floor(a)}) imports {b} (floor {floor(b)})"
           for a, b in arrows if (a, b) not in ALLOWED_BACK_ARROWS]
    assert not new, "arrows back up the floors:\n" + "\n".join(new)
    stale = set(ALLOWED_BACK_ARROWS) - set(arrows)
    assert not stale, f"allow-listed arrows that no longer exist; drop them: {sorted(stale)}"


def test_wings_import_each_others_faces() -> None:
    found = reach_ins(graph())
    assert len(found) <= MAX_REACH_INS, (
        f"{len(found)} imports reach past another wing's face (at most {MAX_REACH_INS}); "
        "import the name from the wing's face (add it there if others really use it):\n"
        + "\n".join(f"{a} -> {b}" for a, b in found))


def test_a_reach_in_is_a_private_module_of_another_wing() -> None:
    assert wing("opsdk.ascend.atc._atc") == "ascend" and wing("opsdk._paths") == "_paths"
    assert private("opsdk.onnx._model") and private("opsdk.ascend.atc._atc")
    assert not private("opsdk.ascend.atc") and not private("opsdk._paths")
    g = {"opsdk.triton._check": {"opsdk.onnx._model", "opsdk.onnx", "opsdk.triton._errors"},
         "opsdk.onnx._probe": {"opsdk.onnx._model"}}
    assert reach_ins(g) == [("opsdk.triton._check", "opsdk.onnx._model")]


def test_the_graph_counts_deferred_and_type_checking_imports(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ..triton import _config\n"
        "def f():\n    from ..package import _wheel\n    import opsdk.cli\n",
        encoding="utf-8")
    found = imports(probe, modules(), "opsdk.runtime.probe")
    assert found == {"opsdk.triton._config", "opsdk.package._wheel", "opsdk.cli"}
    assert back_arrows({"opsdk.spec": {"opsdk.cli"}}) == [("opsdk.spec", "opsdk.cli")]
    assert cycles({"opsdk.a": {"opsdk.b"}, "opsdk.b": {"opsdk.a"}}) == [["opsdk.a", "opsdk.b"]]
    assert floor("opsdk.ascend.precision") < floor("opsdk.testing") < floor("opsdk.ascend")
    assert FLOORS[0][:5] == ("spec", "dtypes", "errors", "naming", "_version")


def test_the_ascend_facts_import_no_generator() -> None:
    """opsdk.ascend's face is lazy: the floors below may read the wing's facts."""
    code = ("import sys, opsdk.ascend.precision, opsdk.ascend.versions, opsdk.ascend._op\n"
            "print(sorted(m for m in sys.modules if m.startswith(('opsdk.ascend.project', "
            "'opsdk.ascend.atc', 'opsdk.ascend.ascendc', 'opsdk.onnx', 'opsdk.triton'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=PKG.parent, check=True).stdout
    assert out.strip() == "[]"
    import opsdk.ascend

    assert opsdk.ascend.plan_package.__module__ == "opsdk.ascend.project._project"


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


@pytest.mark.parametrize("lower,upper", [("onnx", "ascend"), ("onnx", "triton"), ("ascend", "triton"),
                                         ("preprocess", "ascend"), ("preprocess", "triton")])
def test_lower_layer_never_imports_upper(lower: str, upper: str) -> None:
    offenders = [
        f"{p.relative_to(PKG.parent)} imports {m}"
        for p in sorted((PKG / lower).rglob("*.py"))
        for m in sorted(_imported_modules(p))
        if m == f"opsdk.{upper}" or m.startswith(f"opsdk.{upper}.")
    ]
    assert not offenders, "\n".join(offenders)


def test_the_check_sees_relative_imports() -> None:
    assert "opsdk.onnx.load_model" in _imported_modules(PKG / "ascend" / "atc" / "doctor.py")


def _face_imports(path: Path, package: str = "") -> list[str]:
    """Names a file takes from the package face: ``import opsdk`` or ``from opsdk import X``
    where X is no submodule (``from .. import _paths`` imports a module, not the face)."""
    package = package or ".".join(path.relative_to(PKG.parent).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name == "opsdk"]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod == "opsdk":
                found += [
                    f"from opsdk import {a.name}" for a in node.names
                    if not (PKG / a.name).is_dir() and not (PKG / f"{a.name}.py").is_file()
                ]
    return found


def test_no_module_imports_the_package_face() -> None:
    offenders = [
        f"{p.relative_to(PKG.parent)}: {what}"
        for p in sorted(PKG.rglob("*.py"))
        if p != PKG / "__init__.py"
        for what in _face_imports(p)
    ]
    assert not offenders, "\n".join(offenders)


def test_the_face_check_sees_a_face_import(tmp_path: Path) -> None:
    good = PKG / "runtime" / "_load.py"
    assert _face_imports(good) == []
    probe = tmp_path / "probe.py"
    probe.write_text(good.read_text(encoding="utf-8") + "\nfrom .. import load as _l\n"
                     "from .. import _paths\nimport opsdk\n", encoding="utf-8")
    assert sorted(_face_imports(probe, "opsdk.runtime")) == ["from opsdk import load", "opsdk"]


def test_cann_alias_warns_and_gives_the_ascend_names() -> None:
    import importlib
    import sys

    import opsdk.ascend
    import opsdk.ascend.ascendc

    for old, new in (("opsdk.cann", opsdk.ascend), ("opsdk.cann.ascendc", opsdk.ascend.ascendc)):
        sys.modules.pop(old, None)
        with pytest.warns(DeprecationWarning, match="import opsdk.ascend"):
            mod = importlib.import_module(old)
        assert mod.__all__ == new.__all__
        assert all(getattr(mod, n) is getattr(new, n) for n in new.__all__)


def test_no_test_module_imports_another() -> None:
    """Shared helpers live in tests/_helpers or conftest.py, not in test modules."""
    root = PKG.parent
    offenders = []
    for path in sorted([*(root / "tests").rglob("test_*.py"), *(root / "operators").rglob("test_*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.relative_to(root)} imports {n}" for n in names
                          if n.split(".")[-1].startswith("test_")]
    assert not offenders, "\n".join(offenders)


def test_only_the_cli_reaches_up_into_opsdk_torch() -> None:
    """opsdk.torch sits on top (it needs torch); below it only the CLI imports it, lazily."""
    offenders = [
        f"{p.relative_to(PKG.parent)} imports {m}"
        for p in sorted(PKG.rglob("*.py"))
        if PKG / "torch" not in p.parents and PKG / "cli" not in p.parents
        for m in sorted(_imported_modules(p))
        if m == "opsdk.torch" or m.startswith("opsdk.torch.")
    ]
    assert not offenders, "\n".join(offenders)


def test_tests_mirror_the_code() -> None:
    """Each test's folder names the wing it guards: tests/<wing>/ for opsdk/<wing>/, and only
    the floor's tests (spec, scaffold, build, workspace, the house rules) stay in tests/."""
    tests = PKG.parent / "tests"
    wings = {p.name for p in tests.iterdir()
             if p.is_dir() and any(p.glob("test_*.py"))}
    strays = sorted(w for w in wings if not (PKG / w / "__init__.py").exists())
    assert not strays, f"tests/{strays} guard no wing of opsdk (no opsdk/<name>/__init__.py)"
    missing_init = sorted(w for w in wings if not (tests / w / "__init__.py").exists())
    assert not missing_init, f"tests/{missing_init} need an __init__.py (tests are packages)"
    floor = {p.stem.removeprefix("test_") for p in tests.glob("test_*.py")}
    wing_named = sorted(f for f in floor if f.split("_")[0] in wings | {"cann", "ascendc"})
    assert not wing_named, f"tests/test_{wing_named}.py belong in their wing's folder"
