"""{{ cookiecutter.op_name }}: rotary position embedding (RoPE) of queries or keys, from x, cos and sin.

Created by ``opsdk new {{ cookiecutter.op_name }} --like {{ cookiecutter.starter }}``; change it freely::

    y[..., :R] = x[..., :R] * cos + rotate(x[..., :R]) * sin      R = cos.shape[-1]
    y[..., R:] = x[..., R:]                                       (partial rotary: passed through)

``rotate`` is Hugging Face's ``rotate_half`` by default, ``cat(-x2, x1)`` with x1, x2 the
halves of the rotated part (cos and sin repeat the frequencies twice: ``cat(f, f)``); with
``interleaved=1`` the pairs are adjacent (GPT-J, Meta's LLaMA): rotate maps ``(a, b)`` to
``(-b, a)`` and cos, sin repeat each frequency twice in place. cos and sin have the same
shape; their leading dims broadcast to x's (x ``(B, H, S, D)`` with cos ``(B, 1, S, R)`` or
``(S, R)``). Computed in float32 whatever the dtype (bfloat16, float16, float32).
"""

from opsdk.errors import SpecError
from opsdk.spec import Attr, Case, Input, OpSpec, Output, TensorType, Values

#: cos and sin are a rotation's, in [-1, 1]; x stays where x*cos - x*sin cannot leave
#: float32's range (the float64 reference would not overflow where the kernel does).
_ANGLE = Values(range=(-1.0, 1.0), inf=False, nan=False)
_RANGE = Values(range=(-1e4, 1e4))

SPEC = OpSpec(
    "{{ cookiecutter.op_name }}",
    domain="{{ cookiecutter.domain }}",
    version=1,
    inputs=[
        Input("x", "T", doc="queries or keys (..., D), e.g. (B, H, S, D)", values=_RANGE),
        Input("cos", "T", doc="cosines (..., R), R even <= D, leading dims broadcast to x's",
              values=_ANGLE),
        Input("sin", "T", doc="sines, cos's shape", values=_ANGLE),
    ],
    outputs=[Output("y", "T", doc="x with its first R features rotated, x's shape")],
    attrs=[Attr("interleaved", "int", 0, doc="0: rotate-half pairs (i, i + R/2); 1: (2i, 2i + 1)")],
    types={"T": ("bfloat16", "float16", "float32")},
    doc="Rotary position embedding: x * cos + rotate(x) * sin over the first R features.",
    batch_axis=0,
    cases=[
        Case({"x": (2, 4, 6, 16), "cos": (2, 1, 6, 16), "sin": (2, 1, 6, 16)},
             ranges={"cos": (-1.0, 1.0), "sin": (-1.0, 1.0)}, name="bhsd"),
        Case({"x": (2, 4, 6, 16), "cos": (2, 1, 6, 16), "sin": (2, 1, 6, 16)}, {"interleaved": 1},
             ranges={"cos": (-1.0, 1.0), "sin": (-1.0, 1.0)}, name="interleaved"),
        Case({"x": (3, 5, 40), "cos": (5, 40), "sin": (5, 40)},
             ranges={"cos": (-1.0, 1.0), "sin": (-1.0, 1.0)}, name="seq_table"),
        Case({"x": (2, 3, 4, 24), "cos": (1, 1, 4, 10), "sin": (1, 1, 4, 10)},
             ranges={"cos": (-1.0, 1.0), "sin": (-1.0, 1.0)}, name="partial"),
        Case({"x": (2, 3, 4, 24), "cos": (1, 1, 4, 10), "sin": (1, 1, 4, 10)}, {"interleaved": 1},
             ranges={"cos": (-1.0, 1.0), "sin": (-1.0, 1.0)}, name="partial_interleaved"),
        Case({"x": (1, 8, 33, 128), "cos": (1, 1, 33, 128), "sin": (1, 1, 33, 128)},
             ranges={"cos": (-1.0, 1.0), "sin": (-1.0, 1.0)}, name="large"),
        # small enough for opsdk check's full Jacobian (both conventions, a partial rotation)
        Case({"x": (1, 2, 3, 8), "cos": (1, 1, 3, 8), "sin": (1, 1, 3, 8)},
             ranges={"cos": (-1.0, 1.0), "sin": (-1.0, 1.0)}, name="tiny"),
        Case({"x": (1, 2, 3, 8), "cos": (1, 1, 3, 4), "sin": (1, 1, 3, 4)}, {"interleaved": 1},
             ranges={"cos": (-1.0, 1.0), "sin": (-1.0, 1.0)}, name="tiny_partial_interleaved"),
    ],
)


def _known(d: object) -> bool:
    return isinstance(d, int)


