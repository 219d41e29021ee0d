"""The AI Core kernel of an operator: hand-written in its folder, or generated.

A hand-written kernel lives in ``operators/<op>/op_kernel/<op>.cpp`` with its tiling
description in ``op_kernel/tiling.py`` (``TILING``: a :class:`~._tiling.Tiling`,
and optionally ``applicable(shapes, attrs) -> reason or None`` and, for ``opsdk tune``,
``constraint(params, shapes, soc) -> reason or None``). Otherwise the kernel is
generated from the decomposition (:mod:`._gen`, and :mod:`._gen_reduce` for reductions).
"""

from __future__ import annotations

import importlib.util
import re
import struct
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..._generated import BANNER
from ..._written import UnsafePath, read_record, safe_target, sha256, write_file, write_record
from ...errors import SpecError
from ...spec import OpSpec
from .._op import CannOp, cann_op
from ..project._tiling import TilingField as TilingSlot  # one field of the tiling struct
from ..project._tiling import tiling_fields
from ._gen import AicoreKernel, GenerateRefused
from ._gen_reduce import generate
from ._tiling import Tiling, cpp_tiling, with_params
from ._tuning_file import read_params, read_tuning

__all__ = [
    "aicore_kernel", "inline_helpers", "HELPERS", "tiling_header", "pack_tiling", "TilingSlot",
    "tiling_slots",
    "project_sources", "kernel_sources", "write_kernel_files", "check_socs_have",
]


def _load_module(path: Path) -> Any:
    name = f"_opsdk_tiling_{path.parent.parent.name}"
    mod_spec = importlib.util.spec_from_file_location(name, path)
    if mod_spec is None or mod_spec.loader is None:  # pragma: no cover - defensive
        raise SpecError(f"cannot import {path}")
    module = importlib.util.module_from_spec(mod_spec)
    try:
        mod_spec.loader.exec_module(module)
    except SpecError as e:  # a Tiling(...) the checks refuse: name the file to fix
        raise SpecError(f"{path}: {e}") from None
    except Exception as e:
        raise SpecError(f"{path} does not load ({type(e).__name__}: {e}); fix that file "
                        "(see docs/ascendc_model.md, \"Host tiling, described once\")") from None
    return module


def aicore_kernel(spec: OpSpec, folder: str | Path | None = None, tuned: bool = True
                  ) -> AicoreKernel:
    """The operator's AI Core kernel; raises GenerateRefused when it has none. The kernel
    takes the folder's ``tuning.json`` (``opsdk tune``: a generated kernel's table, or the
    search parameters of a hand-written one) unless ``tuned`` is False.

    Example:
        >>> from opsdk.registry import load_spec
        >>> aicore_kernel(load_spec("operators/thresholded_relu")).origin  # doctest: +SKIP
        'generated'
    """
    if folder is not None:
        src = Path(folder) / "op_kernel" / f"{spec.snake_name}.cpp"
        desc = Path(folder) / "op_kernel" / "tiling.py"
        if src.is_file() and not _unedited(Path(folder) / "op_kernel"):
            if not desc.is_file():
                raise SpecError(f"{spec.name}: {src} has no tiling description; add {desc} "
                                "defining TILING = Tiling(...)")
            module = _load_module(desc)
            tiling = getattr(module, "TILING", None)
            if not isinstance(tiling, Tiling):
                raise SpecError(f"{spec.name}: {desc} must define TILING = Tiling(...)")
            _check_required_fields(spec, tiling, desc)
            table = read_params(Path(folder), spec.name,
                                {k: tuple(v) for k, v in tiling.search.items()}) \
                if tuned and tiling.search else None
            if table:
                tiling = with_params(tiling, table)
            names = tuple(p.name for p in [*spec.inputs, *spec.outputs] if hasattr(p, "name"))
            return AicoreKernel(spec.name, spec.snake_name, inline_helpers(src.read_text()),
                                tiling, names,
                                "DTYPE_" + spec.inputs[0].name.upper(), str(src),
                                needs_same_shape=False,
                                applicable=getattr(module, "applicable", None),
                                constraint=getattr(module, "constraint", None),
                                host=module if hasattr(module, "call_facts") else None)
    tuning = read_tuning(Path(folder), spec.name) if folder is not None and tuned else None
    return generate(spec, BANNER, tuning)


