"""Render and write a CANN project: one package of one or more operators.

``opsdk cann OpA OpB -o dir`` writes one project that builds one ``.run`` with every
operator's AI CPU kernel, AI Core kernel (where it has one), op proto and ONNX plugin, under
one vendor (:mod:`opsdk.ascend.project._package`).

Every file carries the opsdk banner. A manifest (``.opsdk-manifest.json``) records what opsdk
wrote and each file's hash, so a later ``--force`` run overwrites only opsdk's own, unedited
files: a file the author edited is kept, a file opsdk did not write is never touched.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..._generated import environment, render
from ..._written import (
    UnsafePath,
    read_record,
    read_record_data,
    safe_target,
    sha256,
    write_file,
    write_record,
)
from ...dtypes import DTYPES
from ...runtime import spec_registration_cpp
from ...spec import OpSpec
from .._cpp import cpp_string
from .._op import DEFAULT_SOCS, CannOp, cann_op
from ..ascendc._gen import AicoreKernel
from ..ascendc._kernels import kernel_sources
from ..errors import ProjectExists
from ..socs import CannArgError
from ..spellings import AICPU_DTYPES
from ..versions import CannVersion, check_socs, parse_cann_version
from ._msopgen import msopgen_json_many
from ._package import CannPackage, check_package
from ._tiling import tiling_fields

__all__ = [
    "PackageOp",
    "PackagePlan",
    "PlannedOp",
    "default_engine",
    "plan_package",
    "write_package",
    "WriteReport",
    "ProjectExists",
    "project_op_types",
    "MANIFEST",
]

MANIFEST = ".opsdk-manifest.json"
#: This wing's templates, by their path inside the package (see opsdk._generated.render).
_TEMPLATE_DIR = "ascend/project/templates"

#: (template, path in the project) of each operator; ``{s}`` is its CANN type in snake_case.
#: Every operator: the REG_OP prototype and the ONNX plugin.
_COMMON_FILES: tuple[tuple[str, str], ...] = (
    ("op_proto.h.jinja", "op_graph/{s}_proto.h"),
    ("onnx_plugin.cc.jinja", "framework/onnx_plugin/{s}_plugin.cc"),
    ("onnx_apply.h.jinja", "framework/onnx_plugin/{s}_onnx_apply.h"),
    ("onnx_parse.h.jinja", "framework/onnx_plugin/{s}_onnx_parse.h"),
)
#: The AI Core (Ascend C) sources; ``op_kernel/{s}.cpp`` is where the AI Core kernel goes.
_AICORE_FILES: tuple[tuple[str, str], ...] = (
    ("op_host.cpp.jinja", "op_host/{s}.cpp"),
    ("op_host_tiling.h.jinja", "op_host/{s}_tiling.h"),
    ("op_kernel.cpp.jinja", "op_kernel/{s}.cpp"),
)
#: The AI CPU sources laid over msopgen's AI CPU project (``aicpu/`` mirrors its layout).
_AICPU_FILES: tuple[tuple[str, str], ...] = (
    ("aicpu_kernels.h.jinja", "aicpu/cpukernel/impl/{s}_kernels.h"),
    ("aicpu_kernels.cc.jinja", "aicpu/cpukernel/impl/{s}_kernels.cc"),
    ("aicpu_op_info.ini.jinja", "aicpu/cpukernel/op_info_cfg/aicpu_kernel/{s}.ini"),
    ("op_proto.h.jinja", "aicpu/op_proto/{s}.h"),
    ("aicpu_proto.cc.jinja", "aicpu/op_proto/{s}.cc"),
)
#: Files of the package (one each, over every operator).
_PACKAGE_FILES: tuple[tuple[str, str], ...] = (
    ("build.sh.jinja", "build.sh"),
    ("onnx_attrs.h.jinja", "framework/onnx_plugin/opsdk_onnx_attrs.h"),
)
_PACKAGE_AICPU_FILES: tuple[tuple[str, str], ...] = (
    ("aicpu_cmake.jinja", "aicpu/cpukernel/opsdk_aicpu.cmake"),
)
#: The CMake files of the ASC CMake-module layout (CANN 9.0 and later).
_MODULE_FILES: tuple[tuple[str, str], ...] = (
    ("CMakeLists.txt.jinja", "CMakeLists.txt"),
    ("op_host_CMakeLists.txt.jinja", "op_host/CMakeLists.txt"),
    ("op_kernel_CMakeLists.txt.jinja", "op_kernel/CMakeLists.txt"),
    ("onnx_plugin_CMakeLists.txt.jinja", "framework/onnx_plugin/CMakeLists.txt"),
)
#: The msopgen IR JSON of each engine's project (the operators that engine builds).
MSOPGEN_AICPU_JSON = "msopgen/aicpu.json"
MSOPGEN_AICORE_JSON = "msopgen/aicore.json"


def _op_templates(op: CannOp) -> list[tuple[str, str]]:
    files = list(_COMMON_FILES)
    if op.aicore:
        files += _AICORE_FILES
    if op.aicpu:
        files += _AICPU_FILES
    return files


def _package_templates(pkg: CannPackage) -> list[tuple[str, str]]:
    files = list(_PACKAGE_FILES)
    if pkg.aicpu_ops:
        files += _PACKAGE_AICPU_FILES
    if pkg.aicore_ops and pkg.layout == "cmake-modules":
        files += _MODULE_FILES
    return files


@dataclass
class WriteReport:
    """What :func:`write_project` did, path by path (relative to the project)."""

    folder: Path
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    kept_edited: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "folder": str(self.folder),
            "written": self.written,
            "unchanged": self.unchanged,
            "kept_edited": self.kept_edited,
        }


def _render(template: str, **context: Any) -> str:
    """One of this folder's templates, through opsdk's one Jinja environment."""
    environment().filters.setdefault("cpp_string", cpp_string)
    return render(f"{_TEMPLATE_DIR}/{template}", **context)


def _presets(pkg: CannPackage) -> str:
    def var(kind: str, value: str) -> dict[str, str]:
        return {"type": kind, "value": value}

    data = {
        "version": 1,
        "cmakeMinimumRequired": {"major": 3, "minor": 19, "patch": 0},
        "configurePresets": [
            {
                "name": "default",
                "displayName": "Default Config",
                "description": f"{pkg.names}: {pkg.banner}",
                "generator": "Unix Makefiles",
                "binaryDir": "${sourceDir}/build_out",
                "cacheVariables": {
                    "CMAKE_BUILD_TYPE": var("STRING", "Release"),
                    "ENABLE_SOURCE_PACKAGE": var("BOOL", "True"),
                    "ENABLE_BINARY_PACKAGE": var("BOOL", "True"),
                    "ASCEND_COMPUTE_UNIT": var("STRING", ";".join(pkg.socs)),
                    "ENABLE_TEST": var("BOOL", "False"),
                    "vendor_name": var("STRING", pkg.vendor),
                    "ASCEND_PYTHON_EXECUTABLE": var("STRING", "python3"),
                    "CMAKE_INSTALL_PREFIX": var("PATH", "${sourceDir}/build_out"),
                    "ENABLE_CROSS_COMPILE": var("BOOL", "False"),
                },
            }
        ],
        "vendor": {"opsdk": {"generated": pkg.banner, "ops": [op.name for op in pkg.ops]}},
    }
    return json.dumps(data, indent=4) + "\n"


@dataclass(frozen=True)
class PackageOp:
    """One operator of a package: its spec, engine, CANN type and plugin keys.

    ``engine`` is ``aicpu``, ``aicore``, ``both`` or ``auto`` (:func:`default_engine`'s
    choice, made with the kernel the package uses). ``kernel_folder`` is the operator's
    folder (kernel.cpp, shape.h; default: the registry's). ``shape_header`` is read only
    when :func:`plan_package` reads no folder (``sources=False``).
    """

    spec: OpSpec
    engine: str = "aicpu"
    op_type: str | None = None
    origin_op_types: Sequence[str] | None = None
    kernel_folder: str | Path | None = None
    shape_header: bool = False


@dataclass(frozen=True)
class PlannedOp:
    """One operator, decided: its entry (engine chosen, folder and shape header read), why
    that engine, its folder, its AI Core kernel (None: it has none, or its engine builds
    none) and the CANN description every generator reads."""

    entry: PackageOp
    op: CannOp
    folder: Path | None
    engine_reason: str
    kernel: AicoreKernel | None


@dataclass(frozen=True)
class PackagePlan:
    """A package of operators, decided once (:func:`plan_package`): :meth:`files` renders
    it and :func:`write_package` writes it; neither works anything out again."""

    package: CannPackage
    ops: tuple[PlannedOp, ...]
    aicore_skeleton: bool = False
    sources: bool = True

    def files(self) -> dict[str, str]:
        """Every file of the package as ``{relative path: text}``: each operator's own (op
        proto, ONNX plugin, AI CPU adapter and op info, AI Core op_host and op_kernel as its
        engine asks), one ``build.sh``, one msopgen IR JSON per engine, the shared CMake
        files and, with ``sources``, copies of what the AI CPU build compiles from elsewhere
        (:func:`copied_sources`), so the project builds on a host that has only it."""
        pkg = self.package
        table = [(AICPU_DTYPES[d], DTYPES[d].enum) for d in DTYPES]
        files: dict[str, str] = {}
        for planned in self.ops:
            op, spec = planned.op, planned.entry.spec
            aicore, tiling = _aicore_sources(planned, self.aicore_skeleton) if op.aicore \
                else ({}, "")
            ctx = {"op": op, "pkg": pkg, "fields": tiling_fields(op), "dtype_table": table,
                   "aicore_tiling": tiling,
                   "spec_registration": spec_registration_cpp(spec, op.snake) if op.aicpu else ""}
            for t, path in _op_templates(op):
                files[path.format(s=op.snake)] = _render(t, **ctx)
            files.update(aicore)  # the AI Core kernel and its tiling header, when it has one
        for t, path in _package_templates(pkg):
            files[path] = _render(t, pkg=pkg, op=pkg.ops[0])
        if pkg.aicore_ops and pkg.layout == "cmake-modules":
            files["CMakePresets.json"] = _presets(pkg)
        for rel, ops in ((MSOPGEN_AICPU_JSON, pkg.aicpu_ops), (MSOPGEN_AICORE_JSON,
                                                               pkg.aicore_ops)):
            if ops:
                files[rel] = msopgen_json_many([(p.entry.spec, p.op) for p in self.ops
                                                if p.op in ops])
        if self.sources:
            for planned in self.ops:
                files.update({rel: src.read_text() for rel, src
                              in copied_sources(planned.op, planned.folder).items()})
        return dict(sorted(files.items()))


def _package(
    entries: Sequence[PackageOp], socs: Sequence[str], vendor: str, cann: CannVersion | None
) -> CannPackage:
    if not entries:
        raise CannArgError("a CANN package needs at least one operator")
    ops = tuple(
        cann_op(e.spec, socs, e.origin_op_types, vendor, op_type=e.op_type, engine=e.engine,
                cann=cann, shape_header=e.shape_header)
        for e in entries
    )
    check_package(ops)
    first = ops[0]
    for op in ops:
        check_socs(list(op.socs), parse_cann_version(op.cann), op.engine)
    return CannPackage(ops, vendor, first.socs, first.soc_versions, first.cann, first.layout,
                       first.banner)


def _aicore_sources(planned: PlannedOp, skeleton: bool) -> tuple[dict[str, str], str]:
    spec, op = planned.entry.spec, planned.op
    files, tiling = kernel_sources(spec, op, planned.kernel) if planned.kernel else ({}, "")
    if not files and not skeleton:
        raise CannArgError(
            f"{spec.name}: --engine {op.engine} builds an AI Core kernel, but the operator "
            "has none (no generated kernel and no op_kernel/ in its folder), so the package "
            "would carry an empty TODO(author) skeleton. Use --engine aicpu (its own kernel.cpp "
            "on the AI CPU), write op_kernel/ first, or pass --aicore-skeleton to get the "
            "skeleton to fill in"
        )
    return files, tiling


def plan_package(
    entries: Sequence[PackageOp],
    socs: Sequence[str] = DEFAULT_SOCS,
    vendor: str = "opsdk",
    *,
    cann: CannVersion | None = None,
    aicore_skeleton: bool = False,
    sources: bool = True,
) -> PackagePlan:
    """Decide a package of operators once: each operator's folder, engine (``auto``: the
    :func:`default_engine` choice) and why, and its AI Core kernel, made once and used by
    every file that needs it. ``sources``: read each operator's folder (kernel.cpp for the
    AI CPU engine, shape.h) and copy what the AI CPU build compiles; without it no folder
    is read but the AI Core kernel's. An operator whose engine includes the AI Core but has
    no AI Core kernel is refused unless ``aicore_skeleton``.

    Raises:
        CannArgError: a SoC the engine cannot target, no AI Core kernel for ``--engine both``.
        PackageClash: two operators with one CANN type.
        OperatorNotFound: the AI CPU engine is asked for and no kernel.cpp is found.

    Example:
        >>> from opsdk.spec import OpSpec, Input, Output, TFloat
        >>> a = OpSpec("OpA", domain="com.example", inputs=[Input("x")], outputs=[Output("y")],
        ...            types={"T": TFloat})
        >>> b = OpSpec("OpB", domain="com.example", inputs=[Input("x")], outputs=[Output("y")],
        ...            types={"T": TFloat})
        >>> files = plan_package([PackageOp(a), PackageOp(b)], vendor="acme",
        ...                      sources=False).files()
        >>> [f for f in files if f.endswith("_kernels.cc")]
        ['aicpu/cpukernel/impl/op_a_kernels.cc', 'aicpu/cpukernel/impl/op_b_kernels.cc']
        >>> "opInfo.kernelSo=libcust_acme_aicpu_kernels.so" in files[
        ...     "aicpu/cpukernel/op_info_cfg/aicpu_kernel/op_b.ini"]
        True
    """
    decided = [_decide(e, socs, sources) for e in entries]
    pkg = _package([e for e, _, _, _ in decided], socs, vendor, cann)
    ops = tuple(PlannedOp(e, op, folder, why, kernel if op.aicore else None)
                for (e, folder, why, kernel), op in zip(decided, pkg.ops, strict=True))
    return PackagePlan(pkg, ops, aicore_skeleton, sources)


def _decide(entry: PackageOp, socs: Sequence[str], sources: bool
            ) -> tuple[PackageOp, Path | None, str, AicoreKernel | None]:
    """The entry with its folder, engine and shape header decided, why that engine, and its
    AI Core kernel (made once, when the engine may build one)."""
    spec = entry.spec
    need = sources and entry.engine != "aicore"
    folder = _operator_folder(spec, entry.kernel_folder, need_kernel=need)
    kernel: AicoreKernel | None = None
    why = "--engine"
    if entry.engine != "aicpu":
        kernel, refused = _kernel(spec, folder)
        engine, why = (entry.engine, why) if entry.engine != "auto" else \
            _engine_for(spec, kernel, refused, socs)
        entry = replace(entry, engine=engine)
    shape = folder is not None and (folder / "shape.h").is_file() if sources \
        else entry.shape_header
    return replace(entry, kernel_folder=folder, shape_header=shape), folder, why, kernel


def _kernel(spec: OpSpec, folder: Path | None) -> tuple[AicoreKernel | None, str]:
    """The operator's AI Core kernel, or None and why it has none."""
    from ..ascendc._gen import GenerateRefused
    from ..ascendc._kernels import aicore_kernel

    try:
        kernel = aicore_kernel(spec, folder)
    except GenerateRefused as e:
        return None, str(e)
    if kernel.tiling.facts:  # its tiling runs in Python only (op_kernel/tiling.py)
        return None, (f"{spec.name}'s AI Core kernel ({kernel.origin}) computes its tiling "
                      f"facts ({', '.join(kernel.tiling.facts[:4])}, ...) and operand layouts "
                      "in op_kernel/tiling.py, which the generated op_host cannot run yet; "
                      "the model runs it (opsdk bench --device ascendc-model)")
    return kernel, ""


