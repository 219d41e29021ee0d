"""The kernel-launch project behind ``ascendc-sim``: an AI Core kernel built for the NPU by an
installed CANN toolkit and run on the toolkit's simulator (camodel).

The project follows the toolkit's documented kernel-launch flow (``RUN_MODE`` ``sim``):
``ascendc_library`` from ``<toolkit>/compiler/tikcpp/ascendc_kernel_cmake/ascendc.cmake``
compiles the kernel for the NPU (bisheng / ccec) and generates the host stub
``aclrtlaunch_<kernel>.h``; in the sim run mode it links the host side with
``runtime_camodel`` from ``<toolkit>/tools/simulator/<SOC_VERSION>/lib``. The host program
(``driver.cpp``) uses ACL as on a device: ``aclInit``, ``aclrtSetDevice``, a stream,
``aclrtMalloc`` for every GM argument, ``aclrtMemcpy`` in, ``ACLRT_LAUNCH_KERNEL(kernel)(
blockDim, stream, args..., workspace, tiling)``, ``aclrtSynchronizeStream`` and copies back.
It runs with the simulator's libraries first on ``LD_LIBRARY_PATH`` and its logs in
``CAMODEL_LOG_PATH``.

In a kernel-launch build nothing generates ``GET_TILING_DATA``; ``opsdk_kernel_tiling.h``
gives the kernel a plain struct with the fields of ``op_host/<op>_tiling.h`` in the same
order (:func:`opsdk.ascend.ascendc._kernels.tiling_slots`), copied from the tiling bytes in GM
that the host packed with :func:`~opsdk.ascend.ascendc._kernels.pack_tiling`.

Nothing here runs without a toolkit; this project has not been built or run here.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import DeviceUnavailable

if TYPE_CHECKING:
    from .model import AscendcModel

__all__ = [
    "ascendc_cmake_dir", "kernel_tiling_header", "simulator_configure", "simulator_dir",
    "simulator_sources", "toolkit_env",
]

#: Where toolkits keep ascendc.cmake, in the order the kernel-launch samples look.
CMAKE_DIRS = ("compiler/tikcpp/ascendc_kernel_cmake", "tools/tikcpp/ascendc_kernel_cmake")
SIMULATOR_LIBRARY = "libruntime_camodel.so"
_WORKSPACE_BYTES = 32

def kernel_tiling_header(model: AscendcModel) -> str:
    """``opsdk_kernel_tiling.h``: the kernel's tiling struct and ``GET_TILING_DATA``."""
    from ._kernels import tiling_slots
    from ._templates import render

    k = model.kernel
    return render("sim", "tiling", op=k.op, snake=k.snake, upper=k.snake.upper(),
                  slots=tiling_slots(model.spec, k))


def simulator_sources(model: AscendcModel, dtype: str) -> dict[str, str]:
    """The kernel-launch project of ``model``'s kernel for ``dtype`` (see the module docstring).

    Example:
        >>> from opsdk.ascend.ascendc.model import AscendcModel
        >>> files = simulator_sources(AscendcModel("operators/gelu"), "float16")  # doctest: +SKIP
        >>> sorted(files)  # doctest: +SKIP
        ['CMakeLists.txt', 'driver.cpp', 'gelu.cpp', 'opsdk_kernel_tiling.h']
    """
    from ._templates import render
    from .model import _CPP

    k = model.kernel
    n = len(k.io_names)
    return {
        "CMakeLists.txt": render("sim", "cmake", op=k.op, snake=k.snake,
                                 dtype_macro=k.dtype_macro, cpp_type=_CPP[dtype]),
        "driver.cpp": render("sim", "driver", op=k.op, snake=k.snake, n=n,
                             first_output=len(model.spec.inputs), workspace=_WORKSPACE_BYTES),
        f"{k.snake}.cpp": render("sim", "kernel", op=k.op, origin=_origin(k.origin, k.snake),
                                 name=f"{k.snake}.cpp") + k.source,
        "opsdk_kernel_tiling.h": kernel_tiling_header(model),
    }


def _origin(origin: str, snake: str) -> str:
    """Where the kernel comes from, without a machine-specific path."""
    if origin == "generated":
        return "generated from the decomposition in spec.py"
    return f"the operator's op_kernel/{snake}.cpp"


def ascendc_cmake_dir(home: Path) -> Path:
    """The toolkit's ``ascendc_kernel_cmake`` folder (holding ``ascendc.cmake``).

    Raises:
        DeviceUnavailable: naming every place looked at.
    """
    for rel in CMAKE_DIRS:
        if (home / rel / "ascendc.cmake").is_file():
            return home / rel
    looked = ", ".join(str(home / rel / "ascendc.cmake") for rel in CMAKE_DIRS)
    raise DeviceUnavailable(
        f"ascendc-sim unavailable: the toolkit at {home} has no Ascend C kernel CMake support "
        f"(looked for {looked}); install the toolkit's Ascend C development kit")


