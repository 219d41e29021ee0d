"""One CANN operator package: the operators it carries, its vendor and its library names.

A package is what an Ascend host installs: one ``.run`` that lands in
``$ASCEND_OPP_PATH/vendors/<vendor>/``. Every name that two packages could share on a host
is derived from the vendor (the AI CPU kernel library, the AI CPU op proto and ONNX parser
libraries), so packages of different vendors coexist. Two operators of one package may not
share a CANN type (or its file names); a package may not take a vendor folder another
package installed, nor an operator type another vendor on the host already has.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .._op import CannOp
from ..errors import PackageClash
from ..socs import CannArgError

__all__ = ["CannPackage", "PackageClash", "check_package", "installed_vendors"]


@dataclass(frozen=True)
class CannPackage:
    """The template context of a package (``pkg`` in the templates)."""

    ops: tuple[CannOp, ...]
    vendor: str
    socs: tuple[str, ...]
    soc_versions: tuple[str, ...]
    cann: str
    layout: str
    banner: str

    @property
    def aicpu_ops(self) -> tuple[CannOp, ...]:
        """Operators with an AI CPU kernel (``--engine aicpu`` or ``both``)."""
        return tuple(op for op in self.ops if op.aicpu)

    @property
    def aicore_ops(self) -> tuple[CannOp, ...]:
        """Operators with an AI Core kernel (``--engine aicore`` or ``both``)."""
        return tuple(op for op in self.ops if op.aicore)

    @property
    def names(self) -> str:
        """The operators' CANN types, for comments and messages."""
        return ", ".join(op.name for op in self.ops)

    @property
    def aicpu_kernel_target(self) -> str:
        """CMake target (and ``lib<target>.so``) of the AI CPU kernels, one per vendor."""
        return f"cust_{self.vendor}_aicpu_kernels"

    @property
    def op_proto_target(self) -> str:
        """The AI CPU project's op proto library target, one per vendor."""
        return f"cust_{self.vendor}_op_proto"

    @property
    def onnx_parsers_target(self) -> str:
        """The AI CPU project's ONNX parser library target, one per vendor."""
        return f"cust_{self.vendor}_onnx_parsers"


def check_package(ops: Sequence[CannOp]) -> None:
    """Refuse two operators of one package with the same CANN type or the same file names.

    Raises:
        PackageClash: naming both operators and the fix (``--op-type``).
    """
    kernels: dict[str, str] = {}
    for op in ops:
        if op.kernel_name in kernels:
            raise PackageClash(
                f"{op.kernel_name} is in the package twice (as {kernels[op.kernel_name]} and "
                f"{op.name}); one package carries each operator once: drop one of them"
            )
        kernels[op.kernel_name] = op.name
    seen: dict[str, str] = {}
    for op in ops:
        for key in (op.name, op.snake):
            other = seen.get(key.lower())
            if other is not None:
                raise PackageClash(
                    f"{op.kernel_name} and {other}: both would be the CANN operator {key!r} of "
                    "one package (types and their snake_case file names must differ); give one "
                    "of them another type with --op-type, or package them separately"
                )
        seen[op.name.lower()] = op.kernel_name
        seen[op.snake.lower()] = op.kernel_name


def _json_keys(path: Path) -> set[str]:
    from ..versions import read_small_text

    try:
        data = json.loads(read_small_text(path, limit=16 << 20))
    except (OSError, ValueError, CannArgError):
        return set()
    return {k for k in data if isinstance(k, str)} if isinstance(data, dict) else set()


def installed_vendors(opp: Path) -> dict[str, set[str]]:
    """Vendor packages installed under ``opp`` (``$ASCEND_OPP_PATH``): ``{vendor: op types}``.

    The op types are read from the op info a package installs: the AI CPU engine's
    ``op_impl/cpu/config/*.json`` and the AI Core ``op_impl/ai_core/tbe/config/*/*.json``.

    Example:
        >>> import tempfile
        >>> installed_vendors(Path(tempfile.mkdtemp()))
        {}
    """
    vendors: dict[str, set[str]] = {}
    root = opp / "vendors"
    if not root.is_dir():
        return vendors
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()):
        types: set[str] = set()
        for pattern in ("op_impl/cpu/config/*.json", "op_impl/ai_core/tbe/config/*/*.json"):
            for info in sorted(folder.glob(pattern)):
                types |= _json_keys(info)
        vendors[folder.name] = types
    return vendors


def check_installed(
    vendor: str, op_types: Iterable[str], installed: Mapping[str, set[str]], opp: Path
) -> None:
    """Refuse a package that would replace another package's vendor folder, or register an
    operator type another vendor on the host already has.

    Raises:
        PackageClash: naming the vendor, the operators and the fix.
    """
    mine = set(op_types)
    theirs = installed.get(vendor)
    if theirs is not None and theirs - mine:
        raise PackageClash(
            f"vendor {vendor!r} is already installed at {opp}/vendors/{vendor} with operators "
            f"this package does not have ({', '.join(sorted(theirs - mine))}); installing it "
            "would replace them. Pass another --vendor, or put those operators in this package "
            "(opsdk cann OpA OpB ...)"
        )
    for other, types in sorted(installed.items()):
        both = sorted(mine & types) if other != vendor else []
        if both:
            raise PackageClash(
                f"{', '.join(both)}: already the type of an operator of vendor {other!r} at "
                f"{opp}/vendors/{other}; two vendors must not register one type. Give it "
                "another type with --op-type, or regenerate that package with --vendor "
                f"{other} and this operator in it"
            )
