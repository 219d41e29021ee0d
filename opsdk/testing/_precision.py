"""Emulating ATC's ``--precision_mode`` on the CPU.

ATC decides per operator which kernel dtype runs when the model's tensors are float32:

* ``force_fp16``: float16 whenever the operator has a float16 kernel, else float32.
* ``allow_fp32_to_fp16``: float32 when the operator has a float32 kernel, else float16.
* ``must_keep_origin_dtype``: float32 only; an operator without a float32 kernel fails
  to compile.
* ``allow_mix_precision``: lowering follows the operator's ``precision_reduce`` flag in
  its ops-info (true: trustlist, lowered; false: blocklist, kept; unset: graylist, follows
  its upstream operator). opsdk's generated ops-info leaves the flag unset, so the
  operator is on the graylist; alone in a graph its upstream is the float32 model input,
  so float32 is kept when a float32 kernel exists (else float16), as for
  ``allow_fp32_to_fp16``. Behind an operator that was lowered, a graylisted operator runs
  in float16: ``force_fp16`` predicts that case.

When the chosen kernel is float16, opsdk casts the float32 inputs to float16, runs the
float16 kernel and casts the outputs back to float32, as the compiled graph would, and
compares against the float64 reference.
"""

from __future__ import annotations

from ..errors import SpecError
from ..spec import OpSpec

__all__ = ["PRECISION_MODES", "kernel_dtypes"]

PRECISION_MODES: tuple[str, ...] = (
    "force_fp16",
    "allow_fp32_to_fp16",
    "must_keep_origin_dtype",
    "allow_mix_precision",
)


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
    elif mode in ("allow_fp32_to_fp16", "allow_mix_precision"):
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
