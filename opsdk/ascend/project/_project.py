"""Render and write the CANN project of one operator.

Every file carries the opsdk banner. A manifest (``.opsdk-manifest.json``) records what opsdk
wrote and each file's hash, so a later ``--force`` run overwrites only opsdk's own, unedited
files: a file the author edited is kept, a file opsdk did not write is never touched.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._generated import render
from ...dtypes import DTYPES
from ...errors import OpsdkError
from ...runtime._registration import spec_registration_cpp
from ...spec import OpSpec
from .._op import DEFAULT_SOCS, CannOp, cann_op
from ..ascendc._kernels import project_sources
from ..spellings import AICPU_DTYPES
from ..versions import CannVersion, check_socs, parse_cann_version
from ._msopgen import msopgen_json
from ._tiling import tiling_fields

__all__ = [
    "default_engine",
    "render_project",
    "project_files",
    "write_project",
    "WriteReport",
    "ProjectExists",
    "MANIFEST",
]

MANIFEST = ".opsdk-manifest.json"
#: This wing's templates, by their path inside the package (see opsdk._generated.render).
_TEMPLATE_DIR = "ascend/project/templates"

#: (template, path in the project); ``{s}`` is the CANN operator type in snake_case.
#: Every project: the msopgen IR JSON's build script, the REG_OP prototype, the ONNX plugin.
_COMMON_FILES: tuple[tuple[str, str], ...] = (
    ("build.sh.jinja", "build.sh"),
    ("op_proto.h.jinja", "op_graph/{s}_proto.h"),
    ("onnx_plugin.cc.jinja", "framework/onnx_plugin/{s}_plugin.cc"),
    ("onnx_apply.h.jinja", "framework/onnx_plugin/{s}_onnx_apply.h"),
    ("onnx_parse.h.jinja", "framework/onnx_plugin/{s}_onnx_parse.h"),
    ("onnx_attrs.h.jinja", "framework/onnx_plugin/opsdk_onnx_attrs.h"),
)
#: The AI Core (Ascend C) sources; ``op_kernel/{s}.cpp`` is where the AI Core kernel goes.
_AICORE_FILES: tuple[tuple[str, str], ...] = (
    ("op_host.cpp.jinja", "op_host/{s}.cpp"),
    ("op_host_tiling.h.jinja", "op_host/{s}_tiling.h"),
    ("op_kernel.cpp.jinja", "op_kernel/{s}.cpp"),
)
#: The CMake files of the ASC CMake-module layout (CANN 9.0 and later).
_MODULE_FILES: tuple[tuple[str, str], ...] = (
    ("CMakeLists.txt.jinja", "CMakeLists.txt"),
    ("op_host_CMakeLists.txt.jinja", "op_host/CMakeLists.txt"),
    ("op_kernel_CMakeLists.txt.jinja", "op_kernel/CMakeLists.txt"),
    ("onnx_plugin_CMakeLists.txt.jinja", "framework/onnx_plugin/CMakeLists.txt"),
)
#: The AI CPU sources laid over msopgen's AI CPU project (``aicpu/`` mirrors its layout).
_AICPU_FILES: tuple[tuple[str, str], ...] = (
    ("aicpu_kernels.h.jinja", "aicpu/cpukernel/impl/{s}_kernels.h"),
    ("aicpu_kernels.cc.jinja", "aicpu/cpukernel/impl/{s}_kernels.cc"),
    ("aicpu_op_info.ini.jinja", "aicpu/cpukernel/op_info_cfg/aicpu_kernel/{s}.ini"),
    ("aicpu_cmake.jinja", "aicpu/cpukernel/opsdk_aicpu.cmake"),
    ("op_proto.h.jinja", "aicpu/op_proto/{s}.h"),
    ("aicpu_proto.cc.jinja", "aicpu/op_proto/{s}.cc"),
)
def _templates(op: CannOp) -> list[tuple[str, str]]:
    files = list(_COMMON_FILES)
    if op.aicore:
        files += _AICORE_FILES
        if op.layout == "cmake-modules":
            files += _MODULE_FILES
    if op.aicpu:
        files += _AICPU_FILES
    return files


class ProjectExists(FileExistsError, OpsdkError):
    """The output folder holds files that opsdk may not overwrite."""


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


def _presets(op: CannOp) -> str:
    def var(kind: str, value: str) -> dict[str, str]:
        return {"type": kind, "value": value}

    data = {
        "version": 1,
        "cmakeMinimumRequired": {"major": 3, "minor": 19, "patch": 0},
        "configurePresets": [
            {
                "name": "default",
                "displayName": "Default Config",
                "description": f"{op.name}: {op.banner}",
                "generator": "Unix Makefiles",
                "binaryDir": "${sourceDir}/build_out",
                "cacheVariables": {
                    "CMAKE_BUILD_TYPE": var("STRING", "Release"),
                    "ENABLE_SOURCE_PACKAGE": var("BOOL", "True"),
                    "ENABLE_BINARY_PACKAGE": var("BOOL", "True"),
                    "ASCEND_COMPUTE_UNIT": var("STRING", ";".join(op.socs)),
                    "ENABLE_TEST": var("BOOL", "False"),
                    "vendor_name": var("STRING", op.vendor),
                    "ASCEND_PYTHON_EXECUTABLE": var("STRING", "python3"),
                    "CMAKE_INSTALL_PREFIX": var("PATH", "${sourceDir}/build_out"),
                    "ENABLE_CROSS_COMPILE": var("BOOL", "False"),
                },
            }
        ],
        "vendor": {"opsdk": {"generated": op.banner, "op": op.name}},
    }
    return json.dumps(data, indent=4) + "\n"


def render_project(
    spec: OpSpec,
    socs: Sequence[str] = DEFAULT_SOCS,
    origin_op_types: Sequence[str] | None = None,
    vendor: str = "opsdk",
    *,
    engine: str = "aicpu",
    cann: CannVersion | None = None,
    op_type: str | None = None,
    shape_header: bool = False,
    op: CannOp | None = None,
) -> dict[str, str]:
    """Every generated file of the project as ``{relative path: text}``.

    ``engine`` picks the kernels: ``aicpu`` (the operator's own kernel.cpp on the AI CPU,
    through a generated adapter), ``aicore`` (an Ascend C project) or ``both``. ``cann``
    picks the AI Core layout: CANN 8.x builds through the host's msopgen, 9.x with the ASC
    CMake modules (see :mod:`opsdk.ascend.versions`). ``shape_header``: the operator has a C++
    shape function (``operators/<op>/shape.h``) the generated inference calls. The operator's
    kernel.cpp, shape.h and opsdk's runtime are added to these files by :func:`project_files`.
    ``op``: the operator's description when the caller has built it (the other arguments are
    then not read).

    Example:
        >>> from opsdk.spec import OpSpec, Input, Output, Attr, TFloat
        >>> s = OpSpec("MyOp", domain="com.example", inputs=[Input("x")], outputs=[Output("y")],
        ...            types={"T": TFloat})
        >>> files = render_project(s)
        >>> "aicpu/cpukernel/impl/my_op_kernels.cc" in files
        True
        >>> "op_host/my_op.cpp" in render_project(s, engine="aicore")
        True
    """
    if op is None:
        op = cann_op(
            spec, socs, origin_op_types, vendor, op_type=op_type, engine=engine, cann=cann,
            shape_header=shape_header,
        )
    check_socs(list(op.socs), parse_cann_version(op.cann), op.engine)
    table = [(d.name, d.enum, AICPU_DTYPES[d.name]) for d in DTYPES.values()]
    aicore, aicore_tiling = project_sources(spec, op) if op.aicore else ({}, "")
    ctx = {"op": op, "fields": tiling_fields(op), "dtype_table": table,
           "aicore_tiling": aicore_tiling,
           "spec_registration": spec_registration_cpp(spec, op.snake) if op.aicpu else ""}
    files = {
        path.format(s=op.snake): render(f"{_TEMPLATE_DIR}/{t}", **ctx)
        for t, path in _templates(op)
    }
    files.update(aicore)  # the AI Core kernel and its tiling header, when the op has one
    if op.aicore and op.layout == "cmake-modules":
        files["CMakePresets.json"] = _presets(op)
    files[f"{op.snake}.json"] = msopgen_json(spec, op=op)
    return dict(sorted(files.items()))


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


def copied_sources(op: CannOp, folder: Path | None) -> dict[str, Path]:
    """What the project compiles besides the generated files (``{path: source}``).

    The shape inference (AI CPU op proto, op_host) gets opsdk's ``shape_fn.h`` and the
    operator's ``shape.h`` if it has one; the AI CPU kernel gets the operator's own
    kernel.cpp and opsdk's Python-free runtime and headers.
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
        out["aicpu/opsdk/kernel.cpp"] = folder / "kernel.cpp"
        out["aicpu/opsdk/runtime.cpp"] = runtime_source()
        for header in sorted(headers.glob("*.h")):
            out[f"aicpu/opsdk/include/opsdk/{header.name}"] = header
    return out