def _engine_for(spec: OpSpec, kernel: AicoreKernel | None, refused: str,
                socs: Sequence[str]) -> tuple[str, str]:
    """``both`` when the kernel exists and every SoC of ``socs`` can build it, else
    ``aicpu``; and why."""
    from ..ascendc._kernels import check_socs_have

    if kernel is None:
        return "aicpu", refused
    try:
        check_socs_have(spec, kernel, socs)
    except CannArgError as e:
        return "aicpu", str(e)
    how = "generated" if kernel.origin == "generated" else f"hand-written, {kernel.origin}"
    return "both", f"{spec.name} has an AI Core kernel ({how}); the AI CPU kernel backs it up"


def _operator_folder(spec: OpSpec, given: str | Path | None, need_kernel: bool) -> Path | None:
    """The operator's folder: ``given``, else the registry's. With ``need_kernel`` (the AI CPU
    engine compiles kernel.cpp) a folder without kernel.cpp is an error."""
    from ...errors import OperatorNotFound
    from ...registry import find_operator

    if given is None:
        try:
            given = find_operator(f"{spec.domain}::{spec.name}").folder
        except OperatorNotFound:
            given = None
    if need_kernel and (given is None or not (Path(given) / "kernel.cpp").is_file()):
        where = f"{given}/kernel.cpp does not exist" if given else "no operator folder was found"
        raise OperatorNotFound(
            f"{spec.name}: the AI CPU engine compiles the operator's own kernel.cpp, but {where}; "
            "pass kernel_folder=<the operator's folder> (opsdk cann does), or --engine aicore"
        )
    return Path(given) if given is not None else None


