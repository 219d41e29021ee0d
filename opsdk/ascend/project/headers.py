"""CANN's public C/C++ headers, for compile checks of generated code on hosts without CANN.

An installed CANN toolkit (``$ASCEND_HOME_PATH``, ``$ASCEND_TOOLKIT_HOME`` or
``/usr/local/Ascend/ascend-toolkit/latest``) is preferred. Otherwise the headers come from
the torch-npu wheel on the package index, which ships them under
``torch_npu/include/third_party/acl/inc`` (graph/operator_reg.h, acl/acl.h, ...): ``fetch()``
downloads the wheel for this platform with ``pip download --no-deps``, extracts only the
headers into ``$OPSDK_CACHE_DIR/cann-headers`` and deletes the wheel. Nothing is committed.

Run once (CI does): ``python -m opsdk.ascend.project.headers --fetch``.

Example:
    >>> from opsdk.ascend.project.headers import find_headers
    >>> h = find_headers()  # doctest: +SKIP
    >>> (h.include / "graph" / "operator_reg.h").is_file()  # doctest: +SKIP
    True
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..._fetch import FetchError, pip_download
from ..errors import HeadersUnavailable

__all__ = [
    "HeaderSet",
    "find_headers",
    "fetch",
    "toolkit_include",
    "aicpu_include",
    "cache_include",
    "main",
    "torch_npu_include",
]

WHEEL_PACKAGE = "torch-npu"
WHEEL_PREFIX = "torch_npu/include/third_party/acl/inc/"
_MARKERS = ("graph/operator_reg.h", "graph/operator.h", "acl/acl.h", "acl/acl_op_compiler.h")
#: torch_npu's own headers, kept beside CANN's from the same wheel (the torch NPU kernels
#: compile against them: opsdk.torch._npu_ext)
TORCH_NPU_PREFIX = "torch_npu/include/"
_TORCH_NPU_MARKERS = ("torch_npu/csrc/core/npu/NPUStream.h", "torch_npu/csrc/framework/OpCommand.h",
                      "third_party/acl/inc/acl/acl_base.h")
_TOOLKIT_DEFAULT = Path("/usr/local/Ascend/ascend-toolkit/latest")


@dataclass(frozen=True)
class HeaderSet:
    """An include directory holding CANN's public headers and where it came from."""

    include: Path
    source: str


def _complete(include: Path) -> bool:
    return all((include / m).is_file() for m in _MARKERS)


def _arch_dirs() -> list[str]:
    """``<arch>-linux`` folder names a toolkit may have, this host's first."""
    import platform

    return [f"{a}-linux" for a in dict.fromkeys([platform.machine(), "aarch64", "x86_64"])]


def toolkit_include(root: Path | None = None) -> Path | None:
    """The include dir of an installed CANN toolkit, or None: ``include`` (the installer's
    softlink) or ``<arch>-linux/include`` (where the files are). ``root`` defaults to the
    toolkit of ``$ASCEND_HOME_PATH``, ``$ASCEND_TOOLKIT_HOME`` or the default prefix."""
    if root is not None:
        roots = [root]
    else:
        env = [os.environ.get("ASCEND_HOME_PATH"), os.environ.get("ASCEND_TOOLKIT_HOME")]
        roots = [Path(r) for r in env if r] + [_TOOLKIT_DEFAULT]
    for base in roots:
        for rel in ["include", *(f"{a}/include" for a in _arch_dirs())]:
            if _complete(base / rel):
                return base / rel
    return None


#: Where toolkits keep the AI CPU kernel API (cpu_kernel.h, cust_cpu_utils.h), looked up in
#: order under the toolkit root: the files (``<arch>-linux/include/aicpu``, from the OPP
#: package's filelist) and the installer's softlinks to them. No package on the index ships
#: these headers.
def _aicpu_dirs() -> list[str]:
    return [
        *(f"{a}/include/aicpu" for a in _arch_dirs()),
        "opp/built-in/op_impl/aicpu/aicpu_kernel/inc",
        "include/aicpu",
    ]


def aicpu_include(root: Path | None = None) -> Path | None:
    """The folder holding an installed toolkit's AI CPU kernel headers (``cpu_kernel.h``), or
    None; ``root`` defaults to the installed toolkit (:func:`opsdk.ascend.toolkit_root`).

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> (root / "aarch64-linux" / "include" / "aicpu").mkdir(parents=True)
        >>> _ = (root / "aarch64-linux" / "include" / "aicpu" / "cpu_kernel.h").write_text("")
        >>> aicpu_include(root).relative_to(root).as_posix()
        'aarch64-linux/include/aicpu'
    """
    from ..versions import toolkit_root

    root = root if root is not None else toolkit_root()
    if root is None:
        return None
    for rel in _aicpu_dirs():
        if (root / rel / "cpu_kernel.h").is_file():
            return root / rel
    return None


