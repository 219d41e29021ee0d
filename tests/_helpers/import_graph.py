"""The import graph of the opsdk package, its floors, cycles and back arrows.

Every import counts: deferred ones inside functions, and those under ``if TYPE_CHECKING:``
(they never run, but they hide a cycle from the import system, not from a reader, who
still sees two modules that know each other). An import of ``opsdk.a.b`` is an
arrow to module ``opsdk.a.b``; ``from opsdk.a import b`` is one to ``opsdk.a.b`` when that
is a module, else to ``opsdk.a``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "opsdk"

#: The floors, bottom first. A module imports only modules of its own floor or below. A
#: module is placed by the longest entry that is a prefix of its name (``opsdk.`` dropped).
FLOORS: tuple[tuple[str, ...], ...] = (
    # the facts: typed spec, dtypes, errors, names, version, paths, banner and templates
    ("spec", "dtypes", "errors", "naming", "_version", "_paths", "_generated", "_isa",
     "_cross", "_written", "_toml", "_limits", "_torchable",
     "_text"),
    # finding, building, loading and running operators; the executor registry
    ("registry", "_prebuilt", "build", "runtime", "_fetch", "_decomposition", "scaffold",
     "_workspace", "_starters"),
    # the backends' facts: pure data every floor above may read (opsdk.ascend's face
    # imports nothing until a name is used, so importing these runs no generator)
    ("ascend.socs", "ascend.versions", "ascend.precision", "ascend.parser", "ascend._cpp",
     "ascend._op", "ascend._builtins", "ascend.spellings", "ascend.aicore_apis",
     "ascend._cpp_if", "ascend.errors"),
    ("testing",),
    ("onnx", "preprocess"),
    ("ascend", "cann"),
    ("triton",),
    ("package",),
    ("bench",),
    ("torch",),
    ("cli", "__main__"),
    ("__init__",),
)

#: Arrows allowed to run back up, each with its reason (at most 1).
ALLOWED_BACK_ARROWS: dict[tuple[str, str], str] = {
    ("opsdk.testing._cann_type", "opsdk.ascend.project._project"):
        "--opsdk-cann-project reads the manifest of a CANN project opsdk wrote",
}


#: At most this many arrows may reach past another wing's face into its private modules
#: (80 module pairs when this bound was set, 10 after the faces gained what others use).
MAX_REACH_INS = 20


def module_name(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def floor(module: str) -> int:
    """The floor of an opsdk module (the package face is the top floor)."""
    rest = module.split(".", 1)[1] if "." in module else "__init__"
    best = (-1, -1)  # (prefix length, floor)
    for level, names in enumerate(FLOORS):
        for name in names:
            if (rest == name or rest.startswith(name + ".")) and len(name) > best[0]:
                best = (len(name), level)
    if best[1] < 0:
        raise KeyError(f"{module} is on no floor; add it to FLOORS in {__file__}")
    return best[1]


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    return (n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)))


def imports(path: Path, known: dict[str, Path], name: str = "") -> set[str]:
    """The opsdk modules ``path`` (module ``name``, by default its own) imports."""
    me = name or module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: set[str] = set()
    for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in known)
            continue
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            mod = ".".join(base + ([node.module] if node.module else []))
        else:
            mod = node.module or ""
        for a in node.names:
            sub = f"{mod}.{a.name}"
            if sub in known:
                found.add(sub)
            elif mod in known:
                found.add(mod)
    found.discard(me)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {m: imports(p, known) for m, p in known.items()}


def back_arrows(g: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Arrows from a module to one on a higher floor."""
    return sorted((a, b) for a, targets in g.items() for b in targets if floor(b) > floor(a))


def wing(module: str) -> str:
    """The wing of an opsdk module: its first name below ``opsdk`` (``opsdk.ascend.atc._atc``
    is in ``ascend``; ``opsdk._paths`` is a wing of its own)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def private(module: str) -> bool:
    """A module a wing keeps to itself: a name below the wing that starts with ``_``."""
    return any(p.startswith("_") for p in module.split(".")[2:])


def reach_ins(g: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Arrows from one wing into another wing's private module (past its face)."""
    return sorted((a, b) for a, targets in g.items() for b in targets
                  if wing(a) != wing(b) and private(b))


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return sorted(out)


if __name__ == "__main__":  # python tests/_helpers/import_graph.py: the figures
    g = graph()
    arrows = back_arrows(g)
    cyc = cycles(g)
    print(f"{len(g)} modules, {sum(map(len, g.values()))} arrows")
    print(f"{len(arrows)} back arrows:")
    for a, b in arrows:
        print(f"  {a} (floor {floor(a)}) -> {b} (floor {floor(b)})")
    reach = reach_ins(g)
    print(f"{len(reach)} reach-ins into another wing's private modules:")
    for a, b in reach:
        print(f"  {a} -> {b}")
    print(f"{len(cyc)} cycles, largest {max((len(c) for c in cyc), default=0)}:")
    for c in cyc:
        print(f"  {len(c)}: {' '.join(c)}")
