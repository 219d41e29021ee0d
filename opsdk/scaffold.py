"""``opsdk new``: render ``templates/operator`` with cookiecutter into ``operators/<op>``.

The template is a real operator: rendered with no edits it builds and passes its tests.
Rendering happens in a temporary folder that is renamed into place, so a failure never
leaves a half-written operator, and an existing folder is never overwritten.

Example:
    >>> from opsdk.scaffold import new_operator, parse_io, parse_attrs
    >>> new_operator("MyOp", inputs=parse_io(["x:float16,float32"]), outputs=parse_io(["y"]),
    ...              attrs=parse_attrs(["threshold:float=0.5"]), domain="com.example",
    ...              root="operators")  # doctest: +SKIP
    PosixPath('operators/my_op')
"""

from __future__ import annotations

import itertools
import math
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _paths
from ._decomposition import decomposition_source
from ._torchable import torch_problem
from ._written import safe_target, write_file
from .dtypes import ALL_DTYPES, ATTR_TYPES, DTYPES
from .errors import ScaffoldError, SpecError
from .naming import spellings
from .spec import Attr, Input, OpSpec, Output

__all__ = ["IoDecl", "parse_io", "parse_attrs", "new_operator", "render_template"]


@dataclass(frozen=True)
class IoDecl:
    """An input or output from the command line: ``name[:dtype,dtype...][?]``."""

    name: str
    dtypes: tuple[str, ...] = ()
    optional: bool = False


def parse_io(items: Sequence[str], flag: str = "--inputs") -> list[IoDecl]:
    """Parse ``["x:float16,float32", "bias:float32?"]``.

    Example:
        >>> [(d.name, d.dtypes, d.optional) for d in parse_io(["x:float16,float32", "b?"])]
        [('x', ('float16', 'float32'), False), ('b', (), True)]
    """
    out = []
    for raw in items:
        for item in filter(None, (s.strip() for s in raw.split(";"))):
            optional = item.endswith("?")
            if optional and flag == "--outputs":
                raise ScaffoldError(
                    f"--outputs {item!r}: outputs cannot be optional ('?' is for inputs); "
                    f"write --outputs {item.rstrip('?')}"
                )
            item = item.rstrip("?")
            name, colon, dts = item.partition(":")
            if not name.strip().isidentifier():
                raise ScaffoldError(
                    f"{flag} {item!r}: {name.strip()!r} is not a valid name (letters, digits, "
                    "'_', not starting with a digit), e.g. x or bias"
                )
            dtypes = tuple(d.strip() for d in dts.split(",") if d.strip())
            if colon and not dtypes:
                raise ScaffoldError(
                    f"{flag} {item!r}: no dtype after ':'; write e.g. {name.strip()}:float32, "
                    f"or {name.strip()} alone for the default float16,float32"
                )
            for d in dtypes:
                if d not in ALL_DTYPES:
                    raise ScaffoldError(
                        f"{name!r}: unknown dtype {d!r}; expected one of {', '.join(ALL_DTYPES)}"
                    )
            out.append(IoDecl(name.strip(), dtypes, optional))
    return out


def _parse_default(name: str, typ: str, text: str) -> Any:
    try:
        if typ == "int":
            return int(text)
        if typ == "float":
            return _finite(name, float(text))
        if typ == "bool":
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError(text)
            return text.lower() in ("true", "1")
        if typ == "string":
            return text
        if typ == "ints":
            return [int(v) for v in text.strip("[]").split(",") if v.strip()]
        return [_finite(name, float(v)) for v in text.strip("[]").split(",") if v.strip()]
    except ScaffoldError:
        raise
    except ValueError:
        raise ScaffoldError(f"attribute {name!r}: default {text!r} is not a valid {typ}") from None


def _finite(name: str, value: float) -> float:
    if not math.isfinite(value):
        raise ScaffoldError(
            f"attribute {name!r}: default {value} is not a finite number, which neither the "
            f"scaffold nor a torch schema can spell; give a finite default (e.g. "
            f"{name}:float=0.0) or none ({name}:float, a required attribute)"
        )
    return value


def parse_attrs(items: Sequence[str]) -> list[Attr]:
    """Parse ``["threshold:float=0.5", "axes:ints=0,1", "mode:string"]`` (no default = required).

    Example:
        >>> parse_attrs(["threshold:float=0.5"])
        [Attr(name='threshold', type='float', default=0.5, doc='')]
    """
    attrs = []
    for item in items:
        decl, eq, default = item.partition("=")
        name, _, typ = decl.partition(":")
        typ = typ.strip() or "float"
        if typ not in ATTR_TYPES:
            raise ScaffoldError(
                f"attribute {name!r}: unknown type {typ!r}; expected one of {', '.join(ATTR_TYPES)}"
            )
        value = _parse_default(name, typ, default.strip()) if eq else Attr(name, typ).default
        attrs.append(Attr(name.strip(), typ, value))
    return attrs