#: The tiling fields a hand-written kernel's TILING must compute: every operator's tiling
#: struct (op_host/<op>_tiling.h, opsdk/ascend/project/_tiling.py) carries them; totalLength
#: (the output's element count) and the attributes are filled in by opsdk.
REQUIRED_FIELDS = {
    "tileNum": "the tiles each block processes, e.g. 'ceildiv(blockLength, tileLength)'",
}


def _check_required_fields(spec: OpSpec, tiling: Tiling, desc: Path) -> None:
    computed = {name for name, _ in tiling.steps}
    for name, what in REQUIRED_FIELDS.items():
        if name not in computed:
            raise SpecError(
                f"{spec.name}: {desc}: TILING has no step computing {name!r}, a field every "
                f"operator's tiling struct carries ({what}); add the step "
                f"({name!r}, '<expression>') to TILING's steps and "
                f"TilingField({name!r}, 'uint32_t') to its fields (see "
                "docs/ascendc_model.md, \"Required tiling fields\")")


#: Ascend C helpers opsdk ships for hand-written kernels (in the model's include folder, real
#: Ascend C): an ``#include "<name>"`` line of a kernel becomes the helper's text, so the kernel
#: stays one self-contained source for the model, the CANN project and the toolkit's builds.
HELPERS = ("opsdk_block_copy.h",)


def inline_helpers(source: str) -> str:
    """``source`` with each ``#include`` of a helper in :data:`HELPERS` replaced by its text.

    Example:
        >>> text = inline_helpers('#include "opsdk_block_copy.h"\\n')
        >>> "namespace block_copy" in text and "#include" not in text.splitlines()[0]
        True
    """
    def _one(m: re.Match[str]) -> str:
        body = (Path(__file__).with_name("include") / m.group(1)).read_text()
        return (f"// ---- {m.group(1)}: opsdk's helper, put here by opsdk ----\n{body}"
                f"// ---- end of {m.group(1)} ----\n")

    names = "|".join(re.escape(h) for h in HELPERS)
    return re.sub(rf'^[ \t]*#[ \t]*include[ \t]+"({names})"[ \t]*\n', _one, source, flags=re.M)


_KERNEL_MANIFEST = ".opsdk-manifest.json"


def _unedited(kernel_dir: Path) -> bool:
    """True when op_kernel/ holds exactly the files opsdk generated (so regenerate them)."""
    try:
        files = read_record(kernel_dir, _KERNEL_MANIFEST)
    except UnsafePath:
        return False
    return bool(files) and all(
        not (kernel_dir / rel).is_symlink() and (kernel_dir / rel).is_file()
        and sha256((kernel_dir / rel).read_bytes()) == digest
        for rel, digest in files.items())


def _tiling_source(spec: OpSpec, kernel: AicoreKernel) -> str:
    from ._templates import render

    t = kernel.tiling
    return render("aicore", "tiling.py", op=spec.name, snake=spec.snake_name,
                  block_dim=t.block_dim, fields=t.fields, steps=t.steps)


