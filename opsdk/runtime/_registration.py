"""Declare and check the C++ REGISTER_CUSTOM_OP registrations of a module against spec.py.

Registrations of the short form (``.Kernels<...>(fn)``) name only their dtype columns;
:func:`registrations` gives them spec.py's inputs, outputs and attributes
(:func:`spec_declaration`, the same facts opsdk writes as C++ for programs without Python)
before anything reads them. The result of :func:`dispatch_table` is the table the cpu
executor uses: input dtypes -> registration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import RegistrationMismatch
from ..spec import OpSpec

__all__ = ["KernelEntry", "SpecDeclaration", "dispatch_table", "registrations", "spec_declaration"]


@dataclass(frozen=True)
class KernelEntry:
    index: int
    input_dtypes: tuple[str, ...]
    output_dtypes: tuple[str, ...]
    attr_order: tuple[str, ...]
    accepts_strided: bool


@dataclass(frozen=True)
class SpecDeclaration:
    """What a ``.Kernels<...>`` registration takes from spec.py (``opsdk::SpecDecl``).

    ``type_vars`` are bound, in order, by the C++ types of one dtype column; an argument's
    type is a type variable or a dtype name; attributes are (name, type, has_default,
    default).
    """

    op: str
    type_vars: tuple[str, ...]
    inputs: tuple[tuple[str, str, bool], ...]
    outputs: tuple[tuple[str, str, bool], ...]
    attrs: tuple[tuple[str, str, bool, Any], ...]


def spec_declaration(spec: OpSpec) -> SpecDeclaration:
    """The facts of ``spec`` a ``.Kernels<...>`` registration is declared with.

    Example:
        >>> from opsdk.spec import Attr, Input, OpSpec, Output
        >>> s = OpSpec("Relu6", domain="com.example", inputs=[Input("x", "T")],
        ...            outputs=[Output("y", "T")],
        ...            attrs=[Attr("cap", "float", 6.0)], types={"T": ("float32",)})
        >>> spec_declaration(s).type_vars, spec_declaration(s).attrs
        (('T',), (('cap', 'float', True, 6.0),))
    """
    tvars = tuple(dict.fromkeys(i.type for i in spec.inputs if i.type in spec.types))

    def typ(name: str) -> str:  # a type variable no input binds resolves as spec.py does
        return name if name in tvars else spec.resolve_type(name, {})

    return SpecDeclaration(
        spec.name,
        tvars,
        tuple((i.name, typ(i.type), i.optional) for i in spec.inputs),
        tuple((o.name, typ(o.type), False) for o in spec.outputs),
        tuple(
            (a.name, a.type, not a.required, None if a.required else a.default)
            for a in spec.attrs
        ),
    )


def registrations(spec: OpSpec, module: Any) -> list[dict[str, Any]]:
    """The module's registrations, the ``.Kernels<...>`` ones declared from ``spec`` first.

    Raises RegistrationMismatch when a dtype column does not bind the spec's type variables.
    """
    regs: list[dict[str, Any]] = module.registrations()
    pending = [c for r in regs if r["name"] == spec.name for c in r.get("columns", ())]
    if not pending:
        return regs
    decl = spec_declaration(spec)
    for column in pending:
        if len(column) != len(decl.type_vars):
            raise _mismatch(
                spec,
                "the dtype columns of Kernels<...>",
                f"a column of {len(column)} type(s) ({', '.join(column)})",
                f"{len(decl.type_vars)} type variable(s) ({', '.join(decl.type_vars)}); "
                "name one C++ type per type variable, opsdk::Types<...> for more than one",
            )
    module.declare_spec(
        decl.op, list(decl.type_vars), list(decl.inputs), list(decl.outputs), list(decl.attrs)
    )
    regs = module.registrations()
    return regs


def _mismatch(spec: OpSpec, what: str, cpp: object, py: object) -> RegistrationMismatch:
    return RegistrationMismatch(
        f"{spec.name}: kernel.cpp and spec.py disagree on {what}: "
        f"REGISTER_CUSTOM_OP says {cpp}, spec.py says {py}; make them match"
    )


def _check_args(
    spec: OpSpec, kind: str, decls: Sequence[Sequence[Any]], items: Sequence[Any]
) -> None:
    cpp_names = [d[1] for d in sorted(decls, key=lambda d: d[0])]
    if sorted(d[0] for d in decls) != list(range(len(decls))):
        raise _mismatch(spec, f"{kind} positions", [d[0] for d in decls], list(range(len(items))))
    if cpp_names != [i.name for i in items]:
        raise _mismatch(spec, f"{kind}s", cpp_names, [i.name for i in items])
    for idx, name, dtype, optional in decls:
        item = items[idx]
        allowed = spec.allowed_dtypes(item.type)
        if dtype not in allowed:
            raise _mismatch(spec, f"the dtype of {kind} {name!r}", dtype, "/".join(allowed))
        if kind == "input" and bool(optional) != item.optional:
            how = "OptionalInput" if item.optional else "Input"
            raise _mismatch(
                spec,
                f"whether input {name!r} is optional",
                bool(optional),
                f"{item.optional} (use .{how}(...))",
            )


def _check_attrs(spec: OpSpec, attrs: Sequence[Sequence[Any]]) -> tuple[str, ...]:
    cpp = {a[0]: a[1] for a in attrs}
    py = {a.name: a.type for a in spec.attrs}
    if set(cpp) != set(py):
        missing = sorted(set(py) - set(cpp))
        extra = sorted(set(cpp) - set(py))
        detail = []
        if missing:
            detail.append(f"missing .Attr for {', '.join(missing)}")
        if extra:
            detail.append(f"unknown to spec.py: {', '.join(extra)}")
        raise _mismatch(spec, f"attributes ({'; '.join(detail)})", sorted(cpp), sorted(py))
    for name, typ in cpp.items():
        if typ != py[name]:
            raise _mismatch(spec, f"the type of attribute {name!r}", typ, py[name])
    return tuple(a[0] for a in attrs)


def dispatch_table(
    spec: OpSpec, regs: Sequence[dict[str, Any]]
) -> dict[tuple[str, ...], KernelEntry]:
    """Validate every registration against ``spec``; return {input dtypes: entry}."""
    table: dict[tuple[str, ...], KernelEntry] = {}
    for idx, reg in enumerate(regs):
        if reg["name"] != spec.name:
            raise _mismatch(spec, "the op name", repr(reg["name"]), repr(spec.name))
        if not reg["has_kernel"]:
            raise RegistrationMismatch(
                f'{spec.name}: a REGISTER_CUSTOM_OP("{spec.name}") has no .KernelFn(...)'
            )
        _check_args(spec, "input", reg["inputs"], spec.inputs)
        _check_args(spec, "output", reg["outputs"], spec.outputs)
        order = _check_attrs(spec, reg["attrs"])
        in_dt = tuple(d[2] for d in sorted(reg["inputs"], key=lambda d: d[0]))
        out_dt = tuple(d[2] for d in sorted(reg["outputs"], key=lambda d: d[0]))
        binding = spec.bind_types(in_dt)
        expected_out = tuple(spec.output_dtype(o, binding) for o in spec.outputs)
        if out_dt != expected_out:
            raise _mismatch(spec, f"output dtypes for inputs {in_dt}", out_dt, expected_out)
        if in_dt in table:
            raise RegistrationMismatch(
                f"{spec.name}: two kernels are registered for input dtypes {in_dt}; keep one"
            )
        table[in_dt] = KernelEntry(idx, in_dt, out_dt, order, bool(reg["accepts_strided"]))
    missing = [c for c in spec.dtype_combinations() if c not in table]
    if missing:
        names = [i.name for i in spec.inputs]
        shown = "; ".join(", ".join(f"{n}={d}" for n, d in zip(names, c)) for c in missing)
        raise RegistrationMismatch(
            f"{spec.name}: spec.py allows {shown} but kernel.cpp registers no kernel for it; "
            "add a REGISTER_CUSTOM_OP for those dtypes or narrow types= in spec.py"
        )
    return table


def spec_registration_cpp(spec: OpSpec, snake: str) -> str:
    """C++ that declares ``spec`` for programs calling its kernels without Python.

    A static ``opsdk::SpecRegistration`` (see custom_op.h): opsdk::invoke gives the
    ``.Kernels<...>`` registrations their names and attributes from it on its first call.

    Example:
        >>> from opsdk.spec import Input, OpSpec, Output
        >>> s = OpSpec("Neg", domain="com.example", inputs=[Input("x", "T")],
        ...            outputs=[Output("y", "T")],
        ...            types={"T": ("float32",)})
        >>> print(spec_registration_cpp(s, "neg").splitlines()[1])
        static const ::opsdk::SpecRegistration opsdk_spec_neg({
    """
    from .._generated import BANNER, render

    return render(
        "runtime/templates/spec_registration.inc.jinja",
        decl=spec_declaration(spec),
        snake=snake,
        banner=BANNER,
    )
