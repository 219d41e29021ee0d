"""Where a user's operators live: an operator project, or opsdk's own checkout.

An operator project is a folder holding ``pyproject.toml`` with a ``[tool.opsdk]`` table and
its operators in ``operators/<op>/``. ``opsdk new`` starts one in a folder outside opsdk's
checkout; the registry searches the project the current directory is in (and the folders of
``$OPSDK_OPERATORS_PATH``); ``opsdk package`` without operators packages the project's.
Inside opsdk's own checkout ``operators/`` is the set opsdk ships.

Example:
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> start_project(root, "MyOp")
    ['pyproject.toml']
    >>> find_project(root / "operators") == root.resolve()
    True
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from ._paths import PACKAGE_DIR, data_dir
from ._toml import read_toml
from ._written import write_file
from .errors import ScaffoldError

__all__ = ["opsdk_checkout", "in_checkout", "find_project", "project_table", "start_project",
           "project_operators_dir"]


@lru_cache(maxsize=1)
def opsdk_checkout() -> Path | None:
    """The source checkout this opsdk runs from (``pip install -e`` or PYTHONPATH), or None
    for an installed copy."""
    root = PACKAGE_DIR.parent
    if not (root / "operators").is_dir() or not (root / "pyproject.toml").is_file():
        return None
    try:
        name = read_toml(root / "pyproject.toml", ScaffoldError).get("project", {}).get("name")
    except ScaffoldError:
        return None
    return root if name == "opsdk" else None


def in_checkout(path: Path) -> bool:
    """Whether ``path`` is inside opsdk's own checkout."""
    root = opsdk_checkout()
    return root is not None and path.resolve().is_relative_to(root)


def project_table(folder: Path) -> dict[str, Any] | None:
    """``folder/pyproject.toml``'s tables when it marks an operator project, else None."""
    try:
        tables = read_toml(folder / "pyproject.toml", ScaffoldError)
    except ScaffoldError:
        return None
    return tables if isinstance(tables.get("tool", {}).get("opsdk"), dict) else None


def find_project(start: Path) -> Path | None:
    """The operator project ``start`` is in (the nearest folder at or above it whose
    pyproject.toml has ``[tool.opsdk]``), never opsdk's own checkout."""
    here = start.resolve()
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").is_file() and project_table(folder) is not None:
            return None if in_checkout(folder) else folder
    return None


def project_operators_dir(project: Path) -> Path:
    """The operators folder of a project (``[tool.opsdk] operators``, default operators)."""
    table = project_table(project) or {}
    return project / str(table.get("tool", {}).get("opsdk", {}).get("operators", "operators"))


def start_project(folder: Path, op_name: str) -> list[str]:
    """Make ``folder`` an operator project: its ``pyproject.toml`` (named after the folder)
    when there is none; an existing one is never touched. Returns the files written.

    Raises:
        ScaffoldError: ``folder`` is inside opsdk's own checkout.
    """
    if in_checkout(folder):
        raise ScaffoldError(f"{folder} is inside opsdk's checkout: its operators/ is the set "
                            "opsdk ships; start a project in a folder outside it")
    if (folder / "pyproject.toml").exists():
        return []
    from ._generated import environment
    from ._version import __version__

    major, minor = (int(x) for x in re.findall(r"\d+", __version__)[:2])
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", folder.resolve().name).strip("-.") or "my-operators"
    text = (data_dir("templates") / "project" / "pyproject.toml.jinja").read_text()
    write_file(folder, "pyproject.toml", environment().from_string(text).render(
        name=name, op_name=op_name, opsdk_minor=f"{major}.{minor}",
        opsdk_next_minor=f"{major}.{minor + 1}",
        operators_dir=str(folder.resolve() / "operators")))
    return ["pyproject.toml"]
