"""The scikit-build-core project ``opsdk package`` builds an operator wheel from.

The project is a dict ``{relative path: bytes}`` built by pure functions (so it can be
compared with golden files), then written to a folder::

    pyproject.toml              scikit-build-core backend, opsdk.operators entry point
    CMakeLists.txt              one opsdk_add_operator(... PORTABLE) per operator
    README.md
    cmake/OpsdkOperator.cmake   copies of the opsdk CMake module and C++ API, so the
    opsdk_api/include/...       project builds on its own (and paths never leak into
    opsdk_api/csrc/entry.cpp    the binaries)
    opsdk_api/csrc/py/*.h
    opsdk_api/csrc/runtime.cpp
    src/<pkg>/__init__.py       operator_folders(): the entry point
    src/<pkg>/opsdk_manifest.json
    src/<pkg>/operators/<op>/   the operator folder, plus onnx/ and cann/ artefacts
"""

from __future__ import annotations

import ast
import keyword
import os
import re
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import _paths
from .._generated import BANNER, render
from .._written import UnsafePath, check_relative, safe_target, walk_files, write_file
from ..errors import BuildError, OperatorNotFound, SpecError
from ..spec import OpSpec

__all__ = [
    "BANNER",
    "OpSource",
    "PackageName",
    "resolve_operators",
    "package_name",
    "operator_files",
    "left_out_files",
    "declared_data",
    "render_project",
    "write_tree",
]

