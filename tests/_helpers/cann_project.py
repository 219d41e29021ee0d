"""One-operator and flat-argument forms of :func:`opsdk.ascend.plan_package` and
:func:`opsdk.ascend.write_package`, as the CANN tests call them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opsdk.ascend import PackageOp, WriteReport, plan_package, write_package
from opsdk.ascend._op import DEFAULT_SOCS
from opsdk.spec import OpSpec


def render_package(entries: Sequence[PackageOp], socs: Sequence[str] = DEFAULT_SOCS,
                   vendor: str = "opsdk", **kw: Any) -> dict[str, str]:
    """The generated files of a package, no operator folder read (``sources=False``)."""
    return plan_package(entries, socs, vendor, sources=False, **kw).files()


def render_project(spec: OpSpec, socs: Sequence[str] = DEFAULT_SOCS,
                   origin_op_types: Sequence[str] | None = None, vendor: str = "opsdk", *,
                   engine: str = "aicpu", op_type: str | None = None,
                   shape_header: bool = False, **kw: Any) -> dict[str, str]:
    """:func:`render_package` of one operator."""
    entry = PackageOp(spec, engine, op_type, origin_op_types, shape_header=shape_header)
    return render_package([entry], socs, vendor, **kw)


def write_entries(entries: Sequence[PackageOp], folder: str | Path, *,
                  socs: Sequence[str] = DEFAULT_SOCS, vendor: str = "opsdk",
                  force: bool = False, **kw: Any) -> WriteReport:
    """Plan then write a package."""
    return write_package(plan_package(entries, socs, vendor, **kw), folder, force=force)


def write_project(spec: OpSpec, folder: str | Path, *, socs: Sequence[str] = DEFAULT_SOCS,
                  origin_op_types: Sequence[str] | None = None, vendor: str = "opsdk",
                  force: bool = False, engine: str = "aicpu", op_type: str | None = None,
                  kernel_folder: str | Path | None = None, **kw: Any) -> WriteReport:
    """:func:`write_entries` of one operator."""
    entry = PackageOp(spec, engine, op_type, origin_op_types, kernel_folder)
    return write_entries([entry], folder, socs=socs, vendor=vendor, force=force, **kw)