def _sha(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def _read_manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ProjectExists(
            f"{path}: unreadable opsdk manifest ({e}); remove it or pick another folder"
        ) from None
    return data if isinstance(data, dict) else {}


def _plan(folder: Path, files: dict[str, str], force: bool) -> tuple[dict[str, str], WriteReport]:
    report = WriteReport(folder)
    if folder.exists() and not folder.is_dir():
        raise ProjectExists(f"{folder} exists and is not a folder; choose another -o path")
    existing = [p for p in folder.iterdir()] if folder.is_dir() else []
    if existing and not force:
        raise ProjectExists(
            f"{folder} is not empty; pass --force to regenerate opsdk's files in it "
            "(files you edited and files opsdk did not write are left alone)"
        )
    recorded: dict[str, str] = _read_manifest(folder).get("files", {})
    todo: dict[str, str] = {}
    foreign = []
    for rel, text in files.items():
        target = folder / rel
        if not target.exists():
            todo[rel] = text
        elif rel not in recorded:
            foreign.append(rel)
        elif _sha(target.read_bytes()) != recorded[rel]:
            report.kept_edited.append(rel)
        elif recorded[rel] == _sha(text):
            report.unchanged.append(rel)
        else:
            todo[rel] = text
    if foreign:
        raise ProjectExists(
            f"{folder}: opsdk did not write {', '.join(sorted(foreign))} and will not overwrite "
            "it; move it away or generate into another folder"
        )
    return todo, report


def default_engine(spec: OpSpec, folder: str | Path | None = None) -> tuple[str, str]:
    """The engine ``opsdk cann`` builds when none is given, and why: ``both`` once the
    operator has an AI Core kernel (hand-written or generated; GE runs it where its op info
    allows and the AI CPU kernel elsewhere), ``aicpu`` until then.

    Example:
        >>> from opsdk.registry import find_operator
        >>> default_engine(find_operator("GridSample").spec)[0]
        'aicpu'
    """
    from ..ascendc._gen import GenerateRefused
    from ..ascendc._kernels import aicore_kernel

    try:
        kernel = aicore_kernel(spec, folder)
    except GenerateRefused as e:
        return "aicpu", str(e)
    how = "generated" if kernel.origin == "generated" else f"hand-written, {kernel.origin}"
    return "both", f"{spec.name} has an AI Core kernel ({how}); the AI CPU kernel backs it up"


def project_files(
    spec: OpSpec,
    socs: Sequence[str] = DEFAULT_SOCS,
    origin_op_types: Sequence[str] | None = None,
    vendor: str = "opsdk",
    *,
    engine: str = "aicpu",
    cann: CannVersion | None = None,
    op_type: str | None = None,
    kernel_folder: str | Path | None = None,
) -> dict[str, str]:
    """Every file of the project: :func:`render_project`'s, and for the AI CPU engine copies
    of what it compiles from elsewhere (:func:`copied_sources`: the operator's kernel.cpp and
    shape.h from ``kernel_folder``, default: the registry's folder of the operator; opsdk's
    runtime and headers), so the project builds on a host that has only the project.

    Raises:
        OperatorNotFound: the AI CPU engine is asked for and no kernel.cpp is found.

    Example:
        >>> from opsdk.registry import find_operator
        >>> files = project_files(find_operator("ThresholdedRelu").spec)
        >>> "aicpu/opsdk/kernel.cpp" in files and "aicpu/opsdk/include/opsdk/custom_op.h" in files
        True
    """
    op, folder = _describe(spec, socs, origin_op_types, vendor, engine, cann, op_type,
                           kernel_folder)
    return _files(spec, op, folder)


def _describe(
    spec: OpSpec,
    socs: Sequence[str],
    origin_op_types: Sequence[str] | None,
    vendor: str,
    engine: str,
    cann: CannVersion | None,
    op_type: str | None,
    kernel_folder: str | Path | None,
) -> tuple[CannOp, Path | None]:
    """The operator's description (built once per project) and its folder."""
    folder = _operator_folder(spec, kernel_folder, need_kernel=engine in ("aicpu", "both"))
    shape_header = folder is not None and (folder / "shape.h").is_file()
    op = cann_op(spec, socs, origin_op_types, vendor, op_type=op_type, engine=engine, cann=cann,
                 shape_header=shape_header)
    return op, folder


def _files(spec: OpSpec, op: CannOp, folder: Path | None) -> dict[str, str]:
    files = render_project(spec, op=op)
    files.update({rel: p.read_text() for rel, p in copied_sources(op, folder).items()})
    return dict(sorted(files.items()))


def write_project(
    spec: OpSpec,
    folder: str | Path,
    *,
    socs: Sequence[str] = DEFAULT_SOCS,
    origin_op_types: Sequence[str] | None = None,
    vendor: str = "opsdk",
    force: bool = False,
    engine: str = "aicpu",
    cann: CannVersion | None = None,
    op_type: str | None = None,
    kernel_folder: str | Path | None = None,
) -> WriteReport:
    """Write :func:`project_files` into ``folder``; see the module docstring for the rules.

    Example:
        >>> import tempfile, pathlib
        >>> from opsdk.spec import OpSpec, Input, Output, TFloat
        >>> s = OpSpec("MyOp", domain="com.example", inputs=[Input("x")], outputs=[Output("y")],
        ...            types={"T": TFloat})
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "my_op"
        >>> "op_kernel/my_op.cpp" in write_project(s, out, engine="aicore").written
        True
    """
    folder = Path(folder)
    op, op_folder = _describe(spec, socs, origin_op_types, vendor, engine, cann, op_type,
                              kernel_folder)
    files = _files(spec, op, op_folder)
    todo, report = _plan(folder, files, force)
    old = _read_manifest(folder).get("files", {})
    for rel, text in todo.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        if rel == "build.sh":
            target.chmod(0o755)
        report.written.append(rel)
    hashes = {
        rel: old[rel] if rel in report.kept_edited else _sha(text) for rel, text in files.items()
    }
    manifest = {
        "generator": "opsdk",
        "op": spec.name,
        "op_type": list(spec.op_type),
        "cann_op_type": op.name,
        "engine": engine,
        "cann": op.cann,
        "layout": op.layout,
        "origin_op_types": list(op.origin_op_types),
        "socs": list(socs),
        "vendor": vendor,
        "files": hashes,
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return report


def read_project_manifest(folder: str | Path) -> dict[str, Any]:
    """The manifest of a project opsdk generated (``{}`` when there is none)."""
    return _read_manifest(Path(folder))


def project_op_type(folder: str | Path) -> tuple[tuple[str, str], str]:
    """``((domain, name), CANN operator type)`` of the operator in a project ``opsdk cann``
    wrote: the type ``--op-type`` gave it (the spec's name without one).

    Raises:
        CannArgError: the folder has no opsdk manifest, or one without the operator.

    Example:
        >>> project_op_type("build/cann/trelu")  # doctest: +SKIP
        (('com.opsdk', 'ThresholdedRelu'), 'ThresholdedReluCustom')
    """
    from ..socs import CannArgError

    path = Path(folder) / MANIFEST
    try:
        man = _read_manifest(Path(folder))
    except ProjectExists as e:
        raise CannArgError(str(e)) from None
    op = man.get("op_type")
    if not man or not isinstance(op, list) or len(op) < 2 or not man.get("cann_op_type"):
        raise CannArgError(
            f"{folder}: no opsdk project manifest with the operator ({path}); pass a folder "
            "written by `opsdk cann`"
        )
    return (str(op[0]), str(op[1])), str(man["cann_op_type"])
