"""AI Core kernels in Ascend C: the public face of opsdk's generator and tiling descriptions.

* :func:`generate`: the kernel of an elementwise operator, from its ONNX decomposition;
* :func:`aicore_kernel`: an operator's kernel, hand-written (``op_kernel/``) or generated;
* :func:`run_kernel_file`: any Ascend C kernel file (a ``__global__`` entry) on the model,
  checked and optionally timed (``opsdk ascendc run``);
* :func:`model_compiler` / :func:`find_clang`: the host compiler of a model build, g++ or
  clang++ (``--cxx``, ``$CXX``);
* :class:`Tiling` / :class:`TilingField`: a kernel's host tiling, described once (see
  docs/ascendc_model.md), evaluated by :func:`evaluate`.

Example:
    >>> from opsdk.ascend.ascendc import Tiling, TilingField, evaluate
    >>> t = Tiling("Demo", (TilingField("n"),), (("n", "totalLength * 2"),), "1")
    >>> evaluate(t, {"totalLength": 3})
    (1, {'n': 6})
"""

from ._compiler import ModelCompiler, compiler_hint, find_clang, model_compiler
from ._estimate import reference_problem
from ._gen import AicoreKernel, GenerateRefused
from ._gen_reduce import generate
from ._kernels import aicore_kernel, tiling_header, write_kernel_files
from ._run_file import (
    EntryParam,
    KernelFileError,
    KernelFileRun,
    entry_params,
    host_tiling,
    host_tiling_and_workspace,
    is_mixed,
    run_kernel_file,
)
from ._tiling import Tiling, TilingField, cpp_steps, evaluate

__all__ = ["reference_problem", "write_kernel_files", "AicoreKernel", "GenerateRefused", "generate",
           "aicore_kernel", "tiling_header",
           "Tiling", "TilingField", "cpp_steps", "evaluate", "EntryParam", "KernelFileError",
           "KernelFileRun", "entry_params", "host_tiling", "host_tiling_and_workspace", "is_mixed",
           "run_kernel_file", "ModelCompiler", "compiler_hint", "find_clang", "model_compiler"]
