"""{{ cookiecutter.op_name }}: the SwiGLU of LLaMA-style MLPs, from the two projections.

Created by ``opsdk new {{ cookiecutter.op_name }} --like {{ cookiecutter.starter }}``; change it freely::

    y = silu(gate) * up = gate * sigmoid(gate) * up

``gate`` and ``up`` are the outputs of the gate and up projections, as a model with separate
projections exports them; they broadcast (NumPy rules). A model with one fused projection
splits it in half first (``gate, up = split(x, 2, axis=-1)``); make that an attribute or a
starter of its own. Computed in float32 whatever the dtype (bfloat16, float16, float32).
"""

from opsdk.spec import Case, Input, OpSpec, Output

SPEC = OpSpec(
    "{{ cookiecutter.op_name }}",
    domain="{{ cookiecutter.domain }}",
    version=1,
    inputs=[
        Input("gate", "T", doc="the gate projection, any shape"),
        Input("up", "T", doc="the up projection, broadcastable with gate"),
    ],
    outputs=[Output("y", "T", doc="silu(gate) * up, the broadcast shape")],
    types={"T": ("bfloat16", "float16", "float32")},
    doc="SwiGLU: silu(gate) * up.",
    cases=[
        Case({"gate": (4, 2, 88), "up": (4, 2, 88)}, name="tokens"),
        Case({"gate": (3, 40), "up": (3, 40)}, ranges={"gate": (-30.0, 30.0)}, name="tails"),
    ],
)


@SPEC.register_function
def _decomposition(fb):  # type: ignore[no-untyped-def]
    """The ONNX fallback, in float32: Mul(Mul(gate, Sigmoid(gate)), up)."""
    gate = fb.op("Cast", fb.input("gate"), to=1)
    up = fb.op("Cast", fb.input("up"), to=1)
    y = fb.op("Mul", fb.op("Mul", gate, fb.op("Sigmoid", gate)), up)
    return fb.op("CastLike", y, fb.input("gate"))


@SPEC.register_backward
def _backward(inputs, outputs, grads, **attrs):  # type: ignore[no-untyped-def]
    """Gradients of gate and up (torch tensors; opsdk.torch calls it for autograd).

    With s = sigmoid(gate): dgate = dy up s (1 + gate (1 - s)), dup = dy gate s; each summed
    over the axes it was broadcast along.
    """
    import torch

    gate, up = inputs
    (dy,) = grads
    w = torch.promote_types(gate.dtype, torch.float32)  # float32, or float64 under gradcheck
    g, u = gate.to(w), up.to(w)
    if dy is None:
        return [torch.zeros_like(gate), torch.zeros_like(up)]
    d = dy.to(w)
    s = torch.sigmoid(g)
    dgate = (d * u * s * (1 + g * (1 - s))).sum_to_size(gate.shape)
    dup = (d * g * s).sum_to_size(up.shape)
    return [dgate.to(gate.dtype), dup.to(up.dtype)]
