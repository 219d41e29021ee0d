"""``ascendc-cpu`` and ``ascendc-sim``: an installed CANN toolkit's CPU-debug mode and
simulator, for the same AI Core kernel that ``ascendc-model`` runs on opsdk's model.

``ascendc-cpu`` builds the kernel with the toolkit's own CPU-debug library (``tikicpulib``,
``$ASCEND_HOME_PATH/tools/tikicpulib``) as the toolkit documents it: a host program that
allocates GM with ``AscendC::GmAlloc``, sets ``AscendC::SetKernelMode(KernelMode::AIV_MODE)``
and launches the kernel with ``ICPU_RUN_KF(kernel, blockDim, args...)``, built by CMake with
``find_package(tikicpulib)`` and ``tikicpulib::<SOC_VERSION>``. The tiling is computed by the
same description as for the model.

``ascendc-sim`` builds the same kernel for the NPU with the toolkit's Ascend C compiler
through its kernel-launch CMake support (``ascendc_library``, ``RUN_MODE=sim``) and runs it on
the toolkit's simulator (camodel), launched through ACL with ``ACLRT_LAUNCH_KERNEL``
(:mod:`opsdk.ascend.ascendc._sim`).

Both drivers run with the library folders the toolkit's kernel-launch samples put on
``LD_LIBRARY_PATH`` (:func:`toolkit_env`); the SoC is ``$OPSDK_ASCEND_SOC`` (default
``Ascend910B3``, the one default SoC of :mod:`opsdk.ascend.socs`).

Without a toolkit every call raises :class:`~opsdk.errors.DeviceUnavailable` with the reason
and the tests skip. Neither has been run here: this project has no CANN toolkit.

Example:
    >>> open_toolkit_device("ascendc-cpu", Path("operators/gelu"), spec)  # doctest: +SKIP
    Traceback (most recent call last):
    opsdk.errors.DeviceUnavailable: ascendc-cpu unavailable: no CANN toolkit ...
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ...build import cache_dir, file_lock
from ...errors import BuildError, DeviceUnavailable, KernelError
from ...runtime._procs import dies_with_us
from ...spec import OpSpec
from .. import socs
from ._sim import (
    ascendc_cmake_dir,
    simulator_configure,
    simulator_dir,
    simulator_sources,
    toolkit_env,
)
from .model import _CPP, AscendcModel, model_include_dir

__all__ = [
    "open_toolkit_device", "toolkit_parts", "ToolkitCpuDebug", "ToolkitSimulator",
    "cpu_debug_sources", "simulator_sources", "simulator_configure", "simulator_dir",
    "ascendc_cmake_dir",
    "toolkit_env", "DEFAULT_SOC",
]

#: The SoC of both toolkit devices unless ``$OPSDK_ASCEND_SOC`` names another (the one default).
DEFAULT_SOC = socs.DEFAULT_SOC

_PARTS = {"ascendc-cpu": "tools/tikicpulib", "ascendc-sim": "tools/simulator"}

def toolkit_parts(device: str) -> Path:
    """The toolkit folder ``device`` needs; raises DeviceUnavailable naming what is missing."""
    home = os.environ.get("ASCEND_HOME_PATH") or os.environ.get("ASCEND_TOOLKIT_HOME")
    if not home:
        raise DeviceUnavailable(
            f"{device} unavailable: no CANN toolkit (ASCEND_HOME_PATH is not set; source "
            "<toolkit>/set_env.sh); ascendc-model runs the same kernel on opsdk's model")
    part = Path(home) / _PARTS[device]
    if not part.is_dir():
        raise DeviceUnavailable(f"{device} unavailable: the toolkit at {home} has no {part}")
    return part


def cpu_debug_sources(model: AscendcModel, dtype: str) -> dict[str, str]:
    """The CMake project of the CPU-debug build of ``model``'s kernel for ``dtype``.

    Example:
        >>> files = cpu_debug_sources(AscendcModel("operators/gelu"), "float16")  # doctest: +SKIP
        >>> sorted(files)  # doctest: +SKIP
        ['CMakeLists.txt', 'driver.cpp', 'gelu.cpp', 'gelu_tiling.h', 'opsdk_tilingdata.h']
    """
    from ._kernels import tiling_header
    from ._templates import render

    k = model.kernel
    header = tiling_header(model.spec, k).replace('"register/tilingdata_base.h"',
                                                  '"opsdk_tilingdata.h"')
    macros = f"{k.dtype_macro}={_CPP[dtype]}" if k.dtype_macro else ""
    n = len(k.io_names)
    return {
        "CMakeLists.txt": render("cpu-debug", "cmake", op=k.op, snake=k.snake, macros=macros),
        "driver.cpp": render("cpu-debug", "driver", op=k.op, snake=k.snake, n=n,
                             first_output=len(model.spec.inputs)),
        f"{k.snake}.cpp": k.source,
        f"{k.snake}_tiling.h": header,
        "opsdk_tilingdata.h": (model_include_dir() / "register" / "tilingdata_base.h").read_text(),
    }


class _ToolkitKernel(AscendcModel):
    """The operator's AI Core kernel built by an installed toolkit into a driver program,
    run once per call: the arguments go through files, the outputs come back the same way."""

    device = ""
    mode = ""
    what = ""

    def __init__(self, folder: str | Path, spec: OpSpec | None = None, *,
                 soc_version: str | None = None) -> None:
        from ..socs import CannArgError

        self.home = toolkit_parts(self.device).parents[1]  # <toolkit>/tools/<part>
        if shutil.which("cmake") is None:
            raise DeviceUnavailable(f"{self.device} unavailable: cmake is not on PATH")
        self.soc_version = soc_version or os.environ.get("OPSDK_ASCEND_SOC", DEFAULT_SOC)
        try:
            super().__init__(folder, spec, soc=self.soc_version)
        except CannArgError as e:
            raise CannArgError(f"{self.device}: OPSDK_ASCEND_SOC: {e}") from None
        self._exes: dict[str, Path] = {}
        self._failed: dict[str, BuildError] = {}

    def _sources(self, dtype: str) -> dict[str, str]:
        raise NotImplementedError

    def _configure(self, src: Path, build: Path) -> list[str]:
        return ["cmake", "-S", str(src), "-B", str(build), f"-DSOC_VERSION={self.soc_version}"]

    def _env(self, log_dir: Path | None) -> dict[str, str]:
        return toolkit_env(self.mode, self.home, self.soc_version, os.environ, log_dir)

    def _executable(self, dtype: str) -> Path:
        """The driver for ``dtype``, built once; a failed build fails every later call at once."""
        exe = self._exes.get(dtype)
        if exe is not None:
            return exe
        if dtype in self._failed:
            raise BuildError(str(self._failed[dtype]))
        try:
            self._exes[dtype] = self._build_driver(dtype)
        except BuildError as e:
            self._failed[dtype] = e
            raise
        return self._exes[dtype]

    def _build_driver(self, dtype: str) -> Path:
        files = self._sources(dtype)
        key = hashlib.sha256(("\0".join(sorted(files.values())) + self.soc_version
                              + str(self.home)).encode()).hexdigest()[:20]
        root = cache_dir() / self.device / self.kernel.snake / key
        exe = root / "build" / "driver"
        with file_lock(root / ".lock", f"the {self.device} build of {self.kernel.op}"):
            if not exe.exists():
                for rel, text in files.items():
                    (root / "src" / rel).parent.mkdir(parents=True, exist_ok=True)
                    (root / "src" / rel).write_text(text)
                for cmd in (self._configure(root / "src", root / "build"),
                            ["cmake", "--build", str(root / "build")]):
                    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
                    if proc.returncode:
                        raise BuildError(f"{self.kernel.op}: the {self.device} build failed "
                                         f"({' '.join(cmd)}):\n{proc.stdout[-2000:]}"
                                         f"{proc.stderr[-2000:]}")
        return exe

    def _execute(self, dtype: str, arrays: list[np.ndarray | None], block_dim: int,
                 tiling_bytes: bytes) -> None:
        exe = self._executable(dtype)
        # The simulator's logs (CAMODEL_LOG_PATH) are kept when the case fails.
        logs = Path(tempfile.mkdtemp(prefix="opsdk-sim-log-")) if self.mode == "sim" else None
        with tempfile.TemporaryDirectory(prefix=f"opsdk-{self.mode}-") as tmp:
            for i, a in enumerate(arrays):
                if a is not None:
                    (Path(tmp) / f"arg{i}.bin").write_bytes(a.tobytes())
            (Path(tmp) / "tiling.bin").write_bytes(tiling_bytes)
            proc = subprocess.run([str(exe), tmp, str(block_dim)], capture_output=True,
                                  text=True, check=False, cwd=tmp, env=self._env(logs),
                                  **dies_with_us())
            if proc.returncode:
                kept = f"; logs kept in {logs}" if logs else ""
                raise KernelError(
                    f"{self.device}: {self.kernel.op} failed in {self.what} (exit "
                    f"{proc.returncode}{kept}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
            if logs:
                shutil.rmtree(logs, ignore_errors=True)
            for i in range(len(self.spec.inputs), len(arrays)):
                out = arrays[i]
                if out is not None and out.size:
                    data = (Path(tmp) / f"arg{i}.bin").read_bytes()
                    out.reshape(-1).view(np.uint8)[:] = np.frombuffer(data, np.uint8)


class ToolkitCpuDebug(_ToolkitKernel):
    """The operator's AI Core kernel in the CANN toolkit's CPU-debug mode (``ascendc-cpu``)."""

    device = "ascendc-cpu"
    mode = "cpu"
    what = "the toolkit's CPU-debug mode"

    def _sources(self, dtype: str) -> dict[str, str]:
        return cpu_debug_sources(self, dtype)


class ToolkitSimulator(_ToolkitKernel):
    """The operator's AI Core kernel built for the NPU by the toolkit and run on its simulator
    (``ascendc-sim``); see :mod:`opsdk.ascend.ascendc._sim`.

    The SoC is ``$OPSDK_ASCEND_SOC`` (default Ascend910B3); its simulator must be installed
    (``<toolkit>/tools/simulator/<SoC>/lib/libruntime_camodel.so``).
    """

    device = "ascendc-sim"
    mode = "sim"
    what = "the toolkit's simulator (camodel)"

    def __init__(self, folder: str | Path, spec: OpSpec | None = None, *,
                 soc_version: str | None = None) -> None:
        super().__init__(folder, spec, soc_version=soc_version)
        self.cmake_dir = ascendc_cmake_dir(self.home)
        self.soc_version = simulator_dir(self.home, self.soc_version).name

    def _sources(self, dtype: str) -> dict[str, str]:
        return simulator_sources(self, dtype)

    def _configure(self, src: Path, build: Path) -> list[str]:
        return simulator_configure(src, build, self.home, self.soc_version, self.cmake_dir)


def open_toolkit_device(device: str, folder: Path, spec: OpSpec) -> Any:
    """The executor of ``device`` (``ascendc-cpu`` or ``ascendc-sim``); see the module
    docstring. Raises DeviceUnavailable with the reason when the toolkit lacks a part."""
    if device == "ascendc-cpu":
        return ToolkitCpuDebug(folder, spec)
    if device == "ascendc-sim":
        return ToolkitSimulator(folder, spec)
    raise DeviceUnavailable(f"unknown toolkit device {device!r}; use ascendc-cpu or ascendc-sim")
