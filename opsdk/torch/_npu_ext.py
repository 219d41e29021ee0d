"""Each operator's C++ NPU kernel for torch (PrivateUse1), built against torch_npu's headers.

The kernel (``templates/npu_op.cpp.jinja`` over ``csrc/opsdk_npu.h``) wraps the torch
tensors' device memory in ``aclTensor`` objects, calls the operator's generated
``aclnn<Op>GetWorkspaceSize``, takes the workspace from torch_npu's caching allocator and
enqueues ``aclnn<Op>`` on the current NPU stream through torch_npu's task queue: no host
copy, no synchronisation, so the call can be captured in an NPU graph. It is built once per
operator, torch version and toolchain into opsdk's build cache, like the CPU extension.

torch_npu's headers are found without importing torch_npu (which cannot load without
CANN): in the folder ``OPSDK_TORCH_NPU_INCLUDE`` names (a torch-npu wheel's
``torch_npu/include``), in the installed package, or among the headers fetched from the
torch-npu wheel that matches torch (``python -m opsdk.ascend.project.headers --fetch``).

Example:
    >>> from opsdk.registry import find_operator
    >>> src = render_npu_kernel(find_operator("ThresholdedRelu").spec)
    >>> "aclnnThresholdedReluGetWorkspaceSize" in src and src.startswith("//")
    True
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._generated import BANNER, render
from ..ascend.npu import ACL_DTYPES, aclnn_prototype
from ..build import toolchain
from ..errors import BuildError
from ..spec import OpSpec
from ._cpp import build_cached, build_inputs

__all__ = ["render_npu_kernel", "npu_include_dirs", "compile_command", "build_npu_kernel",
           "module_name"]

_CSRC = Path(__file__).resolve().parent / "csrc"
#: opsdk dtype -> at::ScalarType enumerator
_SCALAR_TYPES = {
    "float32": "Float", "float16": "Half", "bfloat16": "BFloat16", "float64": "Double",
    "int8": "Char", "uint8": "Byte", "int16": "Short", "int32": "Int", "int64": "Long",
    "bool": "Bool",
}
#: attribute type -> (the pybind parameter's C++ type, how the aclnn call takes it)
_ATTR_PARAMS = {
    "int": ("int64_t", "{}"), "float": ("double", "{}"), "bool": ("bool", "{}"),
    "string": ("const std::string &", "const_cast<char *>({}.c_str())"),
    "ints": ("const std::vector<int64_t> &", "args.ints({})"),
    "floats": ("const std::vector<double> &", "args.floats({})"),
}


def module_name(spec: OpSpec, op_type: str | None = None) -> str:
    """The Python module name of an operator's NPU kernel (a C identifier)."""
    return "_opsdk_npu_" + re.sub(r"\W", "_", op_type or spec.name)


def render_npu_kernel(spec: OpSpec, op_type: str | None = None) -> str:
    """The C++ source of the operator's NPU kernel (``op_type``: its CANN type, when
    ``opsdk cann --op-type`` renamed it)."""
    attrs = []
    for a in spec.attrs:
        cpp, arg = _ATTR_PARAMS[a.type]
        attrs.append({"name": f"attr_{a.name}", "cpp": cpp, "arg": arg.format(f"attr_{a.name}")})
    dtypes = [(_SCALAR_TYPES[d], ACL_DTYPES[d]) for d in _SCALAR_TYPES if d in ACL_DTYPES]
    first = next((i for i, o in enumerate(spec.outputs) if not getattr(o, "optional", False)), 0)
    return render(
        "torch/templates/npu_op.cpp.jinja",
        banner=f"// {BANNER}", op=spec.name, op_type=op_type or spec.name,
        prototype=aclnn_prototype(spec), dtypes=dtypes, attrs=attrs,
        inputs=[{"name": i.name, "optional": i.optional} for i in spec.inputs],
        outputs=[{"name": o.name, "optional": getattr(o, "optional", False)}
                 for o in spec.outputs],
        first_output=first, module=module_name(spec, op_type),
    )


