"""Which opsdk operators exist, looked up the way ONNX names them: (domain, op_type)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ..errors import OperatorNotFound
from ..spec import OpSpec

__all__ = ["catalog", "catalog_scope", "find_spec", "by_onnx_op", "load_kernel"]

#: The operators a caller has already found (:func:`catalog_scope`), else None: scan.
_SCOPED: ContextVar[Mapping[tuple[str, str], OpSpec] | None] = ContextVar(
    "opsdk_catalog", default=None)


@contextmanager
def catalog_scope(index: Mapping[tuple[str, str], OpSpec]) -> Iterator[None]:
    """Within the block, :func:`catalog` (and every lookup through it) reads ``index``
    instead of scanning the operator folders again: a command that scanned once (a Triton
    repository plan) hands its scan to the checks it runs.

    Example:
        >>> with catalog_scope({}):
        ...     find_spec("com.opsdk", "Gelu") is None
        True
    """
    token = _SCOPED.set(index)
    try:
        yield
    finally:
        _SCOPED.reset(token)


def catalog(extra: Iterable[OpSpec] = ()) -> dict[tuple[str, str], OpSpec]:
    """Every operator opsdk can find, keyed by (domain, name); ``extra`` specs win."""
    from ..registry import find_operators

    scoped = _SCOPED.get()
    found = dict(scoped) if scoped is not None else {
        (i.domain, i.name): i.spec for i in find_operators()}
    for spec in extra:
        found[(spec.domain, spec.name)] = spec
    return found


def find_spec(
    domain: str, op_type: str, extra: Iterable[OpSpec] = ()
) -> OpSpec | None:
    """The spec of ``domain::op_type``, or None when no operator defines it."""
    for spec in extra:
        if (spec.domain, spec.name) == (domain, op_type):
            return spec
    return catalog().get((domain, op_type))


def by_onnx_op(extra: Iterable[OpSpec] = ()) -> dict[str, OpSpec]:
    """Shipped or installed operators that implement a standard ONNX op (``spec.onnx_op``)."""
    extra = list(extra)
    out: dict[str, OpSpec] = {}
    for spec in [*extra, *catalog().values()]:  # explicitly given specs win
        if spec.onnx_op:
            out.setdefault(spec.onnx_op, spec)
    return out


def load_kernel(spec: OpSpec) -> Any:
    """The cpu executor of ``spec`` (built on first use), via :func:`opsdk.load`. A build
    (minutes on a busy host) says so on stderr, one line per step, so a Session or a
    Triton model that loads it is not silent meanwhile; a cached kernel prints nothing."""
    from ..runtime import load

    qualified = f"{spec.domain}::{spec.name}"

    def progress(line: str) -> None:
        print(f"opsdk: {qualified} is used for the first time, its kernel is compiled once "
              f"into the opsdk cache: {line}", file=sys.stderr, flush=True)

    try:
        return load(qualified, progress=progress)
    except OperatorNotFound as e:
        raise OperatorNotFound(
            f"{e} -- the model uses {spec.domain}::{spec.name}, but only its spec is known; "
            "pass kernels={...} to Session or put the operator folder on OPSDK_OPERATORS_PATH"
        ) from None
