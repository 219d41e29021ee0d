"""Build hooks of opsdk's own distribution (the metadata lives in pyproject.toml).

An installed opsdk must work without a checkout: ``opsdk new`` needs ``templates/``,
user CMake projects need ``cmake/OpsdkOperator.cmake``, and the shipped operators live in
``operators/``. ``build_py`` copies those top-level folders (sources only: no caches, no
build products) into ``opsdk/_data/`` of the wheel, where ``opsdk._paths.data_dir`` looks
first. MANIFEST.in puts the same folders into the sdist, so a wheel built from the sdist
has them too. Editable installs skip the copy and use the checkout's folders directly.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
DATA_DIRS = ("templates", "cmake", "operators")
IGNORE = shutil.ignore_patterns(
    "__pycache__", "*.pyc", "*.pyo", "*.so", "*.o", "*.a", ".*", "build", "dist", "*.log"
)


class BuildPyWithData(build_py):
    """``build_py`` that also ships templates/, cmake/ and operators/ as opsdk/_data/."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        data = Path(self.build_lib) / "opsdk" / "_data"
        shutil.rmtree(data, ignore_errors=True)  # no stale files from an earlier build
        for name in DATA_DIRS:
            src = ROOT / name
            if not src.is_dir():
                raise SystemExit(f"setup.py: {src} is missing; build opsdk from a full checkout "
                                 "or its sdist")
            shutil.copytree(src, data / name, ignore=IGNORE)


setup(cmdclass={"build_py": BuildPyWithData})
