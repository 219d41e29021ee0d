"""Check the C++ REGISTER_CUSTOM_OP registrations of a module against spec.py.

The result is the dispatch table the cpu executor uses: input dtypes -> registration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import RegistrationMismatch
from ..spec import OpSpec

__all__ = ["KernelEntry", "dispatch_table"]


@dataclass(frozen=True)
class KernelEntry:
    index: int
    input_dtypes: tuple[str, ...]
    output_dtypes: tuple[str, ...]
    attr_order: tuple[str, ...]
    accepts_strided: bool


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