def _cache_root() -> Path:
    from ...build import cache_dir

    return cache_dir() / "cann-headers"


def cache_include() -> Path:
    """Where fetched headers live: ``<opsdk cache>/cann-headers/inc``."""
    return _cache_root() / "inc"


def torch_npu_include() -> Path | None:
    """The fetched wheel's ``torch_npu/include`` folder, or None when none was fetched.

    Example:
        >>> p = torch_npu_include()
        >>> p is None or (p / "torch_npu").is_dir()
        True
    """
    inc = _cache_root() / "torch_npu" / "include"
    return inc if all((inc / m).is_file() for m in _TORCH_NPU_MARKERS) else None


def find_headers() -> HeaderSet | None:
    """The toolkit's headers if installed, else previously fetched ones, else None."""
    tk = toolkit_include()
    if tk is not None:
        return HeaderSet(tk, f"CANN toolkit at {tk.parent}")
    inc = cache_include()
    if _complete(inc):
        src = (
            (_cache_root() / "SOURCE").read_text().strip()
            if (_cache_root() / "SOURCE").is_file()
            else "?"
        )
        return HeaderSet(inc, f"{src} (fetched)")
    return None


def _matching_torch() -> str | None:
    """The installed torch's release (``2.13.0`` of ``2.13.0+cpu``), read from its metadata."""
    from importlib import metadata

    try:
        return metadata.version("torch").split("+")[0]
    except metadata.PackageNotFoundError:
        return None


def _download(dest: Path, version: str | None, timeout: float) -> Path:
    req = WHEEL_PACKAGE + (f"=={version}" if version else "")
    torch_release = _matching_torch() if version is None else None
    try:
        if torch_release:
            try:  # the torch-npu release of the installed torch, whose headers match it
                return pip_download(f"{WHEEL_PACKAGE}=={torch_release}", dest, timeout)
            except FetchError:
                pass
        return pip_download(req, dest, timeout)
    except FetchError as e:
        raise HeadersUnavailable(
            f"{e} (for this platform); or install a CANN toolkit"
        ) from None


def _extract(wheel: Path, target: Path, prefix: str = WHEEL_PREFIX,
             markers: tuple[str, ...] = _MARKERS) -> int:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix="inc-"))
    count = 0
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            name = info.filename
            if not name.startswith(prefix) or not name.endswith((".h", ".hpp")):
                continue
            rel = Path(name[len(prefix) :])
            if rel.is_absolute() or ".." in rel.parts:
                continue
            out = tmp / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(zf.read(info))
            count += 1
    if not all((tmp / m).is_file() for m in markers):
        shutil.rmtree(tmp, ignore_errors=True)
        raise HeadersUnavailable(f"{wheel.name} does not ship {', '.join(markers)}")
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    return count


def fetch(version: str | None = None, *, force: bool = False, timeout: float = 600.0) -> HeaderSet:
    """Download torch-npu (no dependencies), keep only CANN's headers in the cache.

    Returns the cached set, or the toolkit's when one is installed (unless ``force``).

    Example:
        >>> fetch().include.name  # doctest: +SKIP
        'inc'
    """
    if not force:
        found = find_headers()
        if found is not None and (found.source.startswith("CANN toolkit")
                                  or torch_npu_include() is not None):
            return found
    root = _cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix="wheel-") as tmp:
        wheel = _download(Path(tmp), version, timeout)
        _extract(wheel, cache_include())
        _extract(wheel, root / "torch_npu" / "include", TORCH_NPU_PREFIX, _TORCH_NPU_MARKERS)
        (root / "SOURCE").write_text(wheel.name + "\n")
    return HeaderSet(cache_include(), f"{wheel.name} (fetched)")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m opsdk.ascend.project.headers [--fetch] [--version V] [--force]``."""
    p = argparse.ArgumentParser(
        prog="python -m opsdk.ascend.project.headers", description=__doc__.split("\n")[0]
    )
    p.add_argument("--fetch", action="store_true", help="download the headers if none are found")
    p.add_argument("--version", help="torch-npu version to take the headers from")
    p.add_argument("--force", action="store_true", help="fetch even if headers are present")
    args = p.parse_args(argv)
    try:
        hs = fetch(args.version, force=args.force) if args.fetch else find_headers()
    except HeadersUnavailable as e:
        print(f"cann headers: {e}", file=sys.stderr)
        return 1
    if hs is None:
        print(
            "cann headers: none found; run `python -m opsdk.ascend.project.headers --fetch`",
            file=sys.stderr,
        )
        return 1
    print(f"{hs.include}  ({hs.source})")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