def _installed(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if (p / "lib").is_dir()) if root.is_dir() else []


def simulator_dir(home: Path, soc: str) -> Path:
    """``<toolkit>/tools/simulator/<SoC>`` for ``soc``: a SoC version (Ascend910B1) must have
    its own simulator; a compute unit (ascend910b) takes the first installed simulator of a
    SoC of that unit.

    Raises:
        DeviceUnavailable: no simulator for ``soc`` (naming the installed ones), or one
            without ``lib/libruntime_camodel.so``.
        CannArgError: ``soc`` is neither a known SoC version nor a compute unit.

    Example:
        >>> simulator_dir(Path("/usr/local/Ascend/ascend-toolkit/latest"), "Ascend910B1")
        ... # doctest: +SKIP
        PosixPath('/usr/local/Ascend/ascend-toolkit/latest/tools/simulator/Ascend910B1')
    """
    from ..socs import compute_unit, soc_table

    root = home / "tools" / "simulator"
    installed = _installed(root)
    table = soc_table()
    unit = compute_unit(soc)
    wanted = [soc] if soc in table else [s for s in installed if table.get(s) == unit]
    for name in wanted:
        if (root / name / "lib").is_dir():
            lib = root / name / "lib" / SIMULATOR_LIBRARY
            if not lib.is_file():
                raise DeviceUnavailable(
                    f"ascendc-sim unavailable: the simulator {root / name} has no {lib.name} "
                    f"(in {lib.parent}); reinstall the toolkit's simulator for {name}")
            return root / name
    same_unit = [s for s in installed if table.get(s) == unit]
    hint = (f"set OPSDK_ASCEND_SOC to {' or '.join(same_unit)}" if same_unit else
            f"install the toolkit's simulator for {soc}, or set OPSDK_ASCEND_SOC to an installed "
            "one")
    raise DeviceUnavailable(
        f"ascendc-sim unavailable: the toolkit at {home} has no simulator for {soc} "
        f"({root / soc / 'lib'}); installed: {', '.join(installed) or 'none'}; {hint}")


def toolkit_env(mode: str, home: Path, soc: str, base: Mapping[str, str],
                log_dir: Path | None = None) -> dict[str, str]:
    """The environment a toolkit-built driver runs in, as the kernel-launch samples set it.

    ``cpu``: ``tools/tikicpulib/lib``, ``tools/tikicpulib/lib/<SoC>`` and
    ``tools/simulator/<SoC>/lib`` first on ``LD_LIBRARY_PATH``; ``sim``:
    ``tools/simulator/<SoC>/lib`` first and ``CAMODEL_LOG_PATH`` set to ``log_dir``. Both add
    ``<toolkit>/lib64`` (libascendcl) and set ``ASCEND_HOME_PATH``.

    Example:
        >>> env = toolkit_env("sim", Path("/t"), "Ascend910B1", {}, Path("/tmp/log"))
        >>> env["LD_LIBRARY_PATH"], env["CAMODEL_LOG_PATH"]
        ('/t/tools/simulator/Ascend910B1/lib:/t/lib64', '/tmp/log')
    """
    sim_lib = home / "tools" / "simulator" / soc / "lib"
    dirs = {
        "cpu": [home / "tools" / "tikicpulib" / "lib", home / "tools" / "tikicpulib" / "lib" / soc,
                sim_lib],
        "sim": [sim_lib],
    }[mode] + [home / "lib64"]
    env = dict(base)
    rest = [base["LD_LIBRARY_PATH"]] if base.get("LD_LIBRARY_PATH") else []
    env["LD_LIBRARY_PATH"] = ":".join([*map(str, dirs), *rest])
    env["ASCEND_HOME_PATH"] = env["ASCEND_TOOLKIT_HOME"] = str(home)
    if mode == "sim":
        if log_dir is None:
            raise ValueError("the simulator needs a log folder (CAMODEL_LOG_PATH)")
        env["CAMODEL_LOG_PATH"] = str(log_dir)
    return env


def simulator_configure(src: Path, build: Path, home: Path, soc: str, cmake_dir: Path) -> list[str]:
    """The ``cmake`` configure command of the simulator build (``RUN_MODE=sim``).

    Example:
        >>> cmd = simulator_configure(Path("s"), Path("b"), Path("/t"), "Ascend910B1",
        ...                           Path("/t/compiler/tikcpp/ascendc_kernel_cmake"))
        >>> cmd[5:8]
        ['-DRUN_MODE=sim', '-DSOC_VERSION=Ascend910B1', '-DASCEND_CANN_PACKAGE_PATH=/t']
    """
    return ["cmake", "-S", str(src), "-B", str(build), "-DRUN_MODE=sim", f"-DSOC_VERSION={soc}",
            f"-DASCEND_CANN_PACKAGE_PATH={home}", f"-DASCENDC_CMAKE_DIR={cmake_dir}",
            "-DCMAKE_BUILD_TYPE=Release"]