def aicpu_kernel_path(op: CannOp) -> str:
    """Where the project keeps the operator's own kernel.cpp for the AI CPU build.

    Example:
        >>> from opsdk.spec import OpSpec, Input, Output, TFloat
        >>> s = OpSpec("MyOp", domain="com.example", inputs=[Input("x")], outputs=[Output("y")],
        ...            types={"T": TFloat})
        >>> aicpu_kernel_path(cann_op(s, op_type="MyOpCustom"))
        'aicpu/opsdk/kernels/my_op.cpp'
    """
    return f"aicpu/opsdk/kernels/{op.kernel_snake}.cpp"


def copied_sources(op: CannOp, folder: Path | None) -> dict[str, Path]:
    """What the project compiles besides the generated files (``{path: source}``).

    The shape inference (AI CPU op proto, op_host) gets opsdk's ``shape_fn.h`` and the
    operator's ``shape.h`` if it has one; the AI CPU kernel gets the operator's own
    kernel.cpp (:func:`aicpu_kernel_path`) and opsdk's Python-free runtime and headers.
    """
    from ..._paths import include_dir, runtime_source

    headers = include_dir() / "opsdk"
    out: dict[str, Path] = {}
    for where, engine in (("aicpu/op_proto", op.aicpu), ("op_host", op.aicore)):
        if engine:
            out[f"{where}/opsdk/shape_fn.h"] = headers / "shape_fn.h"
            if folder is not None and (folder / "shape.h").is_file():
                out[f"{where}/{op.snake}_shape.h"] = folder / "shape.h"
    if op.aicpu and folder is not None:
        out[aicpu_kernel_path(op)] = folder / "kernel.cpp"
        out["aicpu/opsdk/runtime.cpp"] = runtime_source()
        for header in sorted(headers.glob("*.h")):
            out[f"aicpu/opsdk/include/opsdk/{header.name}"] = header
    return out


