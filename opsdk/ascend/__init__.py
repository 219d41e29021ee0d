"""The Ascend side of an operator: CANN project, ONNX framework plugin, op proto and ATC.

Everything is generated from the operator's spec (``opsdk cann MyOp -o build/cann/my_op``):
the msopgen IR JSON, the AI CPU sources that run the operator's own kernel.cpp on the NPU
(kernel adapter, op info, op proto with inference), an Ascend C project (op_host OpDef with
shape/dtype inference and tiling, op_kernel, CMake files for CANN 9.x), the REG_OP prototype
and the ONNX framework plugin whose OriginOpType keys are exactly what CANN's ONNX parser
looks up. ``build.sh`` builds them with the host's own CANN tools (msopgen on 8.x).

Example:
    >>> from opsdk.ascend import render_project, default_origin_op_type
    >>> from opsdk.spec import OpSpec, Input, Output, TFloat
    >>> s = OpSpec("MyOp", domain="com.example", inputs=[Input("x")], outputs=[Output("y")],
    ...            types={"T": TFloat})
    >>> default_origin_op_type(s)
    'com.example::1::MyOp'
    >>> sorted(render_project(s))[:2]
    ['aicpu/cpukernel/impl/my_op_kernels.cc', 'aicpu/cpukernel/impl/my_op_kernels.h']
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names below, imported on first use (see __getattr__)
    from ._op import (
        CannOp,
        builtin_clash,
        builtin_op_types,
        builtin_signatures,
        cann_op,
        check_op_type,
        default_origin_op_type,
    )
    from .atc._atc import (
        AtcPlan,
        atc_executable,
        parse_input_shape,
        plan_atc,
        project_plugin_keys,
        run_atc,
    )
    from .atc._onnx_keys import (
        KeyProblem,
        NodeKey,
        check_parser_rules,
        check_plugin_keys,
        node_keys,
        normalize_default_domain,
        origin_op_types,
    )
    from .project._msopgen import msopgen_data, msopgen_json
    from .project._package import PackageClash, installed_vendors
    from .project._project import (
        PackageOp,
        ProjectExists,
        WriteReport,
        default_engine,
        package_files,
        project_files,
        project_op_type,
        project_op_types,
        read_project_manifest,
        render_package,
        render_project,
        write_package,
        write_project,
    )
    from .socs import (
        CannArgError,
        compute_unit,
        implmodes,
        precision_modes,
        precision_modes_v2,
        soc_table,
    )
    from .versions import (
        DEFAULT_CANN,
        ENGINES,
        CannVersion,
        ResolvedCann,
        check_socs,
        parse_cann_version,
        resolve_cann,
    )

#: Where each public name lives. The wing's face imports nothing until a name is used, so
#: ``import opsdk.ascend.precision`` (a fact: the floors below read it) runs no generator.
_WHERE: dict[str, str] = {
    "AtcPlan": ".atc._atc",
    "CannArgError": ".socs",
    "CannOp": "._op",
    "CannVersion": ".versions",
    "DEFAULT_CANN": ".versions",
    "ENGINES": ".versions",
    "KeyProblem": ".atc._onnx_keys",
    "NodeKey": ".atc._onnx_keys",
    "ProjectExists": ".project._project",
    "ResolvedCann": ".versions",
    "WriteReport": ".project._project",
    "atc_executable": ".atc._atc",
    "builtin_clash": "._op",
    "cann_op": "._op",
    "check_op_type": "._op",
    "check_parser_rules": ".atc._onnx_keys",
    "check_plugin_keys": ".atc._onnx_keys",
    "check_socs": ".versions",
    "compute_unit": ".socs",
    "default_engine": ".project._project",
    "default_origin_op_type": "._op",
    "implmodes": ".socs",
    "msopgen_data": ".project._msopgen",
    "msopgen_json": ".project._msopgen",
    "node_keys": ".atc._onnx_keys",
    "normalize_default_domain": ".atc._onnx_keys",
    "origin_op_types": ".atc._onnx_keys",
    "parse_cann_version": ".versions",
    "parse_input_shape": ".atc._atc",
    "plan_atc": ".atc._atc",
    "precision_modes": ".socs",
    "precision_modes_v2": ".socs",
    "project_files": ".project._project",
    "project_op_type": ".project._project",
    "project_plugin_keys": ".atc._atc",
    "read_project_manifest": ".project._project",
    "render_project": ".project._project",
    "resolve_cann": ".versions",
    "run_atc": ".atc._atc",
    "soc_table": ".socs",
    "write_project": ".project._project",
    "builtin_op_types": "._op",
    "builtin_signatures": "._op",
    "PackageClash": ".project._package",
    "installed_vendors": ".project._package",
    "PackageOp": ".project._project",
    "package_files": ".project._project",
    "project_op_types": ".project._project",
    "render_package": ".project._project",
    "write_package": ".project._project",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))


__all__ = [
    "DEFAULT_CANN",
    "ENGINES",
    "CannVersion",
    "ResolvedCann",
    "builtin_clash",
    "builtin_op_types",
    "builtin_signatures",
    "installed_vendors",
    "PackageClash",
    "PackageOp",
    "package_files",
    "project_op_types",
    "render_package",
    "write_package",
    "check_op_type",
    "check_socs",
    "parse_cann_version",
    "resolve_cann",
    "AtcPlan",
    "CannArgError",
    "CannOp",
    "KeyProblem",
    "NodeKey",
    "ProjectExists",
    "WriteReport",
    "atc_executable",
    "cann_op",
    "check_parser_rules",
    "check_plugin_keys",
    "compute_unit",
    "default_engine",
    "default_origin_op_type",
    "implmodes",
    "msopgen_data",
    "msopgen_json",
    "node_keys",
    "normalize_default_domain",
    "origin_op_types",
    "parse_input_shape",
    "plan_atc",
    "precision_modes",
    "precision_modes_v2",
    "project_plugin_keys",
    "project_files",
    "project_op_type",
    "read_project_manifest",
    "render_project",
    "run_atc",
    "soc_table",
    "write_project",
]