def npu_include_dirs() -> list[Path]:
    """torch_npu's include folders (its own headers, then the ACL headers it ships), found
    without importing torch_npu; BuildError naming what to install when there are none."""
    from ..ascend.project.headers import torch_npu_include

    env = os.environ.get("OPSDK_TORCH_NPU_INCLUDE")
    spec = None if env else importlib.util.find_spec("torch_npu")
    locations = list(spec.submodule_search_locations or []) if spec else []
    fetched = None if env or locations else torch_npu_include()
    if env:
        root = Path(env)
    elif locations:
        root = Path(locations[0]) / "include"
    elif fetched is not None:
        root = fetched
    else:
        raise BuildError(
            "torch_npu's headers were not found: install the torch-npu wheel that matches "
            "torch, fetch its headers (python -m opsdk.ascend.project.headers --fetch), or "
            "set OPSDK_TORCH_NPU_INCLUDE to a wheel's torch_npu/include"
        )
    dirs = [root, root / "third_party" / "acl" / "inc"]
    marker = root / "torch_npu" / "csrc" / "core" / "npu" / "NPUStream.h"
    if not marker.is_file():
        raise BuildError(f"{root} holds no torch_npu/csrc/core/npu/NPUStream.h; point "
                         "OPSDK_TORCH_NPU_INCLUDE at a torch-npu wheel's torch_npu/include")
    return dirs


def compile_command(source: Path, out: Path, *, object_only: bool = False,
                    extra_includes: list[Path] | None = None,
                    defines: list[str] | None = None) -> list[str]:
    """The compiler command of one NPU kernel: a loadable module, or with ``object_only`` an
    object file (what a host without CANN can check: the code against the headers)."""
    inputs = build_inputs()
    npu_dirs = npu_include_dirs()
    includes = [*inputs["includes"], inputs["python"], str(_CSRC),
                *(str(d) for d in npu_dirs), *(str(d) for d in extra_includes or [])]
    cmd = [toolchain().cxx, "-O2", "-std=c++20", "-fPIC", "-fvisibility=hidden",
           f"-D_GLIBCXX_USE_CXX11_ABI={inputs['cxx11_abi']}", *(f"-D{d}" for d in defines or []),
           *(f"-I{d}" for d in includes), str(source), "-o", str(out)]
    if object_only:
        return [*cmd, "-c"]
    libs = [*inputs["libraries"], str(npu_dirs[0].parent / "lib")]
    return [*cmd, "-shared", *(f"-L{d}" for d in libs), *(f"-Wl,-rpath,{d}" for d in libs),
            "-ltorch", "-ltorch_cpu", "-lc10", "-ltorch_python", "-ltorch_npu", "-ldl"]


def build_npu_kernel(spec: OpSpec, op_type: str | None = None,
                     progress: Callable[[str], None] | None = None) -> Path:
    """Build (or find in the cache) the operator's NPU kernel module.

    Example:
        >>> build_npu_kernel(spec).name  # doctest: +SKIP
        '_opsdk_npu_ThresholdedRelu.cpython-311-x86_64-linux-gnu.so'
    """
    source_text = render_npu_kernel(spec, op_type)
    h = hashlib.sha256(source_text.encode())
    h.update((_CSRC / "opsdk_npu.h").read_bytes())
    inputs: dict[str, Any] = {**build_inputs(), "npu_include": [str(d) for d in npu_include_dirs()],
                              "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX")}
    name = module_name(spec, op_type)

    def command(out: Path) -> list[str]:
        source = out.parent / f"{name}.cpp"
        source.write_text(source_text)
        return compile_command(source, out)

    return build_cached("torch-npu", name, inputs, h.hexdigest(), command,
                        f"{spec.name}'s NPU kernel for torch", progress)
