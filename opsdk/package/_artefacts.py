"""The ONNX and CANN artefacts an operator wheel carries, from opsdk.onnx and opsdk.ascend.

Both generators are optional parts of opsdk: when one cannot be imported, the wheel is
built without its artefacts and :class:`Artefacts` says why. A generator that exists but
fails on an operator is an error (a wheel silently missing its CANN project is worse).

Per operator folder in the wheel::

    onnx/schema.json       the ONNX OpSchema (domain, version, inputs, outputs, type
                           constraints, attributes), for tools without opsdk
    onnx/function.onnx     the fallback decomposition (FunctionProto), when spec.py has one
    cann/...               the CANN operator project (msopgen JSON, the AI CPU kernel from
                           the operator's kernel.cpp, ONNX framework plugin, op proto) for
                           the target SoCs
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._generated import BANNER
from ..ascend import DEFAULT_SOCS
from ..errors import BuildError, OpsdkError, SpecError
from ..spec import OpSpec

__all__ = ["Artefacts", "generate_artefacts", "schema_dict", "package_opset"]


@dataclass
class Artefacts:
    """Generated files per operator snake name, and what was left out and why."""

    files: dict[str, dict[str, bytes]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # kind -> reason
    onnx_opset: int | None = None

    def listing(self, snake: str) -> list[str]:
        return sorted(self.files.get(snake, {}))


def schema_dict(spec: OpSpec) -> dict[str, Any]:
    """The ONNX OpSchema of ``spec`` (as opsdk.onnx builds it) as plain JSON data.

    Example:
        >>> schema_dict(spec)["since_version"]  # doctest: +SKIP
        1
    """
    from opsdk.onnx import make_schema

    s = make_schema(spec)
    opt = {0: "single", 1: "optional", 2: "variadic"}

    def params(ps: Any) -> list[dict[str, Any]]:
        return [
            {"name": p.name, "type": p.type_str, "option": opt.get(int(p.option), str(p.option))}
            for p in ps
        ]

    attrs = []
    for a in spec.attrs:
        attrs.append({
            "name": a.name,
            "type": a.type,
            "required": a.required,
            "default": None if a.required else a.default,
        })
    return {
        "generated": BANNER,
        "domain": s.domain,
        "name": s.name,
        "since_version": s.since_version,
        "doc": s.doc,
        "inputs": params(s.inputs),
        "outputs": params(s.outputs),
        "type_constraints": [
            {"type_param": c.type_param_str, "allowed_types": list(c.allowed_type_strs)}
            for c in s.type_constraints
        ],
        "attributes": attrs,
    }


def package_opset(specs: Sequence[OpSpec], opset: int | None = None) -> int:
    """The ai.onnx opset of the wheel's fallback functions: ``opset`` when given (checked
    against each function), else the lowest from opsdk's default up that every one needs.

    Example:
        >>> from opsdk.registry import find_operator
        >>> package_opset([find_operator("GridSample").spec])
        16
    """
    from opsdk.onnx import DEFAULT_OPSET, build_function, function_opset

    if opset is not None:
        newest = onnx_newest()
        if not newest >= opset >= 1:
            raise SpecError(f"--opset {opset}: ai.onnx opsets run from 1 to {newest}")
        for spec in specs:
            if spec.function is not None:
                try:
                    build_function(spec, opset)
                except SpecError as e:
                    raise SpecError(f"{e} -- pass a higher --opset to opsdk package") from None
        return opset
    need = [function_opset(s, DEFAULT_OPSET) for s in specs if s.function is not None]
    return max([int(DEFAULT_OPSET), *need])


def onnx_newest() -> int:
    import onnx

    return int(onnx.defs.onnx_opset_version())


def _onnx_files(spec: OpSpec, opset: int) -> dict[str, bytes]:
    from opsdk.onnx import build_function

    text = json.dumps(schema_dict(spec), indent=2, sort_keys=True) + "\n"
    files = {"onnx/schema.json": text.encode()}
    if spec.function is not None:
        files["onnx/function.onnx"] = build_function(spec, opset).SerializeToString(
            deterministic=True
        )
    return files


def _cann_files(spec: OpSpec, socs: Sequence[str], folder: Path | None) -> dict[str, bytes]:
    from opsdk.ascend import PackageOp, plan_package

    files = plan_package([PackageOp(spec, kernel_folder=folder)], socs).files()
    return {f"cann/{rel}": text.encode() for rel, text in files.items()}


def _available(kind: str) -> str | None:
    """None when ``opsdk.<kind>`` imports, else the reason it does not."""
    import importlib

    try:
        module = {"cann": "opsdk.ascend"}.get(kind, f"opsdk.{kind}")
        importlib.import_module(module)
    except ImportError as e:
        return f"{module} is not available ({e})"
    return None


def generate_artefacts(
    specs: Sequence[OpSpec], *, onnx: bool = True, cann: bool = True,
    socs: Sequence[str] = DEFAULT_SOCS, folders: Sequence[Path] | None = None,
    opset: int | None = None,
) -> Artefacts:
    """Generate the ONNX and CANN artefacts of each spec (keyed by snake name).

    ``folders`` (one per spec) are the operators' source folders, whose kernel.cpp the CANN
    project's AI CPU kernel compiles; by default the registry finds them. ``opset`` is the
    ai.onnx opset of the fallback functions (default: the lowest every function needs, from
    opsdk's default up, see :func:`package_opset`).

    Example:
        >>> a = generate_artefacts([spec], cann=False)  # doctest: +SKIP
        >>> a.listing(spec.snake_name)  # doctest: +SKIP
        ['onnx/function.onnx', 'onnx/schema.json']
    """
    out = Artefacts(files={s.snake_name: {} for s in specs})
    wanted = {"onnx": onnx, "cann": cann}
    for kind, want in wanted.items():
        reason = "disabled (--no-" + kind + ")" if not want else _available(kind)
        if reason:
            out.skipped[kind] = reason
    if "onnx" not in out.skipped:
        out.onnx_opset = package_opset(specs, opset)
    for n, spec in enumerate(specs):
        try:
            if out.onnx_opset is not None:
                out.files[spec.snake_name].update(_onnx_files(spec, out.onnx_opset))
            if "cann" not in out.skipped:
                folder = folders[n] if folders is not None else None
                out.files[spec.snake_name].update(_cann_files(spec, socs, folder))
        except OpsdkError as e:
            raise type(e)(f"{e} -- while generating the artefacts of {spec.name}") from e
        except Exception as e:
            raise BuildError(
                f"{spec.name}: generating its ONNX/CANN artefacts failed: "
                f"{type(e).__name__}: {e} (skip them with --no-onnx / --no-cann)"
            ) from e
    return out
