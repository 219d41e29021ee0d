"""Complete operators to start from: ``opsdk new NAME --like llm:<pattern>`` and, for the ONNX
operators listed in :data:`ONNX_OPERATORS`, ``--like onnx:<Op>``.

Each is a complete operator folder under ``templates/llm/<pattern>/`` or
``templates/onnx/<op>/`` (spec with its shape function, ONNX fallback and, where meaningful,
backward; ``shape.h``; a C++ CPU kernel; the NumPy reference with the pattern's invariant;
tests), rendered with the operator's name and domain. Rendered unedited, it builds and
passes ``opsdk test`` and ``opsdk check``. Other ``--like onnx:<Op>`` outline the spec from
ONNX's schema on the generic template (:mod:`opsdk.onnx.like`).

Example:
    >>> from opsdk._starters import STARTERS
    >>> "rms_norm" in STARTERS
    True
"""

from __future__ import annotations

import os
from pathlib import Path

from . import _paths
from .errors import ScaffoldError, SpecError
from .naming import spellings

__all__ = ["STARTERS", "ONNX_OPERATORS", "new_starter", "starter_of"]

#: The LLM starters and what each computes (the ``--like llm:NAME`` spellings).
STARTERS: dict[str, str] = {
    "rms_norm": "y = x * rsqrt(mean(x^2) + eps) * gamma over the last axis, with rstd",
    "add_rms_norm": "x = x1 + x2; y = rms_norm(x) * gamma, with rstd and the sum x",
    "swiglu": "y = silu(gate) * up from the two projections",
    "rotary_embedding": "y = x * cos + rotate(x) * sin (rotate-half, or interleaved pairs)",
    "dequant_swiglu_quant": "int32 -> dequantise -> silu(gate) * up -> int8 per token, scale",
}

#: ONNX operators with a complete operator behind ``--like onnx:<Op>`` (the template folder).
ONNX_OPERATORS: dict[str, str] = {
    "RMSNormalization": "rms_normalization",
}


def starter_of(like: str) -> Path | None:
    """The template folder ``--like`` names, or None when it only outlines a spec.

    Example:
        >>> starter_of("llm:swiglu").name, starter_of("onnx:RMSNormalization").name
        ('swiglu', 'rms_normalization')
        >>> starter_of("onnx:Gelu") is None
        True
    """
    kind, _, name = like.partition(":")
    templates = _paths.data_dir("templates")
    if kind == "onnx":
        return templates / "onnx" / ONNX_OPERATORS[name] if name in ONNX_OPERATORS else None
    if kind != "llm":
        return None
    if name not in STARTERS:
        choices = " | ".join(f"llm:{k}" for k in STARTERS)
        raise ScaffoldError(f"--like {like!r}: no such starter; expected one of {choices}")
    return templates / "llm" / name


def new_starter(name: str, like: str, *, domain: str = "com.example",
                root: str | os.PathLike[str] = "operators") -> Path:
    """Render the complete operator ``like`` names as operator ``name`` into
    ``<root>/<snake_name>/``.

    Raises:
        ScaffoldError: ``like`` names no complete operator, the name or domain is invalid,
            or the folder exists.

    Example:
        >>> new_starter("MyRmsNorm", "llm:rms_norm", root="operators")  # doctest: +SKIP
        PosixPath('operators/my_rms_norm')
    """
    from .scaffold import render_template
    from .spec import OpSpec, Output

    template = starter_of(like)
    if template is None:
        raise ScaffoldError(f"{name}: --like {like!r} names no complete operator; complete "
                            f"ones: {', '.join(_complete())}")
    try:  # the name and the domain, checked as a spec checks them
        OpSpec(name, domain=domain, inputs=[], outputs=[Output("y", "float32")])
    except SpecError as e:
        raise ScaffoldError(str(e)) from None
    s = spellings(name)
    context = {"op_name": s.camel, "snake_name": s.snake, "domain": domain, "starter": like}
    return render_template(template, Path(root), context)


def _complete() -> list[str]:
    return [f"llm:{k}" for k in STARTERS] + [f"onnx:{k}" for k in ONNX_OPERATORS]