def _type_vars(
    inputs: Sequence[IoDecl], outputs: Sequence[IoDecl]
) -> tuple[dict[str, tuple[str, ...]], list[str], list[str]]:
    """Give each distinct dtype set a type variable T, T1, T2...; untyped outputs get T."""
    types: dict[str, tuple[str, ...]] = {}
    default = ("float16", "float32")

    def var_for(dts: tuple[str, ...]) -> str:
        for k, v in types.items():
            if v == dts:
                return k
        k = "T" if not types else f"T{len(types)}"
        types[k] = dts
        return k

    in_types = [var_for(i.dtypes or default) for i in inputs]
    first = in_types[0] if in_types else var_for(default)
    out_types = [var_for(o.dtypes) if o.dtypes else first for o in outputs]
    return types, in_types, out_types


def _cpp_literal(a: Attr) -> str:
    return {
        "int": "int",
        "float": "float",
        "bool": "bool",
        "string": "std::string",
        "ints": "std::vector<int64_t>",
        "floats": "std::vector<float>",
    }[a.type]


def _py_literal(value: Any) -> str:
    """A default as Python source; lists become tuples (no mutable defaults)."""
    return repr(tuple(value)) if isinstance(value, list) else repr(value)


def _kernel_types(spec: OpSpec) -> dict[str, Any]:
    """The C++ side of the template kernel: one template parameter per type variable (in
    the order a dtype column binds them), each argument's C++ type, the dtype columns."""
    tvars = list(dict.fromkeys(i.type for i in spec.inputs if i.type in spec.types))
    params = {v: f"T{k}" for k, v in enumerate(tvars)}

    def cpp(type_name: str) -> str:
        return params.get(type_name) or DTYPES[spec.resolve_type(type_name, {})].cpp

    columns = []
    for values in itertools.product(*(spec.types[v] for v in tvars)):
        types = [DTYPES[d].cpp for d in values]
        columns.append(types[0] if len(types) == 1 else f"opsdk::Types<{', '.join(types)}>")
    return {
        "kernel_params": ", ".join(f"class {p}" for p in params.values()) or "class...",
        "first_cpp": cpp(spec.inputs[0].type) if spec.inputs else "float",
        "out_cpp": [cpp(o.type) for o in spec.outputs],
        "columns": ", ".join(columns) if tvars else "opsdk::Types<>",
    }


def _backward_context(spec: OpSpec) -> dict[str, Any]:
    """What the template's backward needs: the outputs the kernel copies input 0 into."""
    copies = [k for k, o in enumerate(spec.outputs) if o.type == spec.inputs[0].type]
    return {
        "copies": copies,
        "copies_names": ", ".join(spec.outputs[k].name for k in copies),
        "others": len(spec.inputs) - 1,
    }


#: The inputs' range of a decomposition that reduces (float32 sums of squares overflow beyond
#: ~1.8e19 where the float64 reference does not), as LayerNormalization declares it.
STATS_RANGE = (-1e4, 1e4)


def _context(spec: OpSpec, like_doc: str, backward: bool = False,
             ranged: bool = False) -> dict[str, Any]:
    s = spellings(spec.name)
    params = [i.name + ("=None" if i.optional else "") for i in spec.inputs]
    kw = [a.name + ("" if a.required else f"={_py_literal(a.default)}") for a in spec.attrs]
    signature = ", ".join(params + (["*"] + kw if kw else []))
    shapes = [
        f"{i.name}.shape if {i.name} is not None else ()" if i.optional else f"{i.name}.shape"
        for i in spec.inputs
    ]
    return {
        "op_name": s.camel,
        "snake_name": s.snake,
        "upper_name": s.upper,
        "domain": spec.domain,
        "_op": {
            "doc": like_doc,
            "onnx_op": spec.onnx_op or "",
            "inputs": [
                {"name": i.name, "type": i.type, "optional": i.optional,
                 "range": repr(STATS_RANGE) if ranged else ""} for i in spec.inputs
            ],
            "ranged": ranged,
            "outputs": [{"name": o.name, "type": o.type} for o in spec.outputs],
            "attrs": [
                {
                    "name": a.name,
                    "type": a.type,
                    "required": a.required,
                    "default": repr(a.default),
                    "cpp": _cpp_literal(a),
                }
                for a in spec.attrs
            ],
            "types": {k: repr(tuple(v)) for k, v in spec.types.items()},
            **_kernel_types(spec),
            "signature": signature,
            "shapes": ", ".join(shapes),
            "backward": _backward_context(spec) if backward else {},
        },
    }


