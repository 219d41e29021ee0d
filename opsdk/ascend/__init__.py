"""The Ascend side of an operator: CANN project, ONNX framework plugin, op proto and ATC.

Everything is generated from the operator's spec (``opsdk cann MyOp -o build/cann/my_op``):
the msopgen IR JSON, the AI CPU sources that run the operator's own kernel.cpp on the NPU
(kernel adapter, op info, op proto with inference), an Ascend C project (op_host OpDef with
shape/dtype inference and tiling, op_kernel, CMake files for CANN 9.x), the REG_OP prototype
and the ONNX framework plugin whose OriginOpType keys are exactly what CANN's ONNX parser
looks up. ``build.sh`` builds them with the host's own CANN tools (msopgen on 8.x).

Example:
    >>> from opsdk.ascend import PackageOp, plan_package, default_origin_op_type
    >>> from opsdk.spec import OpSpec, Input, Output, TFloat
    >>> s = OpSpec("MyOp", domain="com.example", inputs=[Input("x")], outputs=[Output("y")],
    ...            types={"T": TFloat})
    >>> default_origin_op_type(s)
    'com.example::1::MyOp'
    >>> sorted(plan_package([PackageOp(s)], sources=False).files())[:2]
    ['aicpu/cpukernel/impl/my_op_kernels.cc', 'aicpu/cpukernel/impl/my_op_kernels.h']
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names below, imported on first use (see __getattr__)
    from ._op import (
        DEFAULT_SOCS,
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
        write_aipp_config,
        write_model_copy,
    )
    from .atc._memory import (
        GE_BUFFER_OPTIMIZE,
        GE_STATIC_MEMORY_POLICY,
        MemoryOptions,
        check_memory_options,
        memory_findings,
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
    from .errors import (
        AippError,
        AscendcModelWarning,
        CannArgError,
        GenerateRefused,
        HeadersUnavailable,
        KernelFileError,
        PackageClash,
        ProjectExists,
    )
    from .project._msopgen import msopgen_data, msopgen_json
    from .project._package import check_installed, installed_vendors
    from .project._project import (
        PackageOp,
        PackagePlan,
        PlannedOp,
        WriteReport,
        default_engine,
        plan_package,
        project_op_type,
        project_op_types,
        read_project_manifest,
        write_package,
    )
    from .socs import (
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
    "DEFAULT_SOCS": "._op",
    "write_aipp_config": ".atc._atc",
    "write_model_copy": ".atc._atc",
    "GE_BUFFER_OPTIMIZE": ".atc._memory",
    "GE_STATIC_MEMORY_POLICY": ".atc._memory",
    "MemoryOptions": ".atc._memory",
    "check_memory_options": ".atc._memory",
    "memory_findings": ".atc._memory",
    "check_installed": ".project._package",
    "AtcPlan": ".atc._atc",
    "AippError": ".errors",
    "AscendcModelWarning": ".errors",
    "KernelFileError": ".errors",
    "CannArgError": ".errors",
    "GenerateRefused": ".errors",
    "HeadersUnavailable": ".errors",
    "CannOp": "._op",
    "CannVersion": ".versions",
    "DEFAULT_CANN": ".versions",
    "ENGINES": ".versions",
    "KeyProblem": ".atc._onnx_keys",
    "NodeKey": ".atc._onnx_keys",
    "ProjectExists": ".errors",
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
    "project_op_type": ".project._project",
    "project_plugin_keys": ".atc._atc",
    "read_project_manifest": ".project._project",
    "resolve_cann": ".versions",
    "run_atc": ".atc._atc",
    "soc_table": ".socs",
    "builtin_op_types": "._op",
    "builtin_signatures": "._op",
    "PackageClash": ".errors",
    "installed_vendors": ".project._package",
    "PackageOp": ".project._project",
    "PackagePlan": ".project._project",
    "PlannedOp": ".project._project",
    "plan_package": ".project._project",
    "project_op_types": ".project._project",
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
    "DEFAULT_SOCS",
    "write_aipp_config",
    "write_model_copy",
    "GE_BUFFER_OPTIMIZE",
    "GE_STATIC_MEMORY_POLICY",
    "MemoryOptions",
    "check_memory_options",
    "memory_findings",
    "check_installed",
    "AippError",
    "AscendcModelWarning",
    "KernelFileError",
    "GenerateRefused",
    "HeadersUnavailable",
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
    "PackagePlan",
    "PlannedOp",
    "plan_package",
    "project_op_types",
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
    "project_op_type",
    "read_project_manifest",
    "run_atc",
    "soc_table",
]
