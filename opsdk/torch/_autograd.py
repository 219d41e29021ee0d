"""Autograd for an operator: its own backward (``@SPEC.register_backward``), else the
derivative of its decomposition (``@SPEC.register_function``) evaluated with torch ops.

An operator with neither still registers a backward, one that raises a
:class:`~opsdk.errors.SpecError` naming the operator and the two ways to give it one, so
``loss.backward()`` never silently yields no gradient.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import SpecError
from ..spec import OpSpec
from ._onnx_eval import evaluate

__all__ = ["gradient_source", "register_autograd", "backward_of"]


def gradient_source(spec: OpSpec) -> str:
    """Where the operator's gradient comes from: 'backward', 'decomposition' or 'none'."""
    if spec.backward is not None:
        return "backward"
    return "decomposition" if spec.function is not None else "none"


def _no_backward(spec: OpSpec) -> SpecError:
    return SpecError(
        f"{spec.name}: the operator has no backward, so autograd cannot differentiate it; "
        "add a decomposition into ONNX ops (@SPEC.register_function, gradients then come "
        "from it) or a backward of its own (@SPEC.register_backward; 'opsdk new --backward' "
        "scaffolds one) to spec.py, or call it under torch.no_grad()"
    )


def _vjp(spec: OpSpec, inputs: Sequence[Any], grads: Sequence[Any],
         attrs: dict[str, Any]) -> list[Any]:
    """Gradients of the decomposition with respect to the floating-point inputs."""
    import torch

    diff = [i for i, t in enumerate(inputs) if t is not None and t.is_floating_point()]

    def forward(*xs: Any) -> tuple[Any, ...]:
        full = list(inputs)
        for i, x in zip(diff, xs):
            full[i] = x
        return tuple(evaluate(spec, full, attrs))

    vjp = torch.func.vjp(forward, *[inputs[i] for i in diff])
    outs, vjp_fn = vjp[0], vjp[1]
    cotangents = tuple(
        torch.zeros_like(o) if g is None else g.to(o.dtype) for g, o in zip(grads, outs)
    )
    result: list[Any] = [None] * len(inputs)
    for i, g in zip(diff, vjp_fn(cotangents)):
        result[i] = g.to(inputs[i].dtype)
    return result


def backward_of(spec: OpSpec, inputs: Sequence[Any], outputs: Sequence[Any],
                grads: Sequence[Any], attrs: dict[str, Any]) -> list[Any]:
    """The inputs' gradients (None where there is none) from the outputs' ``grads``: the
    operator's own backward, else the derivative of its decomposition; raises SpecError
    when it has neither or returns the wrong number of gradients."""
    source = gradient_source(spec)
    if source == "none":
        raise _no_backward(spec)
    if source == "backward":
        assert spec.backward is not None
        result = spec.backward(list(inputs), list(outputs), list(grads), **attrs)
        result = [result] if not isinstance(result, (list, tuple)) else list(result)
    else:
        result = _vjp(spec, inputs, grads, attrs)
    if len(result) != len(spec.inputs):
        raise SpecError(
            f"{spec.name}: the backward returned {len(result)} gradients, expected one "
            f"per input ({', '.join(i.name for i in spec.inputs)}; None for no gradient)"
        )
    for inp, x, g in zip(spec.inputs, inputs, result, strict=False):
        if g is not None and x is not None and tuple(g.shape) != tuple(x.shape):
            raise SpecError(
                f"{spec.name}: the backward's gradient of input {inp.name!r} has shape "
                f"{tuple(g.shape)}, the input {tuple(x.shape)}; sum it over the broadcast "
                "axes (grad.sum_to_size(x.shape))"
            )
    return result


def _backward_fn(spec: OpSpec) -> Callable[..., Any]:
    def backward(ctx: Any, *grads: Any) -> Any:
        saved = list(ctx.saved_tensors)
        inputs = [saved[k] if k is not None else None for k in ctx.input_slots]
        outputs = saved[len([k for k in ctx.input_slots if k is not None]):]
        return tuple(backward_of(spec, inputs, outputs, grads, ctx.opsdk_attrs))

    return backward


def _save(spec: OpSpec, ctx: Any, inputs: Sequence[Any], attrs: dict[str, Any],
          output: Any) -> None:
    slots: list[int | None] = []
    tensors: list[Any] = []
    for t in inputs:
        slots.append(None if t is None else len(tensors))
        if t is not None:
            tensors.append(t)
    outs = list(output) if isinstance(output, (tuple, list)) else [output]
    ctx.input_slots = slots
    ctx.opsdk_attrs = spec.resolve_attrs(attrs)
    ctx.save_for_backward(*tensors, *outs)


def register_autograd(spec: OpSpec, op: Any) -> None:
    """Register the backward of ``spec`` on the custom op ``op``."""
    if spec.attrs:
        def setup_kw(ctx: Any, inputs: Any, keyword_only_inputs: Any, output: Any) -> None:
            _save(spec, ctx, inputs, dict(keyword_only_inputs), output)

        op.register_autograd(_backward_fn(spec), setup_context=setup_kw)
    else:
        def setup(ctx: Any, inputs: Any, output: Any) -> None:
            _save(spec, ctx, inputs, {}, output)

        op.register_autograd(_backward_fn(spec), setup_context=setup)