_NAME_RE = re.compile(r"^([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9])$")
_SKIP_DIRS = {"__pycache__", "build", "dist", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
_SKIP_SUFFIXES = (".pyc", ".pyo", ".so", ".o", ".obj", ".a", ".dylib", ".pyd", ".log")
_GENERATED_DIRS = ("onnx", "cann")
_CXX_SUFFIXES = (".cpp", ".cc", ".cxx", ".h", ".hpp", ".hh", ".inc")


@dataclass(frozen=True)
class OpSource:
    """One operator to package: its source folder and spec."""

    folder: Path
    spec: OpSpec

    @property
    def snake(self) -> str:
        return self.spec.snake_name

    @property
    def qualified(self) -> str:
        return f"{self.spec.domain}::{self.spec.name}"


@dataclass(frozen=True)
class PackageName:
    """A distribution name (``acme-ops``), its import name (``acme_ops``) and version."""

    name: str
    import_name: str
    version: str


def _load(item: str | os.PathLike[str]) -> OpSource:
    from ..registry import find_operator, load_spec

    path = Path(item)
    if (path / "spec.py").is_file():
        folder = path.resolve()
        return OpSource(folder, load_spec(folder))
    if path.exists() or os.sep in str(item):
        raise OperatorNotFound(
            f"{item}: not an operator folder (no spec.py); give a folder created by "
            "`opsdk new` or an operator name"
        )
    info = find_operator(str(item))
    if info.origin == "wheel":
        raise OperatorNotFound(
            f"{item}: found only in the installed package {info.package!r} ({info.folder}); "
            "package an operator from its source folder"
        )
    return OpSource(info.folder, info.spec)


def resolve_operators(items: Sequence[str | os.PathLike[str]]) -> list[OpSource]:
    """Operator folders (or names) to package, checked: specs load, C++ sources exist, no
    operator or folder name twice.

    Example:
        >>> [o.qualified for o in resolve_operators(["operators/thresholded_relu"])]
        ... # doctest: +SKIP
        ['com.opsdk::ThresholdedRelu']
    """
    from ..build import operator_sources

    if not items:
        raise OperatorNotFound("opsdk package: give at least one operator folder or name")
    ops: list[OpSource] = []
    for item in items:
        op = _load(item)
        operator_sources(op.folder)  # BuildError when there is no kernel source
        for other in ops:
            if other.qualified == op.qualified or other.snake == op.snake:
                raise SpecError(
                    f"{op.qualified} ({op.folder}) and {other.qualified} ({other.folder}) "
                    f"would both be the package's operator {op.snake!r}; package one of them"
                )
        for sub in _GENERATED_DIRS:
            if (op.folder / sub).exists():
                raise SpecError(
                    f"{op.spec.name}: {op.folder / sub} exists, but opsdk package generates "
                    f"{sub}/ into the wheel; move that folder out of the operator folder"
                )
        ops.append(op)
    return ops


def _normalize_version(version: str) -> str:
    try:
        from packaging.version import InvalidVersion, Version
    except ImportError:  # pragma: no cover - packaging comes with pip's build tools
        if re.fullmatch(r"\d+(\.\d+)*", version):
            return version
        raise SpecError(f"--version {version!r}: use a version like 1.2.0") from None
    try:
        return str(Version(version))
    except InvalidVersion:
        raise SpecError(
            f"--version {version!r} is not a valid Python package version (PEP 440); "
            "use e.g. 1.2.0 or 1.2.0rc1"
        ) from None


def package_name(name: str | None, version: str, ops: Sequence[OpSource]) -> PackageName:
    """Validate (or derive, for a single operator) the package name; normalize the version.

    Example:
        >>> package_name("Acme-Ops", "1.2", []).import_name
        'acme_ops'
    """
    if name is None:
        if len(ops) != 1:
            names = ", ".join(o.spec.name for o in ops)
            raise SpecError(
                f"packaging {len(ops)} operators ({names}) needs a package name: "
                "pass --name, e.g. --name acme-ops"
            )
        name = "opsdk-op-" + ops[0].snake.replace("_", "-")
    if not _NAME_RE.match(name):
        raise SpecError(
            f"--name {name!r} is not a valid package name; use letters, digits, '-', '_' and "
            "'.', starting and ending with a letter or digit (e.g. acme-ops)"
        )
    import_name = re.sub(r"[-_.]+", "_", name).lower()
    if not import_name.isidentifier() or keyword.iskeyword(import_name) or import_name in (
        "opsdk",
        "operators",
    ):
        raise SpecError(
            f"--name {name!r}: its import name {import_name!r} is not usable as a Python "
            "package (it must not start with a digit nor be a keyword, 'opsdk' or 'operators')"
        )
    return PackageName(name, import_name, _normalize_version(version))


#: What of an operator folder ships (docs/packaging.md, "What of an operator folder ships"):
#: code and docs anywhere but in dot folders and build/cache folders, test data inside test
#: and golden folders, and the files spec.py declares in ``PACKAGE_DATA``. Everything else
#: stays behind (dotfiles, keys, binaries, logs, data files nobody declared).
_SHIP_SUFFIXES = (".py", ".md", ".rst", ".txt", ".cmake", *_CXX_SUFFIXES)
_SHIP_NAMES = ("LICENSE", "NOTICE", "COPYING")
_TEST_DATA_SUFFIXES = (".json", ".npy", ".npz", ".onnx", ".pbtxt")
_TEST_DIRS = {"tests", "test", "golden", "goldens", "testdata"}
_PACKAGE_DATA = "PACKAGE_DATA"


def _skip(rel: Path) -> bool:
    return (
        any(part in _SKIP_DIRS or part.startswith(".") for part in rel.parts)
        or rel.suffix in _SKIP_SUFFIXES
    )


def _ships(rel: str, is_dir: bool) -> bool:
    path = Path(rel)
    if _skip(path):
        return False
    if is_dir or path.suffix in _SHIP_SUFFIXES or path.stem.upper() in _SHIP_NAMES:
        return True
    return path.suffix in _TEST_DATA_SUFFIXES and bool(_TEST_DIRS & set(path.parts[:-1]))


def declared_data(folder: Path) -> list[str]:
    """The extra files spec.py declares with ``PACKAGE_DATA = ["tables/lut.bin", ...]``.

    Raises:
        SpecError: the declaration is not a list of strings, or names a path outside the
            folder or a file that does not exist.

    Example:
        >>> declared_data(Path("operators/thresholded_relu"))  # doctest: +SKIP
        []
    """
    spec = folder / "spec.py"
    tree = ast.parse(spec.read_text(), str(spec))
    assigned = [
        node.value for node in tree.body if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == _PACKAGE_DATA for t in node.targets)
    ]
    if not assigned:
        return []
    try:
        value = ast.literal_eval(assigned[-1])  # the last assignment, as Python runs it
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise ValueError("not a list of strings")
        out = [check_relative(v, f"{spec}: {_PACKAGE_DATA}") for v in value]
    except (ValueError, UnsafePath) as e:
        raise SpecError(
            f"{spec}: {_PACKAGE_DATA} must be a list of paths inside the operator folder, "
            f"e.g. {_PACKAGE_DATA} = ['tables/lut.bin'] ({e})"
        ) from None
    missing = [v for v in out if not (folder / v).is_file()]
    if missing:
        raise SpecError(f"{spec}: {_PACKAGE_DATA} lists {', '.join(missing)}, which is not a "
                        "file in the operator folder")
    return out


def operator_files(folder: Path) -> dict[str, bytes]:
    """The files of an operator folder that go into a package: sources, headers, Python,
    docs, test data and what spec.py declares in ``PACKAGE_DATA`` (see docs/packaging.md);
    never dotfiles, caches, builds, binaries or undeclared files.

    Raises:
        UnsafePath: a file or folder that would ship is a symlink (named): opsdk never
            follows a symlink out of the operator folder.

    Example:
        >>> sorted(operator_files(Path("operators/thresholded_relu")))  # doctest: +SKIP
        ['README.md', 'kernel.cpp', 'reference.py', 'spec.py', 'test_thresholded_relu.py']
    """
    rels = set(walk_files(folder, _ships))
    for rel in declared_data(folder):
        safe_target(folder, rel, f"{folder / 'spec.py'}: {_PACKAGE_DATA}")
        rels.add(rel)
    return {rel: (folder / rel).read_bytes() for rel in sorted(rels)}


