"""Find operators: source folders and installed operator wheels.

Search order (first match wins, later ones are listed as shadowed):

1. folders in ``$OPSDK_OPERATORS_PATH`` (``os.pathsep``-separated), each holding operator
   folders, the ``operators/`` of the operator project the current directory is in (a
   folder whose pyproject.toml has ``[tool.opsdk]``, as ``opsdk new`` starts it; see
   :mod:`opsdk._workspace`), and ``./operators``: the author's sources;
2. installed operator wheels, registered through the ``opsdk.operators`` entry point
   group (prebuilt kernels: never compiled on load);
3. the operators shipped with opsdk.

Two installed wheels defining the same ``domain::Op`` is an error naming both.

Example:
    >>> from opsdk.registry import find_operator
    >>> find_operator("ThresholdedRelu").domain  # doctest: +SKIP
    'com.opsdk'
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import os
import sys
import threading
import types
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from . import _paths
from .errors import OperatorNotFound, SpecError
from .spec import OpSpec

__all__ = [
    "OperatorInfo", "BrokenOperator", "find_operators", "find_operator", "load_spec",
    "ENTRY_POINT_GROUP",
]

ENTRY_POINT_GROUP = "opsdk.operators"


@dataclass
class OperatorInfo:
    """One operator opsdk can find."""

    spec: OpSpec
    folder: Path
    origin: str  # "source", "wheel", "shipped"
    package: str = ""  # the distribution that installed it, for wheels
    prebuilt: Path | None = None
    shadows: list[OperatorInfo] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def domain(self) -> str:
        return self.spec.domain

    @property
    def version(self) -> int:
        return self.spec.version

    @property
    def qualified(self) -> str:
        return f"{self.spec.domain}::{self.spec.name}"

    def describe(self) -> dict[str, object]:
        """A JSON-able summary for ``opsdk list --json``."""
        return {
            "name": self.name,
            "domain": self.domain,
            "version": self.version,
            "dtypes": {i.name: list(self.spec.allowed_dtypes(i.type)) for i in self.spec.inputs},
            "origin": self.origin,
            "package": self.package,
            "folder": str(self.folder),
            "prebuilt": str(self.prebuilt) if self.prebuilt else None,
            "shadows": [f"{s.origin}:{s.folder}" for s in self.shadows],
        }


_SPEC_CACHE: dict[tuple[str, float, float], OpSpec] = {}
# One import of an operator folder at a time: load_spec swaps the folder's package modules in
# sys.modules, which threads loading specs at once (an AscendcModel per worker thread) would
# tear from each other ("dictionary changed size during iteration"). Reentrant: a spec.py may
# load another operator's spec.
_IMPORT_LOCK = threading.RLock()


def _mtime(p: Path) -> float:
    return p.stat().st_mtime if p.exists() else 0.0


def load_spec(folder: str | os.PathLike[str]) -> OpSpec:
    """Import ``spec.py`` (and ``reference.py``) of an operator folder.

    The folder is imported as a package, so ``spec.py`` may use relative imports.

    Example:
        >>> load_spec("operators/thresholded_relu").name  # doctest: +SKIP
        'ThresholdedRelu'
    """
    folder = Path(folder).resolve()
    spec_file = folder / "spec.py"
    if not spec_file.is_file():
        raise OperatorNotFound(f"{folder}: no spec.py (an operator folder needs spec.py)")
    ref_file = folder / "reference.py"
    ck = (str(folder), _mtime(spec_file), _mtime(ref_file))
    with _IMPORT_LOCK:
        if ck in _SPEC_CACHE:
            return _SPEC_CACHE[ck]
        spec = _import_spec(folder, spec_file, ref_file)
        _SPEC_CACHE[ck] = spec
        return spec


def _import_spec(folder: Path, spec_file: Path, ref_file: Path) -> OpSpec:
    pkg = "_opsdk_op_" + hashlib.sha1(str(folder).encode()).hexdigest()[:12]
    for mod in [m for m in list(sys.modules) if m == pkg or m.startswith(pkg + ".")]:
        del sys.modules[mod]
    package = types.ModuleType(pkg)
    package.__path__ = [str(folder)]
    sys.modules[pkg] = package
    importlib.invalidate_caches()
    try:
        spec_mod = importlib.import_module(f"{pkg}.spec")
    except SpecError:
        raise
    except (Exception, SystemExit) as e:  # sys.exit() in spec.py is a broken spec, not an exit
        raise SpecError(f"{spec_file}: importing spec.py failed: {type(e).__name__}: {e}") from e
    spec = getattr(spec_mod, "SPEC", None)
    if not isinstance(spec, OpSpec):
        raise SpecError(f"{spec_file}: defines no SPEC = OpSpec(...)")
    if spec.reference is None and ref_file.is_file():
        try:
            ref_mod = importlib.import_module(f"{pkg}.reference")
        except (Exception, SystemExit) as e:
            raise SpecError(f"{ref_file}: importing failed: {type(e).__name__}: {e}") from e
        fn = getattr(ref_mod, "reference", None)
        if fn is None:
            raise SpecError(f"{spec.name}: {ref_file} defines no function 'reference'")
        spec.register_reference(fn)
    return spec


def _folders_in(root: Path) -> Iterable[Path]:
    if root.is_dir():
        for child in sorted(root.iterdir()):
            if (child / "spec.py").is_file():
                yield child


def _source_roots() -> list[Path]:
    from ._workspace import find_project, project_operators_dir

    roots = [Path(p) for p in os.environ.get("OPSDK_OPERATORS_PATH", "").split(os.pathsep) if p]
    project = find_project(Path.cwd())
    if project is not None:
        roots.append(project_operators_dir(project))
    roots.append(Path.cwd() / "operators")
    unique: dict[Path, Path] = {}  # the project's folder is ./operators when run at its top
    for r in roots:
        unique.setdefault(r.resolve(), r)
    return list(unique.values())


def _prebuilt_module(folder: Path) -> Path | None:
    found = sorted(folder.glob("_opsdk_kernels*.so"))
    return found[0] if found else None


def _wheel_operators() -> list[OperatorInfo]:
    infos: list[OperatorInfo] = []
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist.name if ep.dist is not None else ep.value
        try:
            folders = list(ep.load()())
        except Exception as e:
            raise OperatorNotFound(
                f"operator package {dist!r}: entry point {ep.value!r} failed: {e}"
            ) from e
        for f in folders:
            folder = Path(f)
            infos.append(
                OperatorInfo(load_spec(folder), folder, "wheel", dist, _prebuilt_module(folder))
            )
    return infos


@dataclass(frozen=True)
class BrokenOperator:
    """An operator folder whose spec.py (or reference.py) cannot be loaded, and why."""

    folder: Path
    error: str
    origin: str = "source"


def _load_into(
    candidates: list[OperatorInfo], folder: Path, origin: str, broken: list[BrokenOperator]
) -> None:
    try:
        candidates.append(OperatorInfo(load_spec(folder), folder.resolve(), origin))
    except SpecError as e:
        broken.append(BrokenOperator(folder.resolve(), str(e), origin))


def find_operators(broken: list[BrokenOperator] | None = None) -> list[OperatorInfo]:
    """Every operator opsdk can find, in precedence order (see the module docstring).

    A source folder whose spec.py cannot be loaded is left out and, when ``broken`` is a
    list, recorded there with its error, so one broken operator does not hide the others.

    Example:
        >>> broken = []
        >>> names = [o.name for o in find_operators(broken)]  # doctest: +SKIP
        >>> [(b.folder.name, b.error) for b in broken]  # doctest: +SKIP
        [('my_op', '.../my_op/spec.py: importing spec.py failed: NameError: ...')]
    """
    broken = [] if broken is None else broken
    candidates: list[OperatorInfo] = []
    seen_folders: set[Path] = set()
    for root in _source_roots():
        for folder in _folders_in(root):
            if folder.resolve() not in seen_folders:
                seen_folders.add(folder.resolve())
                _load_into(candidates, folder, "source", broken)
    wheels = _wheel_operators()
    by_name: dict[str, OperatorInfo] = {}
    for w in wheels:
        prev = by_name.get(w.qualified)
        if prev is not None and prev.package != w.package:
            raise SpecError(
                f"{w.qualified} is defined by two installed packages: {prev.package!r} "
                f"({prev.folder}) and {w.package!r} ({w.folder}); uninstall one of them"
            )
        by_name[w.qualified] = w
    candidates.extend(wheels)
    for folder in _folders_in(_paths.data_dir("operators")):
        if folder.resolve() not in seen_folders:
            _load_into(candidates, folder, "shipped", broken)
    result: dict[str, OperatorInfo] = {}
    for info in candidates:
        if info.qualified in result:
            result[info.qualified].shadows.append(info)
        else:
            result[info.qualified] = info
    return list(result.values())


def find_operator(name: str) -> OperatorInfo:
    """Find one operator by ``MyOp``, ``my_op``, ``domain::MyOp`` or a folder path.

    Example:
        >>> find_operator("thresholded_relu").name  # doctest: +SKIP
        'ThresholdedRelu'
    """
    p = Path(name)
    if (p / "spec.py").is_file():
        folder = p.resolve()
        return _verified(
            OperatorInfo(load_spec(folder), folder, "source", "", _prebuilt_module(folder))
        )
    broken: list[BrokenOperator] = []
    ops = find_operators(broken)
    matches = [o for o in ops if name in (o.name, o.qualified, o.spec.snake_name, o.folder.name)]
    for b in broken:
        if b.folder.name not in (name, _snake(name)):
            continue
        if not matches:
            raise SpecError(b.error)
        if b.origin == "source" and all(m.origin != "source" for m in matches):
            # the user's own folder would shadow it: never fall back to another silently
            raise SpecError(
                f"{b.error} -- {b.folder} would shadow the {matches[0].origin} "
                f"{matches[0].qualified} ({matches[0].folder}); fix it, or remove or rename "
                "the folder to use the other one"
            )
    if not matches:
        known = ", ".join(sorted(o.name for o in ops)) or "none"
        raise OperatorNotFound(
            f"operator {name!r} not found (known: {known}); create it with "
            f"'opsdk new {name}' or add its parent folder to OPSDK_OPERATORS_PATH"
        )
    if len(matches) > 1:
        raise OperatorNotFound(
            f"{name!r} is ambiguous: {', '.join(o.qualified for o in matches)}; use domain::Name"
        )
    return _verified(matches[0])


def _snake(name: str) -> str:
    from .naming import snake_case

    return snake_case(name.split("::")[-1])


def _verified(info: OperatorInfo) -> OperatorInfo:
    """Check a prebuilt kernel against its package manifest and this host before use
    (:class:`~opsdk.errors.ManifestError` on a mismatch, never an undefined-symbol crash)."""
    if info.prebuilt is not None or info.origin == "wheel":
        from ._prebuilt import verify_prebuilt

        info.prebuilt = verify_prebuilt(info.folder, info.prebuilt, package=info.package)
    return info
