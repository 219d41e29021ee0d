"""A spec as PyTorch sees it: the namespace, the operator schema and the dtype names.

Example:
    >>> from opsdk.spec import Attr, Input, OpSpec, Output
    >>> spec = OpSpec("MyOp", domain="com.example", inputs=[Input("x"), Input("b", optional=True)],
    ...               outputs=[Output("y")], attrs=[Attr("alpha", "float", 0.5)],
    ...               types={"T": ("float32",)})
    >>> namespace(spec.domain)
    'com_example'
    >>> schema(spec)
    '(Tensor x, Tensor? b=None, *, float alpha=0.5) -> Tensor'
"""

from __future__ import annotations

from typing import Any

from .._torchable import torch_namespace, torch_problem
from ..errors import SpecError
from ..spec import Attr, OpSpec

__all__ = ["namespace", "qualified_name", "schema", "TORCH_ATTR_TYPES", "torch_dtype",
           "dtype_name"]

#: opsdk attribute type -> torch schema type.
TORCH_ATTR_TYPES = {
    "int": "int", "float": "float", "bool": "bool", "string": "str",
    "ints": "int[]", "floats": "float[]",
}

#: opsdk dtype name -> the name of the torch dtype (``torch.<name>``).
_TORCH_DTYPES = {
    "float16": "float16", "bfloat16": "bfloat16", "float32": "float32", "float64": "float64",
    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8",
    "bool": "bool",
}


def namespace(domain: str) -> str:
    """The torch.library namespace of an ONNX domain: dots become underscores.

    Example:
        >>> namespace("com.opsdk")
        'com_opsdk'
    """
    return torch_namespace(domain)


def qualified_name(spec: OpSpec) -> str:
    """``namespace::Name``, the name torch.library registers the operator under."""
    return f"{namespace(spec.domain)}::{spec.name}"


def _default(a: Attr) -> str:
    v = a.default
    if a.type == "string":
        return f"'{v}'"
    if a.type == "bool":
        return "True" if v else "False"
    if a.type in ("ints", "floats"):
        return "[" + ", ".join(repr(int(e) if a.type == "ints" else float(e)) for e in v) + "]"
    return repr(int(v) if a.type == "int" else float(v))


def schema(spec: OpSpec | str) -> str:
    """The torch schema of ``spec`` (or of the operator of that name, as ``opsdk list``
    shows it): inputs positional, attributes keyword-only with defaults.

    Example:
        >>> schema("ThresholdedRelu")  # doctest: +SKIP
        '(Tensor x, *, float alpha=1.0) -> Tensor'
    """
    if isinstance(spec, str):
        from ..registry import find_operator

        spec = find_operator(spec).spec
    if not isinstance(spec, OpSpec):
        raise SpecError(f"schema: expected an OpSpec or an operator name, got "
                        f"{type(spec).__name__} {spec!r}")
    problem = torch_problem(spec)
    if problem:
        raise SpecError(problem)
    args = [f"Tensor? {i.name}=None" if i.optional else f"Tensor {i.name}" for i in spec.inputs]
    if spec.attrs:
        args.append("*")
    for a in spec.attrs:
        decl = f"{TORCH_ATTR_TYPES[a.type]} {a.name}"
        args.append(decl if a.required else f"{decl}={_default(a)}")
    outs = "Tensor" if len(spec.outputs) == 1 else \
        "(" + ", ".join("Tensor" for _ in spec.outputs) + ")"
    return f"({', '.join(args)}) -> {outs}"


def torch_dtype(name: str) -> Any:
    """The torch dtype of an opsdk dtype name."""
    import torch

    return getattr(torch, _TORCH_DTYPES[name])


def dtype_name(dtype: Any) -> str | None:
    """The opsdk name of a torch dtype, or None when opsdk has no such dtype."""
    name = str(dtype).removeprefix("torch.")
    return name if name in _TORCH_DTYPES else None