def left_out_files(folder: Path) -> list[str]:
    """The files of an operator folder that do not ship (dot folders and builds not listed).

    Example:
        >>> left_out_files(Path("operators/thresholded_relu"))  # doctest: +SKIP
        []
    """
    shipped = set(operator_files(folder))
    out = []
    for here, dirs, files in os.walk(folder, followlinks=False):
        base = Path(here).relative_to(folder)
        dirs[:] = sorted(d for d in dirs if not _skip(base / d))
        out += [(base / f).as_posix() for f in files if not _skip(base / f)]
    return sorted(rel for rel in out if rel not in shipped)


def _api_files() -> dict[str, bytes]:
    files = {"cmake/OpsdkOperator.cmake": (_paths.data_dir("cmake") / "OpsdkOperator.cmake")}
    inc = _paths.include_dir()
    for header in sorted(inc.rglob("*")):
        if header.is_file() and header.suffix in (".h", ".hpp", ".inc"):
            files[f"opsdk_api/include/{header.relative_to(inc).as_posix()}"] = header
    files["opsdk_api/csrc/entry.cpp"] = _paths.entry_source()
    for part in _paths.entry_parts():
        files[f"opsdk_api/csrc/py/{part.name}"] = part
    files["opsdk_api/csrc/runtime.cpp"] = _paths.runtime_source()
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        raise BuildError(
            f"this opsdk install lacks {', '.join(missing)}; reinstall opsdk (pip install "
            "--force-reinstall opsdk)"
        )
    return {rel: p.read_bytes() for rel, p in files.items()}


def _op_context(op: OpSource) -> dict[str, Any]:
    spec = op.spec
    dtypes = sorted({d for i in spec.inputs for d in spec.allowed_dtypes(i.type)})
    return {
        "name": spec.name,
        "snake": op.snake,
        "domain": spec.domain,
        "version": spec.version,
        "qualified": op.qualified,
        "dtypes": dtypes,
    }


def render_project(
    pkg: PackageName,
    ops: Sequence[OpSource],
    *,
    cpu_baseline: str,
    isa_variants: Sequence[str] = (),
    manifest: dict[str, Any],
    artefacts: dict[str, dict[str, bytes]],
    exclude_sources: bool = False,
) -> dict[str, bytes]:
    """Every file of the build project, ``{relative path: bytes}``.

    Example:
        >>> files = render_project(pkg, ops, cpu_baseline="x86-64-v2", manifest={},
        ...                        artefacts={})  # doctest: +SKIP
        >>> "pyproject.toml" in files  # doctest: +SKIP
        True
    """
    import json

    from .._version import __version__

    major, minor = (int(x) for x in re.findall(r"\d+", __version__)[:2])
    # Patterns match paths relative to the package folder: the C++ files at the top of each
    # operator folder go, the generated cann/ project (C++ too) stays.
    exclude = [f"*{suffix}" for suffix in _CXX_SUFFIXES] if exclude_sources else []
    ctx = {
        "banner": BANNER,
        "name": pkg.name,
        "version": pkg.version,
        "import_name": pkg.import_name,
        "ops": [_op_context(o) for o in ops],
        "opsdk_minor": f"{major}.{minor}",
        "opsdk_next_minor": f"{major}.{minor + 1}",
        "cpu_baseline": cpu_baseline,
        "isa_variants": list(isa_variants),
        "exclude": [f"operators/*/{p}" for p in exclude],
        "python_tag": manifest.get("python", {}).get("cache_tag", "?"),
        "platform": manifest.get("platform", {}).get("tag", "?"),
    }
    files = {
        "pyproject.toml": render("package/templates/pyproject.toml.jinja", **ctx).encode(),
        "CMakeLists.txt": render("package/templates/CMakeLists.txt.jinja", **ctx).encode(),
        "README.md": render("package/templates/README.md.jinja", **ctx).encode(),
    }
    files.update(_api_files())
    src = f"src/{pkg.import_name}"
    files[f"{src}/__init__.py"] = render("package/templates/__init__.py.jinja", **ctx).encode()
    text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    files[f"{src}/opsdk_manifest.json"] = text.encode()
    for op in ops:
        for rel, data in operator_files(op.folder).items():
            files[f"{src}/operators/{op.snake}/{rel}"] = data
        for rel, data in artefacts.get(op.snake, {}).items():
            files[f"{src}/operators/{op.snake}/{rel}"] = data
    return dict(sorted(files.items()))


def write_tree(root: Path, files: dict[str, bytes], executable: Iterable[str] = ()) -> None:
    """Write ``files`` under ``root`` with fixed permissions (0644, 0755 for ``executable``),
    so the wheel does not depend on the author's umask."""
    run = set(executable)
    for rel, data in files.items():
        write_file(root, rel, data, 0o755 if rel in run or rel.endswith(".sh") else 0o644)


def copy_tree(src: Path, dst: Path) -> None:
    """Copy a finished project elsewhere (``--keep-project``), refusing to overwrite and
    to write through a symlink (dangling or not)."""
    if dst.is_symlink():
        raise UnsafePath(f"--keep-project {dst} is a symlink (to {os.readlink(dst)}); opsdk never "
                         "writes through a symlink: remove the link or choose another folder")
    if dst.exists():
        raise BuildError(f"--keep-project {dst}: it exists; opsdk never overwrites a folder")
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("build"))