def _read_manifest(folder: Path) -> dict[str, Any]:
    try:
        return read_record_data(folder, MANIFEST)
    except UnsafePath as e:
        raise ProjectExists(str(e)) from None


def _plan(folder: Path, files: dict[str, str], force: bool) -> tuple[dict[str, str], WriteReport]:
    """What to write: new files and opsdk's own unedited ones. A path that goes through a
    symlink inside ``folder`` (or is one) is refused before anything is written."""
    report = WriteReport(folder)
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise ProjectExists(f"{folder} exists and is not a folder; choose another -o path")
    existing = [p for p in folder.iterdir()] if folder.is_dir() else []
    if existing and not force:
        raise ProjectExists(
            f"{folder} is not empty; pass --force to regenerate opsdk's files in it "
            "(files you edited and files opsdk did not write are left alone)"
        )
    try:
        recorded = read_record(folder, MANIFEST)
    except UnsafePath as e:
        raise ProjectExists(str(e)) from None
    todo: dict[str, str] = {}
    foreign = []
    safe_target(folder, MANIFEST)
    for rel, text in files.items():
        target = safe_target(folder, rel)  # no symlink on the way nor at the file
        if not target.exists():
            todo[rel] = text
        elif rel not in recorded or not target.is_file():
            foreign.append(rel)
        elif sha256(target.read_bytes()) != recorded[rel]:
            report.kept_edited.append(rel)
        elif recorded[rel] == sha256(text):
            report.unchanged.append(rel)
        else:
            todo[rel] = text
    if foreign:
        raise ProjectExists(
            f"{folder}: opsdk did not write {', '.join(sorted(foreign))} and will not overwrite "
            "it; move it away or generate into another folder"
        )
    return todo, report