def write_kernel_files(spec: OpSpec, folder: str | Path) -> list[str]:
    """Write the generated AI Core kernel into ``folder/op_kernel/`` (kernel + tiling.py).

    Files the author edited are kept; unedited ones are regenerated. Returns the paths
    written; raises GenerateRefused when the operator has no generated kernel.

    Example:
        >>> write_kernel_files(spec, "operators/my_op")  # doctest: +SKIP
        ['op_kernel/my_op.cpp', 'op_kernel/tiling.py']
    """
    kernel_dir = safe_target(Path(folder), "op_kernel")  # never a symlink to elsewhere
    existing = [p for p in kernel_dir.iterdir() if p.name != _KERNEL_MANIFEST] \
        if kernel_dir.is_dir() else []
    if existing and not _unedited(kernel_dir):
        return []
    kernel = generate(spec, "generated by opsdk from the decomposition in spec.py; edits are kept")
    files = {f"{spec.snake_name}.cpp": kernel.source, "tiling.py": _tiling_source(spec, kernel)}
    for rel, text in files.items():
        write_file(kernel_dir, rel, text)
    write_record(kernel_dir, _KERNEL_MANIFEST, {rel: sha256(t) for rel, t in files.items()},
                 op=spec.name)
    return [f"op_kernel/{rel}" for rel in files]


_SIZES = {"uint64_t": 8, "int64_t": 8, "uint32_t": 4, "float": 4, "uint8_t": 1}
_FORMATS = {"uint64_t": "Q", "int64_t": "q", "uint32_t": "I", "float": "f", "uint8_t": "B"}


def tiling_slots(spec: OpSpec, kernel: AicoreKernel, op: CannOp | None = None) -> list[TilingSlot]:
    """Every field of the kernel's tiling struct: the project's fields plus the kernel's."""
    op = op if op is not None else cann_op(spec)
    base = tiling_fields(op)
    have = {s.name for s in base}
    extra = [TilingSlot(f.name, f.ctype, _SIZES[f.ctype]) for f in kernel.tiling.fields
             if f.name not in have]
    return sorted(base + extra, key=lambda s: -s.size)


def tiling_header(spec: OpSpec, kernel: AicoreKernel, op: CannOp | None = None) -> str:
    """op_host/<op>_tiling.h with every field the kernel reads."""
    from ..._generated import render

    op = op if op is not None else cann_op(spec)
    return render("ascend/project/templates/op_host_tiling.h.jinja",
                  op=op, fields=tiling_slots(spec, kernel, op))


def project_sources(spec: OpSpec, op: CannOp, folder: str | Path | None = None
                    ) -> tuple[dict[str, str], str]:
    """The AI Core kernel's files of the CANN project (``op_kernel/<op>.cpp`` and
    ``op_host/<op>_tiling.h``) and its TilingFunc statements; ``({}, "")`` when the
    operator has no AI Core kernel (the project then keeps its TODO kernel). ``folder``: the
    operator's folder (its op_kernel/ and tuning.json; default: the registry's).

    Example:
        >>> from opsdk.registry import find_operator
        >>> from opsdk.ascend._op import cann_op
        >>> spec = find_operator("ThresholdedRelu").spec
        >>> files, tiling = project_sources(spec, cann_op(spec))
        >>> sorted(files), "SetBlockDim" in tiling
        (['op_host/thresholded_relu_tiling.h', 'op_kernel/thresholded_relu.cpp'], False)
    """
    from ...errors import OperatorNotFound
    from ...registry import find_operator

    if folder is None:
        try:
            folder = find_operator(f"{spec.domain}::{spec.name}").folder
        except OperatorNotFound:
            folder = None
    try:
        kernel = aicore_kernel(spec, folder)
    except GenerateRefused:
        return {}, ""
    if kernel.tiling.facts:  # a tiling that runs in Python only: no op_host form
        return {}, ""
    return kernel_sources(spec, op, kernel)


