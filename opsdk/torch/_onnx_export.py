"""From a PyTorch model to ONNX: each opsdk op call becomes one node of the spec's domain and
version, with every attribute (defaults filled in) and the domain's opset import.

* the dynamo exporter (``torch.onnx.export(..., dynamo=True)``) takes
  :func:`onnx_translations` as its ``custom_translation_table`` (onnxscript functions over
  the ONNX schema opsdk registers from spec.py);
* the TorchScript exporter (``dynamo=False``) uses the symbolic every registered operator
  gets through ``torch.onnx.register_custom_op_symbolic``; pass ``custom_opsets`` (or use
  :func:`export`) when a spec's version is not 1.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..spec import OpSpec

if TYPE_CHECKING:
    from ._registered import Registered

__all__ = ["onnx_translations", "register_torchscript_symbolic", "export"]

#: opsdk attribute type -> the TorchScript symbolic's parse descriptor and g.op suffix
_TS_ATTRS: dict[str, tuple[Any, str]] = {
    "int": ("i", "i"), "bool": ("b", "i"), "float": ("f", "f"), "string": ("s", "s"),
    "ints": ("is", "i"), "floats": ("fs", "f"),
}


def _onnx_attrs(spec: OpSpec, attrs: dict[str, Any]) -> dict[str, Any]:
    """Every attribute, defaults filled in, as ONNX values (bool as 0/1)."""
    return {k: int(v) if isinstance(v, bool) else v for k, v in spec.resolve_attrs(attrs).items()}


def _signature(spec: OpSpec) -> inspect.Signature:
    P = inspect.Parameter
    params = [P(i.name, P.POSITIONAL_OR_KEYWORD, default=None if i.optional else P.empty)
              for i in spec.inputs]
    params += [P(a.name, P.KEYWORD_ONLY, default=P.empty if a.required else a.default)
               for a in spec.attrs]
    return inspect.Signature(params)


def _translation(spec: OpSpec) -> Callable[..., Any]:
    """The dynamo exporter's translation of one op: one node in the spec's domain."""
    import onnxscript

    from ..onnx import register_schema

    register_schema(spec)
    opset = onnxscript.values.Opset(spec.domain, spec.version)

    def translate(*inputs: Any, **attrs: Any) -> Any:
        values = list(inputs)
        while values and values[-1] is None:
            values.pop()
        return getattr(opset, spec.name)(*values, **_onnx_attrs(spec, attrs))

    translate.__name__ = spec.name
    translate.__signature__ = _signature(spec)  # type: ignore[attr-defined]
    return translate


def onnx_translations(ops: list[Registered] | None = None) -> dict[Any, Callable[..., Any]]:
    """``custom_translation_table`` for ``torch.onnx.export(..., dynamo=True)``.

    Example:
        >>> torch.onnx.export(model, (x,), "m.onnx", dynamo=True,
        ...                   custom_translation_table=onnx_translations())  # doctest: +SKIP
    """
    from ._registered import registered

    return {reg.overload: _translation(reg.spec) for reg in (ops or registered())}


def _ts_symbolic(spec: OpSpec) -> Callable[..., Any]:
    def symbolic(g: Any, *args: Any) -> Any:
        from torch.onnx import symbolic_helper as sh

        n = len(spec.inputs)
        inputs = list(args[:n])
        while inputs and sh._is_none(inputs[-1]):
            inputs.pop()
        attrs = {}
        for a, v in zip(spec.attrs, args[n:]):
            desc, suffix = _TS_ATTRS[a.type]
            value = sh._parse_arg(v, desc)
            attrs[f"{a.name}_{suffix}"] = int(value) if a.type == "bool" else value
        outs = g.op(f"{spec.domain}::{spec.name}", *inputs, outputs=len(spec.outputs), **attrs)
        _set_types(spec, inputs, list(outs) if isinstance(outs, (tuple, list)) else [outs],
                   args[n:])
        return outs

    return symbolic


def _set_types(spec: OpSpec, inputs: list[Any], outs: list[Any], attr_values: Any) -> None:
    """Give the TorchScript graph the outputs' dtypes and static shapes from the spec."""
    from torch.onnx import symbolic_helper as sh

    from ..spec import TensorType
    from ._schema import dtype_name, torch_dtype

    types: list[TensorType | None] = []
    for v in inputs:
        sizes, dtype = sh._get_tensor_sizes(v), v.type().dtype()
        name = dtype_name(dtype) if dtype is not None else None
        if sh._is_none(v):
            types.append(None)
        elif sizes is None or name is None or any(d is None for d in sizes):
            return  # not static: the exporter's own inference stands
        else:
            types.append(TensorType(tuple(sizes), name))
    attrs = {a.name: sh._parse_arg(v, _TS_ATTRS[a.type][0])
             for a, v in zip(spec.attrs, attr_values)}
    for out, t in zip(outs, spec.infer(types, spec.resolve_attrs(attrs))):
        if all(isinstance(d, int) for d in t.shape):
            out.setType(inputs[0].type().with_dtype(torch_dtype(t.dtype))
                        .with_sizes(list(t.shape)))


def register_torchscript_symbolic(reg: Registered) -> None:
    """Teach the TorchScript exporter (``dynamo=False``) the operator's ONNX node."""
    import torch

    torch.onnx.register_custom_op_symbolic(reg.qualname, _ts_symbolic(reg.spec), 9)


def _custom_opsets() -> dict[str, int]:
    from ._registered import registered

    # version 1 is what the exporter writes for a domain it is not told about
    return {r.spec.domain: r.spec.version for r in registered() if r.spec.version != 1}


def export(model: Any, args: tuple[Any, ...], f: str | os.PathLike[str], *,
           dynamo: bool = True, **kwargs: Any) -> None:
    """``torch.onnx.export`` with what opsdk ops need: the translation table (dynamo) or
    the custom opset versions (TorchScript). Other keywords go to ``torch.onnx.export``.

    Example:
        >>> export(model, (x,), "model.onnx")  # doctest: +SKIP
    """
    import torch

    if dynamo:
        table = {**onnx_translations(), **kwargs.pop("custom_translation_table", {})}
        program = torch.onnx.export(model, args, dynamo=True, custom_translation_table=table,
                                    **kwargs)
        assert program is not None
        program.save(str(f))
        return
    opsets = {**_custom_opsets(), **kwargs.pop("custom_opsets", {})}
    torch.onnx.export(model, args, str(f), dynamo=False, custom_opsets=opsets, **kwargs)