def default_engine(spec: OpSpec, folder: str | Path | None = None,
                   socs: Sequence[str] = ()) -> tuple[str, str]:
    """The engine ``opsdk cann`` builds when none is given (``--engine auto``), and why:
    ``both`` once the operator has an AI Core kernel (hand-written or generated; GE runs it
    where its op info allows and the AI CPU kernel elsewhere) that every SoC of ``socs`` can
    build, ``aicpu`` otherwise.

    Example:
        >>> from opsdk.registry import find_operator
        >>> default_engine(find_operator("FusedConvBnRelu").spec)[0]
        'aicpu'
        >>> gs = find_operator("GridSample")
        >>> default_engine(gs.spec, gs.folder)[0]
        'both'
        >>> default_engine(find_operator("Gelu").spec, socs=["ascend310p"])[0]
        'aicpu'
    """
    kernel, refused = _kernel(spec, None if folder is None else Path(folder))
    return _engine_for(spec, kernel, refused, socs)


def _manifest(plan: PackagePlan, hashes: dict[str, str | None]) -> dict:
    pkg = plan.package
    ops = [
        {"op": p.entry.spec.name, "op_type": list(p.entry.spec.op_type),
         "cann_op_type": p.op.name, "engine": p.op.engine,
         "origin_op_types": list(p.op.origin_op_types)}
        for p in plan.ops
    ]
    data: dict[str, Any] = {"generator": "opsdk"}
    if len(ops) == 1:  # the one-operator fields readers of older projects look for
        data.update({k: ops[0][k] for k in ("op", "op_type", "cann_op_type", "engine",
                                            "origin_op_types")})
    data.update(ops=ops, cann=pkg.cann, layout=pkg.layout, socs=list(pkg.socs),
                vendor=pkg.vendor, files=hashes)
    return data