@SPEC.register_shape
def _shape(x: TensorType, cos: TensorType, sin: TensorType, *, interleaved: int) -> TensorType:
    """y like x, after checking that cos and sin fit it."""
    name = SPEC.name
    if interleaved not in (0, 1):
        raise SpecError(f"{name}: attribute 'interleaved' is {interleaved}; expected 0 or 1")
    if x.rank == 0 or cos.rank == 0:
        raise SpecError(f"{name}: inputs 'x' and 'cos' need rank >= 1 (..., D) and (..., R)")
    if tuple(sin.shape) != tuple(cos.shape):
        raise SpecError(f"{name}: input 'sin' has shape {tuple(sin.shape)}; expected cos's "
                        f"shape {tuple(cos.shape)}")
    r, d = cos.shape[-1], x.shape[-1]
    if _known(r) and (r % 2 or (_known(d) and r > d)):
        raise SpecError(f"{name}: input 'cos' has last dim {r}; expected an even number of "
                        f"rotated features <= x's last dim {d}")
    lead_x, lead_c = tuple(x.shape[:-1]), tuple(cos.shape[:-1])
    fits = len(lead_c) <= len(lead_x) and all(
        c == 1 or not _known(c) or not _known(n) or c == n
        for c, n in zip(reversed(lead_c), reversed(lead_x), strict=False)
    )
    if not fits:
        raise SpecError(f"{name}: input 'cos' has shape {tuple(cos.shape)}, whose leading dims "
                        f"do not broadcast to x's {lead_x}; give them x's dims or 1, e.g. "
                        f"{(1,) * (len(lead_x) - 1) + lead_x[-1:] + (r,)}")
    return TensorType(tuple(x.shape), x.dtype)


@SPEC.register_function
def _decomposition(fb):  # type: ignore[no-untyped-def]
    """The ONNX fallback, in float32: both rotations built with Slice/Concat (interleaved
    through a (..., R/2, 2) Reshape), chosen by ``interleaved``; the tail passed through."""

    def ints(*v):  # type: ignore[no-untyped-def]
        return fb.op("Constant", value_ints=list(v))

    x = fb.op("Cast", fb.input("x"), to=1)
    cos = fb.op("Cast", fb.input("cos"), to=1)
    sin = fb.op("Cast", fb.input("sin"), to=1)
    zero, last, end = ints(0), ints(-1), ints(2**62)
    r = fb.op("Shape", fb.input("cos"), start=-1)
    half = fb.op("Div", r, ints(2))
    rot_part = fb.op("Slice", x, zero, r, last)
    rest = fb.op("Slice", x, r, end, last)
    x1 = fb.op("Slice", rot_part, zero, half, last)
    x2 = fb.op("Slice", rot_part, half, r, last)
    rot_half = fb.op("Concat", fb.op("Neg", x2), x1, axis=-1)
    pair_shape = fb.op("Concat", fb.op("Shape", rot_part, end=-1), half, ints(2), axis=0)
    pairs = fb.op("Reshape", rot_part, pair_shape)
    even = fb.op("Slice", pairs, zero, ints(1), last)
    odd = fb.op("Slice", pairs, ints(1), ints(2), last)
    rot_pairs = fb.op("Reshape", fb.op("Concat", fb.op("Neg", odd), even, axis=-1),
                      fb.op("Shape", rot_part))
    use_pairs = fb.op("Cast", fb.op("Constant", value_int=fb.attr("interleaved")), to=9)
    rotated = fb.op("Where", use_pairs, rot_pairs, rot_half)
    y = fb.op("Add", fb.op("Mul", rot_part, cos), fb.op("Mul", rotated, sin))
    return fb.op("CastLike", fb.op("Concat", y, rest, axis=-1), fb.input("x"))


@SPEC.register_pattern
def _as_exported(fb):  # type: ignore[no-untyped-def]
    """The form exporters write for Hugging Face's ``apply_rotary_pos_emb`` (a full rotation,
    rotate-half): ``x * cos + rotate_half(x) * sin``, rotate_half with Slice/Concat or Split,
    found by ``opsdk rewrite --replace {{ cookiecutter.op_name }}``."""
    x, cos, sin = fb.input("x"), fb.input("cos"), fb.input("sin")
    return fb.op("Add", fb.op("Mul", x, cos), fb.op("Mul", fb.rotate_half(x), sin))


@SPEC.register_backward
def _backward(inputs, outputs, grads, *, interleaved):  # type: ignore[no-untyped-def]
    """Gradients of x, cos and sin (torch tensors; opsdk.torch calls it for autograd).

    rotate is a rotation by a right angle, so its transpose is -rotate: dx = dy cos -
    rotate(dy sin) over the first R features and dy past them; dcos = dy x and dsin =
    dy rotate(x), each summed over the axes cos was broadcast along.
    """
    import torch

    x, cos, sin = inputs
    (dy,) = grads
    if dy is None:
        return [torch.zeros_like(x), torch.zeros_like(cos), torch.zeros_like(sin)]
    w = torch.promote_types(x.dtype, torch.float32)  # float32, or float64 under gradcheck
    r = cos.shape[-1]

    def rotate(t):  # type: ignore[no-untyped-def]
        if interleaved:
            pairs = t.unflatten(-1, (r // 2, 2))
            return torch.stack([-pairs[..., 1], pairs[..., 0]], dim=-1).flatten(-2)
        return torch.cat([-t[..., r // 2:], t[..., : r // 2]], dim=-1)

    g, part = dy.to(w), x.to(w)[..., :r]
    gr = g[..., :r]
    dx = torch.cat([gr * cos.to(w) - rotate(gr * sin.to(w)), g[..., r:]], dim=-1)
    dcos = (gr * part).sum_to_size(cos.shape)
    dsin = (gr * rotate(part)).sum_to_size(sin.shape)
    return [dx.to(x.dtype), dcos.to(cos.dtype), dsin.to(sin.dtype)]
