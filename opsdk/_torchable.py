"""What a torch operator schema cannot spell, checked without importing torch.

``import opsdk.torch`` registers every operator as a ``torch.library`` custom op; a spec
whose schema torch refuses is left out with this reason, and ``opsdk new`` refuses it up
front. The rules were read off torch's schema parser and ``torch.library``: a numeric
default must be a finite number (``nan``/``inf`` are not literals of the schema language),
a string default cannot hold a quote or a backslash, and ``prim`` is a reserved namespace.

Example:
    >>> from opsdk.spec import Attr, Input, OpSpec, Output
    >>> spec = OpSpec("MyOp", domain="prim", inputs=[Input("x")], outputs=[Output("y")],
    ...               attrs=[Attr("a", "float", float("nan"))], types={"T": ("float32",)})
    >>> print(torch_problem(spec))  # doctest: +ELLIPSIS
    MyOp: domain 'prim' is torch's reserved namespace 'prim'; ...
"""

from __future__ import annotations

import math
import re
from typing import Any

from .spec import Attr, OpSpec

__all__ = ["torch_problem", "torch_namespace", "RESERVED_NAMESPACES"]

#: namespaces ``torch.library`` refuses to define operators in (torch/library.py)
RESERVED_NAMESPACES = frozenset({"prim"})


def torch_namespace(domain: str) -> str:
    """The torch.library namespace of an ONNX domain: dots become underscores.

    Example:
        >>> torch_namespace("com.opsdk")
        'com_opsdk'
    """
    return re.sub(r"[^A-Za-z0-9_]", "_", domain)


def _default_problem(a: Attr) -> str | None:
    v: Any = a.default
    if a.type == "string":
        if "'" in v or '"' in v or "\\" in v:
            return (f"the default {v!r} of attribute {a.name!r} holds a quote or a backslash, "
                    "which a torch schema cannot spell; pick another default")
        return None
    if a.type in ("float", "floats"):
        values = [v] if a.type == "float" else list(v)
        bad = [float(e) for e in values if not math.isfinite(float(e))]
        if bad:
            return (f"the default {v!r} of attribute {a.name!r} is not finite ({bad[0]}), "
                    "which a torch schema cannot spell; give a finite default or make the "
                    "attribute required (no default)")
    return None


def torch_problem(spec: OpSpec) -> str | None:
    """Why ``spec`` cannot become a torch custom op (``Op: ...; fix``), or None when it can."""
    ns = torch_namespace(spec.domain)
    if ns in RESERVED_NAMESPACES:
        return (f"{spec.name}: domain {spec.domain!r} is torch's reserved namespace {ns!r}; "
                "pick your own domain, e.g. 'com.example'")
    for a in spec.attrs:
        problem = None if a.required else _default_problem(a)
        if problem:
            return f"{spec.name}: {problem}"
    return None