def write_package(plan: PackagePlan, folder: str | Path, *, force: bool = False) -> WriteReport:
    """Write the package ``plan`` (:func:`plan_package`) into ``folder``; see the module
    docstring for the rules.

    Example:
        >>> import tempfile, pathlib
        >>> from opsdk.registry import find_operator
        >>> ops = [PackageOp(find_operator(n).spec) for n in ("ThresholdedRelu", "GridSample")]
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "pkg"
        >>> "msopgen/aicpu.json" in write_package(plan_package(ops, vendor="acme"), out).written
        True
    """
    folder = Path(folder)
    files = plan.files()
    todo, report = _plan(folder, files, force)
    old = read_record(folder, MANIFEST)
    for rel, text in todo.items():
        write_file(folder, rel, text, 0o755 if rel == "build.sh" else None)
        report.written.append(rel)
    hashes = {
        rel: old[rel] if rel in report.kept_edited else sha256(text) for rel, text in files.items()
    }
    meta = _manifest(plan, hashes)
    write_record(folder, MANIFEST, meta.pop("files"), **{k: v for k, v in meta.items()
                                                         if k != "generator"})
    return report


def read_project_manifest(folder: str | Path) -> dict[str, Any]:
    """The manifest of a project opsdk generated (``{}`` when there is none)."""
    return _read_manifest(Path(folder))


