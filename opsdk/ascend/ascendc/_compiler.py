"""The host compiler that builds kernels against opsdk's Ascend C model: g++ or clang++.

The model builds with both. It is taken from an explicit option (``opsdk ascendc run
--cxx``), else from ``$CXX``, else the first of c++, g++, clang++ on ``PATH``
(:func:`opsdk.build.toolchain`). ``clang++`` also finds a versioned Debian install
(``clang++-19``, ``clang++-16``: scripts/setup.d/25-clang.sh) when the plain name is absent.
The compiler's path and ``--version`` line are part of every model build's cache key.

Huawei's own kernel compiler is clang-based. Template-library kernels written as Huawei's
catlass writes them specialise a member template of the kernel class inside the class
(``template <> void operator()<AscendC::AIC>(...)``); GCC rejects explicit specialisations in
class scope (GCC bug 85282), so such kernels build on the model with clang++ only, and a
g++ build failing that way says so (:func:`compiler_hint`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache

from ...errors import BuildError

__all__ = ["ModelCompiler", "model_compiler", "compiler_hint", "find_clang"]

#: The clang releases looked for under versioned names, newest first (16 is the oldest tested).
CLANG_VERSIONS = tuple(range(30, 15, -1))

_GCC_85282 = re.compile(r"explicit specialization in non-namespace scope")


@dataclass(frozen=True)
class ModelCompiler:
    """A resolved host compiler: its path and first ``--version`` line (both in cache keys)."""

    path: str
    version: str

    @property
    def is_clang(self) -> bool:
        return "clang" in self.version.lower()


def find_clang() -> str | None:
    """The path of ``clang++``, else of the newest versioned ``clang++-N`` (N >= 16), else None.

    Example:
        >>> find_clang()  # doctest: +SKIP
        '/usr/bin/clang++-19'
    """
    for name in ("clang++", *(f"clang++-{v}" for v in CLANG_VERSIONS)):
        found = shutil.which(name)
        if found:
            return found
    return None


@lru_cache(maxsize=8)
def _version(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, check=False,
                             timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BuildError(f"the C++ compiler {path} does not run ({e}); pass another with --cxx "
                         "or CXX") from None
    lines = out.stdout.splitlines()
    return lines[0] if lines else "unknown"


def model_compiler(cxx: str | None = None, where: str = "--cxx") -> ModelCompiler:
    """The compiler a model build uses: ``cxx`` (a name on PATH or a path), else ``$CXX``,
    else the toolchain's default.

    Raises:
        BuildError: ``cxx`` (or ``$CXX``) names no compiler, with the fix.

    Example:
        >>> model_compiler("g++").path  # doctest: +SKIP
        '/usr/bin/g++'
        >>> model_compiler("clang++").version  # doctest: +SKIP
        'Debian clang version 19.1.7 (3~deb12u1)'
    """
    if cxx is None and os.environ.get("CXX"):
        cxx, where = os.environ["CXX"], "CXX"
    if cxx is None:
        from ...build import toolchain

        tc = toolchain()
        return ModelCompiler(tc.cxx, tc.cxx_version)
    path = shutil.which(cxx)
    if path is None and os.path.basename(cxx) in ("clang++", "clang"):
        path = find_clang()
    if path is None:
        raise BuildError(
            f"{where} {cxx!r}: no such C++ compiler on PATH; install it (scripts/setup.d/"
            "25-clang.sh installs clang++), or name another, e.g. --cxx g++ or --cxx clang++")
    return ModelCompiler(path, _version(path))


def compiler_hint(stderr: str, compiler: ModelCompiler) -> str:
    """A sentence naming the compiler issue behind a failed model build, or "".

    Example:
        >>> gcc = ModelCompiler("/usr/bin/g++", "g++ (Debian 12.2.0-14) 12.2.0")
        >>> compiler_hint("k.cpp:9:5: error: explicit specialization in non-namespace scope "
        ...               "'class K'", gcc)[:45]
        '/usr/bin/g++ rejects explicit specialisations'
    """
    if compiler.is_clang or not _GCC_85282.search(stderr):
        return ""
    return (f"{compiler.path} rejects explicit specialisations of a member template inside its "
            "class (GCC bug 85282), the style of template-library kernels such as Huawei's "
            "catlass (operator()<AscendC::AIC> / <AscendC::AIV> specialised in the kernel "
            "class); Huawei's kernel compiler is clang-based: build with clang++ (--cxx clang++ "
            "or CXX=clang++; scripts/setup.d/25-clang.sh installs it)")
