"""The fake (meta) implementation of an operator, from the spec's shape and dtype inference.

Each input dim goes to ``spec.infer`` as an int when it is static and as a symbol name
(``"s0"``) when torch traces it symbolically (``torch.compile(dynamic=True)``,
``torch.export`` with dynamic shapes); an output dim the spec gives as one of those names
is that same symbolic size, and a dim the spec cannot determine (``None``) becomes a new
data-dependent size. Bad input raises the spec's own :class:`~opsdk.errors.SpecError`, the
error ``op(x)`` raises.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import SpecError
from ..spec import Dim, OpSpec, TensorType
from ._schema import dtype_name, torch_dtype

__all__ = ["make_fake", "infer_outputs"]


def _dim(d: Any, symbols: dict[str, Any]) -> Dim:
    if isinstance(d, int):
        return d
    hint = getattr(getattr(d, "node", None), "maybe_as_int", lambda: None)()
    if hint is not None:
        return int(hint)
    name = str(d)
    symbols[name] = d
    return name


def _input_type(spec: OpSpec, index: int, t: Any, symbols: dict[str, Any]) -> TensorType:
    name = dtype_name(t.dtype)
    if name is None:
        decl = spec.inputs[index]
        raise SpecError(
            f"{spec.name}: input {decl.name!r} has dtype {t.dtype}, expected one of "
            f"{', '.join(spec.allowed_dtypes(decl.type))} (see spec.py)"
        )
    return TensorType(tuple(_dim(d, symbols) for d in t.shape), name)


def infer_outputs(
    spec: OpSpec, inputs: Sequence[Any], attrs: dict[str, Any], new_size: Callable[[], Any]
) -> list[tuple[list[Any], Any]]:
    """(shape, torch dtype) of each output for these (fake) tensors and attributes."""
    symbols: dict[str, Any] = {}
    types = [None if t is None else _input_type(spec, i, t, symbols)
             for i, t in enumerate(inputs)]
    out = []
    for t in spec.infer(types, spec.resolve_attrs(attrs)):
        shape = [d if isinstance(d, int) else symbols[d] if isinstance(d, str) and d in symbols
                 else new_size() for d in t.shape]
        out.append((shape, torch_dtype(t.dtype)))
    return out


def make_fake(spec: OpSpec, on_trace: Callable[[OpSpec], None] | None = None,
              ) -> Callable[..., Any]:
    """The fake implementation to register for ``spec`` with ``register_fake``;
    ``on_trace(spec)`` runs first on each call (the ONNX export hint)."""

    def fake(*inputs: Any, **attrs: Any) -> Any:
        import torch

        if on_trace is not None:
            on_trace(spec)
        device = next(t.device for t in inputs if t is not None)
        outs = [torch.empty(shape, dtype=dtype, device=device)
                for shape, dtype in infer_outputs(spec, inputs, attrs, _new_size)]
        return outs[0] if len(outs) == 1 else tuple(outs)

    fake.__name__ = f"{spec.name}_fake"
    return fake


def _new_size() -> Any:
    import torch

    return torch.library.get_ctx().new_dynamic_size()
