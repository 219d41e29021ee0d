"""The LLM starters: ``opsdk new NAME --like llm:<pattern>``.

Each starter is a complete operator folder under ``templates/llm/<pattern>/`` (spec with its
shape function, ONNX fallback and, where meaningful, backward; ``shape.h``; a C++ CPU kernel;
the NumPy reference with the pattern's invariant; tests), rendered with the operator's name
and domain. Rendered unedited, it builds and passes ``opsdk test`` and ``opsdk check``.

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

__all__ = ["STARTERS", "new_starter", "starter_of"]

#: The starters and what each computes (the ``--like llm:NAME`` spellings).
STARTERS: dict[str, str] = {
    "rms_norm": "y = x * rsqrt(mean(x^2) + eps) * gamma over the last axis, with rstd",
    "add_rms_norm": "x = x1 + x2; y = rms_norm(x) * gamma, with rstd and the sum x",
    "swiglu": "y = silu(gate) * up from the two projections",
    "rotary_embedding": "y = x * cos + rotate(x) * sin (rotate-half, or interleaved pairs)",
}


def starter_of(like: str) -> str | None:
    """The starter ``--like`` names (``llm:rms_norm`` -> ``rms_norm``), None for other kinds.

    Example:
        >>> starter_of("llm:swiglu"), starter_of("onnx:Gelu")
        ('swiglu', None)
    """
    kind, _, name = like.partition(":")
    if kind != "llm":
        return None
    if name not in STARTERS:
        choices = " | ".join(f"llm:{k}" for k in STARTERS)
        raise ScaffoldError(f"--like {like!r}: no such starter; expected one of {choices}")
    return name


def new_starter(name: str, starter: str, *, domain: str = "com.example",
                root: str | os.PathLike[str] = "operators") -> Path:
    """Render starter ``starter`` as operator ``name`` into ``<root>/<snake_name>/``.

    Example:
        >>> new_starter("MyRmsNorm", "rms_norm", root="operators")  # doctest: +SKIP
        PosixPath('operators/my_rms_norm')
    """
    from .scaffold import render_template
    from .spec import OpSpec, Output

    if starter not in STARTERS:
        raise ScaffoldError(f"{name}: unknown starter {starter!r}; expected one of "
                            f"{', '.join(STARTERS)}")
    try:  # the name and the domain, checked as a spec checks them
        OpSpec(name, domain=domain, inputs=[], outputs=[Output("y", "float32")])
    except SpecError as e:
        raise ScaffoldError(str(e)) from None
    s = spellings(name)
    context = {"op_name": s.camel, "snake_name": s.snake, "domain": domain,
               "starter": f"llm:{starter}"}
    return render_template(_paths.data_dir("templates") / "llm" / starter, Path(root), context)

