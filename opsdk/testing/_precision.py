"""Emulating ATC's ``--precision_mode`` on the CPU.

ATC decides per operator which kernel dtype runs when the model's tensors are float32:

* ``force_fp16``: float16 whenever the operator has a float16 kernel, else float32.
* ``allow_fp32_to_fp16``: float32 when the operator has a float32 kernel, else float16.
* ``must_keep_origin_dtype``: float32 only; an operator without a float32 kernel fails
  to compile.

When the chosen kernel is float16, opsdk casts the float32 inputs to float16, runs the
float16 kernel and casts the outputs back to float32, as the compiled graph would, and
compares against the float64 reference. ``allow_mix_precision`` is not emulated: which
operators it lowers depends on CANN's built-in lists, which cannot be known off an NPU.
"""

from __future__ import annotations

from ..errors import SpecError
from ..spec import OpSpec

__all__ = ["PRECISION_MODES", "kernel_dtypes"]

PRECISION_MODES: tuple[str, ...] = ("force_fp16", "allow_fp32_to_fp16", "must_keep_origin_dtype")


def _swap(dtypes: tuple[str | None, ...], frm: str, to: str) -> tuple[str | None, ...]:
    return tuple(to if d == frm else d for d in dtypes)


def kernel_dtypes(
    spec: OpSpec, dtypes: tuple[str | None, ...], mode: str
) -> tuple[str | None, ...]:
    """The input dtypes of the kernel ATC would pick for float32 model tensors.

    ``dtypes`` are the model's input dtypes. Raises SpecError when ATC would reject the
    model under ``mode`` (no kernel it may pick).

    Example:
        >>> from opsdk.spec import OpSpec, Input, Output
        >>> s = OpSpec("A", domain="com.x", inputs=[Input("x")], outputs=[Output("y")],
        ...            types={"T": ("float16", "float32")})
        >>> kernel_dtypes(s, ("float32",), "force_fp16")
        ('float16',)
        >>> kernel_dtypes(s, ("float32",), "allow_fp32_to_fp16")
        ('float32',)
    """
    if mode not in PRECISION_MODES:
        raise SpecError(
            f"unknown precision mode {mode!r}; expected one of {', '.join(PRECISION_MODES)}"
        )
    if "float32" not in dtypes:
        return dtypes
    combos = {tuple(c) for c in spec.dtype_combinations()}

    def has(ds: tuple[str | None, ...]) -> bool:
        return any(all(d is None or d == k for d, k in zip(ds, c, strict=False)) for c in combos)

    fp16 = _swap(dtypes, "float32", "float16")
    if mode == "force_fp16":
        if has(fp16):
            return fp16
        if has(dtypes):
            return dtypes
    elif mode == "allow_fp32_to_fp16":
        if has(dtypes):
            return dtypes
        if has(fp16):
            return fp16
    elif has(dtypes):
        return dtypes
    raise SpecError(
        f"{spec.name}: under precision_mode={mode} ATC finds no kernel for float32 inputs "
        f"(kernels: {sorted(combos)}); declare float32 in spec.py types or use another mode"
    )