def kernel_sources(spec: OpSpec, op: CannOp, kernel: AicoreKernel) -> tuple[dict[str, str], str]:
    """:func:`project_sources` of a kernel already made (:func:`aicore_kernel`): its files
    under the project's names, checked against the package's SoCs, and its TilingFunc
    statements."""
    check_socs_have(spec, kernel, op.socs)
    if kernel.tiling.facts:
        from ..socs import CannArgError

        raise CannArgError(
            f"{spec.name}: its AI Core kernel ({kernel.origin}) computes the tiling facts "
            f"{', '.join(kernel.tiling.facts)} and its operand layouts in Python "
            "(op_kernel/tiling.py), which the generated op_host cannot run; build it with "
            "--engine aicpu (or --engine auto, which picks AI CPU for it)")
    source = re.sub(rf"__aicore__ void {kernel.snake}\(", f"__aicore__ void {op.snake}(",
                    kernel.source)
    if kernel.origin != "generated":
        rel = Path(kernel.origin).name
        note = f"// {op.banner}: a copy of op_kernel/{rel} of the operator; edit that file\n"
        source = note + source
    files = {f"op_kernel/{op.snake}.cpp": source,
             f"op_host/{op.snake}_tiling.h": tiling_header(spec, kernel, op)}
    return files, cpp_tiling(kernel.tiling)


def check_socs_have(spec: OpSpec, kernel: AicoreKernel, socs: Sequence[str]) -> None:
    """Refuse (CannArgError) when a SoC lacks an Ascend C API the kernel calls for one of the
    operator's dtypes, naming each API, the SoC and the header that says so.

    Example:
        >>> from opsdk.registry import find_operator
        >>> spec = find_operator("Gelu").spec
        >>> check_socs_have(spec, aicore_kernel(spec), ["ascend310b"])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        opsdk.ascend.errors.CannArgError: Gelu: its AI Core kernel ... Erf: not in the Ascend C ...
    """
    from ..aicore_apis import missing_apis
    from ..socs import CannArgError

    dtypes = sorted({d for p in spec.inputs for d in spec.allowed_dtypes(p.type)} |
                    {d for o in spec.outputs for d in spec.allowed_dtypes(o.type)})
    problems = []
    for soc in socs:
        try:
            why = missing_apis(kernel.source, soc, dtypes)
        except CannArgError as e:
            why = [str(e)]
        problems += [f"{soc}: {w}" for w in why]
    if problems:
        raise CannArgError(
            f"{spec.name}: its AI Core kernel ({kernel.origin}) calls Ascend C APIs that "
            "these SoCs lack:\n  " + "\n  ".join(problems) + "\nBuild for those SoCs with "
            "--engine aicpu (or drop them from --soc).")


def _attr_value(slot: TilingSlot, value: Any) -> list[Any]:
    if slot.length == 0:
        return [bool(value) if slot.ctype == "uint8_t" else value]
    if isinstance(value, str):
        raw = value.encode()
        if len(raw) >= slot.length:
            raise SpecError(f"string attribute of {len(raw)} bytes; the tiling carries at most "
                            f"{slot.length - 1}")
        return list(raw.ljust(slot.length, b"\0"))
    items = list(value)
    if len(items) > slot.length:
        raise SpecError(f"list attribute of {len(items)} elements; the tiling carries at most "
                        f"{slot.length}")
    return items + [0] * (slot.length - len(items))


def pack_tiling(spec: OpSpec, kernel: AicoreKernel, computed: Mapping[str, int],
                attrs: Mapping[str, Any], total: int) -> bytes:
    """The tiling bytes the kernel's GET_TILING_DATA reads (struct order, natural alignment)."""
    out = b""
    values = {**{a: v for a, v in attrs.items()}, **computed, "totalLength": total}
    for a, v in attrs.items():
        if isinstance(v, list | tuple):
            values[a + "_len"] = len(v)
    for slot in tiling_slots(spec, kernel):
        if slot.name not in values:
            where = (f"{Path(kernel.origin).parent / 'tiling.py'}" if kernel.origin != "generated"
                     else "the decomposition in spec.py")
            raise SpecError(f"{spec.name}: tiling field {slot.name!r} has no value; compute it in "
                            f"{where} (see docs/ascendc_model.md, \"Required tiling fields\")")
        fmt = _FORMATS[slot.ctype]
        items = _attr_value(slot, values[slot.name]) if slot.name in attrs else [values[slot.name]]
        out += struct.pack(f"<{len(items)}{fmt}", *items)
    return out + b"\0" * (16 - len(out) % 8)
