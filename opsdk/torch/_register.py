"""Register opsdk operators as ``torch.library`` custom ops.

Each operator becomes ``torch.ops.<namespace>.<Name>`` (namespace: its domain with dots as
underscores) with the schema of :func:`~opsdk.torch._schema.schema`, a CPU kernel
registered in C++ that calls the compiled opsdk kernel on the tensors' memory
(:mod:`~opsdk.torch._cpp`; without torch's headers, a Python one on zero-copy NumPy
views), the fake implementation of
:mod:`~opsdk.torch._fake`, autograd (:mod:`~opsdk.torch._autograd`), the TorchScript ONNX
symbolic (:mod:`~opsdk.torch._onnx_export`), the hint of a dynamo ONNX export without
opsdk's translations (:mod:`~opsdk.torch._export_hint`) and, where torch_npu is
importable, the NPU implementation (:mod:`~opsdk.torch._npu`). The kernel is compiled on
the first call, not on registration.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

from ..errors import OperatorNotFound, SpecError
from ..registry import OperatorInfo, find_operator, find_operators
from ..spec import OpSpec
from ._autograd import register_autograd
from ._convert import from_numpy, to_numpy
from ._cpp import define_op, install_cpu
from ._export_hint import hint_if_exporting
from ._fake import make_fake
from ._registered import REGISTERED as _REGISTERED
from ._registered import Registered, registered
from ._schema import namespace, qualified_name, schema
from .errors import OperatorLeftOut

__all__ = ["Registered", "register", "register_all", "registered", "OpsNamespace", "OPS",
           "OperatorLeftOut"]


def _cpu_impl(spec: OpSpec, kernel: Callable[[], Any]) -> Callable[..., Any]:
    def cpu(*inputs: Any, **attrs: Any) -> Any:
        out = kernel()(*[None if t is None else to_numpy(t) for t in inputs], **attrs)
        if type(out) is tuple:
            return tuple(from_numpy(o) for o in out)
        return from_numpy(out)

    cpu.__name__ = spec.name
    return cpu


def _define(info: OperatorInfo) -> Registered:
    from ..runtime import load

    spec = info.spec
    kernel = functools.cache(lambda: load(str(info.folder)))
    cpu = _cpu_impl(spec, kernel)
    text = schema(spec)
    try:
        op = define_op(qualified_name(spec), text, cpu)
    except (RuntimeError, ValueError, IndexError) as e:  # torch's schema parser and library
        reason = " ".join(str(e).split()) or type(e).__name__
        raise SpecError(
            f"{spec.name}: torch refused its schema {qualified_name(spec)}{text}: {reason}; "
            f"change spec.py ({info.folder}) so that torch can spell it"
        ) from None
    op.register_fake(make_fake(spec, hint_if_exporting))
    register_autograd(spec, op)
    install_cpu(qualified_name(spec), op, kernel, cpu)
    reg = Registered(spec, info, op, kernel)
    from ._npu import register_npu
    from ._onnx_export import register_torchscript_symbolic

    register_torchscript_symbolic(reg)
    register_npu(reg)
    return reg


def register(name: str | OperatorInfo) -> Registered:
    """Register one operator (``MyOp``, ``domain::MyOp``, a folder) with torch; idempotent.

    Example:
        >>> reg = register("ThresholdedRelu")  # doctest: +SKIP
        >>> reg.qualname  # doctest: +SKIP
        'com_opsdk::ThresholdedRelu'
    """
    info = find_operator(name) if isinstance(name, str) else name
    key = qualified_name(info.spec)
    prev = _REGISTERED.get(key)
    if prev is not None:
        if prev.info.folder != info.folder or schema(prev.spec) != schema(info.spec):
            raise SpecError(
                f"{info.name}: {key} is already registered with torch in this process from "
                f"{prev.info.folder} with schema {schema(prev.spec)}; torch cannot redefine an "
                "operator, so restart Python to pick up the changed spec.py"
            )
        return prev
    reg = _REGISTERED[key] = _define(info)
    # plain attributes, so that torch.compile reads ops.<namespace>.<Name> without tracing
    # the lookup below
    ns = OPS.__dict__.setdefault(namespace(info.domain), _Namespace(namespace(info.domain)))
    setattr(ns, info.name, reg.packet)
    return reg


#: operators :func:`register_all` could not register, with the error (``MyOp: ...``)
FAILED: dict[str, str] = {}


def register_all(strict: bool = True) -> list[Registered]:
    """Register every operator opsdk finds (source folders, installed wheels, shipped ones).

    With ``strict=False`` (what ``import opsdk.torch`` does) an operator that cannot be
    registered is left out and its error kept in :data:`FAILED`, one
    :class:`OperatorLeftOut` warning names them all, and using one raises its error.

    Example:
        >>> done = register_all(strict=False)  # doctest: +SKIP
    """
    done = []
    left_out = []
    for info in find_operators():
        try:
            done.append(register(info))
        except SpecError as e:
            if strict:
                raise
            if info.qualified not in FAILED:
                left_out.append(str(e))
            FAILED[info.qualified] = str(e)
    if left_out:
        warnings.warn(
            f"opsdk.torch left out {len(left_out)} operator(s) torch cannot register, and "
            f"registered the others: {' | '.join(left_out)}", OperatorLeftOut, stacklevel=2)
    return done


class _Namespace:
    """``opsdk.torch.ops.<namespace>``: registers ``<Name>`` on first access."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, op: str) -> Any:
        if op.startswith("__"):
            raise AttributeError(op)
        for info in find_operators():
            if namespace(info.domain) == self._name and info.name == op:
                return register(info).packet
        raise AttributeError(
            f"opsdk.torch.ops.{self._name} has no operator {op!r}; known: "
            + ", ".join(sorted(o.name for o in find_operators()
                               if namespace(o.domain) == self._name))
        )

    def __dir__(self) -> list[str]:
        return sorted(o.name for o in find_operators() if namespace(o.domain) == self._name)


class OpsNamespace:
    """``opsdk.torch.ops``: ``ops.<namespace>.<Name>`` is ``torch.ops.<namespace>.<Name>``.

    Example:
        >>> from opsdk.torch import ops  # doctest: +SKIP
        >>> ops.com_opsdk.Gelu(torch.ones(3))  # doctest: +SKIP
        tensor([0.8413, 0.8413, 0.8413])
    """

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if not any(namespace(o.domain) == name for o in find_operators()):
            raise OperatorNotFound(
                f"opsdk.torch.ops has no namespace {name!r}; known: "
                + ", ".join(sorted({namespace(o.domain) for o in find_operators()}))
                + " (a namespace is an operator's domain with '.' as '_')"
            )
        return _Namespace(name)

    def __dir__(self) -> list[str]:
        return sorted({namespace(o.domain) for o in find_operators()})


#: ``opsdk.torch.ops``
OPS = OpsNamespace()