def new_operator(
    name: str,
    *,
    inputs: Sequence[IoDecl] = (),
    outputs: Sequence[IoDecl] = (),
    attrs: Sequence[Attr] = (),
    domain: str = "com.example",
    root: str | os.PathLike[str] = "operators",
    doc: str = "",
    onnx_op: str | None = None,
    decomposition: str | None = None,
    backward: bool = False,
) -> Path:
    """Create ``<root>/<snake_name>/`` from the operator template; return its path.

    With ``decomposition`` (an expression, see :mod:`opsdk._decomposition`), spec.py gets
    the ``@SPEC.register_function`` block and reference.py evaluates it (one that reduces
    declares its inputs in :data:`STATS_RANGE`, as LayerNormalization does). With ``backward``,
    spec.py gets a ``@SPEC.register_backward`` block (the template kernel's derivative, for
    autograd through ``opsdk.torch``); a decomposition gives gradients by itself.
    """
    s = spellings(name)
    target = safe_target(Path(root), s.snake)  # a symlink there, dangling or not: refused
    if target.exists():
        raise ScaffoldError(
            f"{name}: {target} already exists; opsdk never overwrites an operator folder. "
            "Pick another name or remove the folder yourself"
        )
    inputs = list(inputs) or [IoDecl("x")]
    outputs = list(outputs) or [IoDecl("y")]
    types, in_types, out_types = _type_vars(inputs, outputs)
    try:
        spec = OpSpec(
            name,
            domain=domain,
            inputs=[Input(i.name, t, i.optional) for i, t in zip(inputs, in_types)],
            outputs=[Output(o.name, t) for o, t in zip(outputs, out_types)],
            attrs=attrs,
            types=types,
            onnx_op=onnx_op,
        )
    except SpecError as e:
        raise ScaffoldError(str(e)) from None
    problem = torch_problem(spec)
    if problem:  # opsdk.torch registers every operator: refuse what it could not
        raise ScaffoldError(problem)
    if spec.inputs[0].optional:
        raise ScaffoldError(f"{name}: the first input must be required (the template copies it)")
    if backward and decomposition:
        raise ScaffoldError(
            f"{name}: --backward and --decomposition together: the decomposition already "
            "gives opsdk.torch its gradients; drop --backward"
        )
    extra = None
    if decomposition:
        extra = decomposition_source(decomposition, [i.name for i in spec.inputs],
                                     {a.name: a.type for a in spec.attrs})
    ranged = re.search(r"\bReduce[A-Z]\w*\(", decomposition or "") is not None
    _render(target, _context(spec, doc, backward, ranged))
    if extra is not None:
        write_file(target, "spec.py", (target / "spec.py").read_text() + extra)
        write_file(target, "reference.py", _decomposition_reference(spec))
    return target


#: reference.py of an operator whose decomposition is its reference: a ``str.format``
#: template beside the operator template (``templates/`` of the install).
_REFERENCE = "decomposition_reference.py.format"


def _decomposition_reference(spec: OpSpec) -> str:
    params = [i.name + ("=None" if i.optional else "") for i in spec.inputs]
    kw = [a.name + ("" if a.required else f"={_py_literal(a.default)}") for a in spec.attrs]
    return (_paths.data_dir("templates") / _REFERENCE).read_text().format(
        op=spec.name,
        signature=", ".join(params + (["*"] + kw if kw else [])),
        inputs=", ".join(i.name for i in spec.inputs),
        attrs=", ".join(f"{a.name!r}: {a.name}" for a in spec.attrs),
    )


def _render(target: Path, context: dict[str, Any]) -> None:
    _render_into(_paths.data_dir("templates") / "operator", target, context)


def render_template(template: Path, root: Path, context: dict[str, Any]) -> Path:
    """Render cookiecutter ``template`` (its folder is ``{{cookiecutter.snake_name}}``) as
    ``root / context["snake_name"]``; refuse an existing folder. Returns the folder.

    Example:
        >>> render_template(Path("templates/llm/swiglu"), Path("operators"),
        ...                 {"op_name": "MySwiglu", "snake_name": "my_swiglu"})  # doctest: +SKIP
        PosixPath('operators/my_swiglu')
    """
    target = safe_target(root, context["snake_name"])
    if target.exists():
        raise ScaffoldError(
            f"{context['op_name']}: {target} already exists; opsdk never overwrites an "
            "operator folder. Pick another name or remove the folder yourself"
        )
    _render_into(template, target, context)
    return target


def _render_into(template: Path, target: Path, context: dict[str, Any]) -> None:
    from cookiecutter.main import cookiecutter

    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".opsdk-new-", dir=target.parent) as tmp:
        cookiecutter(
            str(template),
            no_input=True,
            extra_context=context,
            output_dir=tmp,
            accept_hooks=False,
        )
        rendered = Path(tmp) / context["snake_name"]
        try:
            os.rename(rendered, target)  # atomic; fails if target appeared meanwhile
        except OSError as e:
            shutil.rmtree(rendered, ignore_errors=True)
            raise ScaffoldError(f"{context['op_name']}: cannot create {target}: {e}") from e