def project_op_types(folder: str | Path) -> dict[tuple[str, str], str]:
    """``{(domain, name): CANN operator type}`` of every operator in a project ``opsdk cann``
    wrote: the type ``--op-type`` gave it (the spec's name without one).

    Raises:
        CannArgError: the folder has no opsdk manifest, or one without operators.

    Example:
        >>> project_op_types("build/cann/pkg")  # doctest: +SKIP
        {('com.opsdk', 'ThresholdedRelu'): 'ThresholdedReluCustom', ('com.opsdk', 'Gelu'): 'Gelu'}
    """
    path = Path(folder) / MANIFEST
    try:
        man = _read_manifest(Path(folder))
    except ProjectExists as err:
        raise CannArgError(str(err)) from None
    listed = man.get("ops")
    entries: list[Any] = listed if isinstance(listed, list) else [man]
    out: dict[tuple[str, str], str] = {}
    for entry in entries:
        op = entry.get("op_type") if isinstance(entry, dict) else None
        if isinstance(op, list) and len(op) >= 2 and entry.get("cann_op_type"):
            out[(str(op[0]), str(op[1]))] = str(entry["cann_op_type"])
    if not out:
        raise CannArgError(
            f"{folder}: no opsdk project manifest with the operator ({path}); pass a folder "
            "written by `opsdk cann`"
        )
    return out


def project_op_type(
    folder: str | Path, key: tuple[str, str] | None = None
) -> tuple[tuple[str, str], str]:
    """``((domain, name), CANN operator type)`` of the operator ``key`` in a project ``opsdk
    cann`` wrote (:func:`project_op_types`); without ``key`` the project must hold one operator.

    Raises:
        CannArgError: no manifest, ``key`` not in it, or several operators and no ``key``.

    Example:
        >>> project_op_type("build/cann/trelu")  # doctest: +SKIP
        (('com.opsdk', 'ThresholdedRelu'), 'ThresholdedReluCustom')
    """
    types = project_op_types(folder)
    if key is None and len(types) == 1:
        return next(iter(types.items()))
    if key is not None and key in types:
        return key, types[key]
    have = ", ".join(f"{d}::{n}" for d, n in types)
    want = f"{key[0]}::{key[1]}" if key else "one operator"
    raise CannArgError(f"{folder}: the project holds {have}, not {want}; pass that "
                       "operator's project")
