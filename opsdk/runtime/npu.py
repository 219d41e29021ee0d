"""The npu executor: one operator on an Ascend NPU through CANN's single-operator API.

The executor loads ``libascendcl.so`` at run time (ctypes) and calls the documented C API:
``aclInit``, ``aclrtSetDevice``, ``aclCreateTensorDesc`` / ``aclCreateDataBuffer`` on device
buffers, attributes through ``aclopCreateAttr`` + ``aclopSetAttr*``, then
``aclopCompileAndExecute`` (engine ACL_ENGINE_SYS, ACL_COMPILE_SYS: the operator must be
installed, e.g. from the ``custom_opp_*.run`` package ``opsdk cann`` builds). Every C
signature used here is listed in :data:`SIGNATURES`; the tests check them against CANN's real
headers. Without CANN or a device everything raises
``DeviceUnavailable("npu unavailable: <reason>")``; nothing is ever emulated.

Example:
    >>> from opsdk.runtime.npu import npu_available
    >>> ok, reason = npu_available()
    >>> ok or reason != ""
    True
"""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..dtypes import dtype_name, native_order, to_numpy
from ..errors import DeviceUnavailable, KernelError
from ..spec import OpSpec, TensorType

__all__ = ["NpuOperator", "npu_available", "SIGNATURES", "ACL_DTYPES"]

#: opsdk dtype -> aclDataType (acl/acl_base_rt.h).
ACL_DTYPES: dict[str, int] = {
    "float32": 0,
    "float16": 1,
    "int8": 2,
    "int32": 3,
    "uint8": 4,
    "int16": 6,
    "int64": 9,
    "float64": 11,
    "bool": 12,
    "bfloat16": 27,
}
ACL_DT_UNDEFINED = -1
ACL_FORMAT_ND = 2
ACL_FORMAT_UNDEFINED = -1
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_ENGINE_SYS = 0
ACL_COMPILE_SYS = 0

_P = ctypes.c_void_p
_I = ctypes.c_int
_S = ctypes.c_size_t
_STR = ctypes.c_char_p
_PP = ctypes.POINTER(ctypes.c_void_p)

#: name -> (ctypes restype, ctypes argtypes, the C++ function type in CANN's headers).
SIGNATURES: dict[str, tuple[Any, list[Any], str]] = {
    "aclInit": (_I, [_STR], "aclError(const char*)"),
    "aclFinalize": (_I, [], "aclError()"),
    "aclrtSetDevice": (_I, [ctypes.c_int32], "aclError(int32_t)"),
    "aclrtResetDevice": (_I, [ctypes.c_int32], "aclError(int32_t)"),
    "aclrtGetDeviceCount": (_I, [ctypes.POINTER(ctypes.c_uint32)], "aclError(uint32_t*)"),
    "aclrtCreateStream": (_I, [_PP], "aclError(aclrtStream*)"),
    "aclrtDestroyStream": (_I, [_P], "aclError(aclrtStream)"),
    "aclrtSynchronizeStream": (_I, [_P], "aclError(aclrtStream)"),
    "aclrtMalloc": (_I, [_PP, _S, _I], "aclError(void**, size_t, aclrtMemMallocPolicy)"),
    "aclrtFree": (_I, [_P], "aclError(void*)"),
    "aclrtMemcpy": (
        _I,
        [_P, _S, _P, _S, _I],
        "aclError(void*, size_t, const void*, size_t, aclrtMemcpyKind)",
    ),
    "aclCreateTensorDesc": (
        _P,
        [_I, _I, ctypes.POINTER(ctypes.c_int64), _I],
        "aclTensorDesc*(aclDataType, int, const int64_t*, aclFormat)",
    ),
    "aclDestroyTensorDesc": (None, [_P], "void(const aclTensorDesc*)"),
    "aclCreateDataBuffer": (_P, [_P, _S], "aclDataBuffer*(void*, size_t)"),
    "aclDestroyDataBuffer": (_I, [_P], "aclError(const aclDataBuffer*)"),
    "aclopCreateAttr": (_P, [], "aclopAttr*()"),
    "aclopDestroyAttr": (None, [_P], "void(const aclopAttr*)"),
    "aclopSetAttrInt": (
        _I,
        [_P, _STR, ctypes.c_int64],
        "aclError(aclopAttr*, const char*, int64_t)",
    ),
    "aclopSetAttrFloat": (
        _I,
        [_P, _STR, ctypes.c_float],
        "aclError(aclopAttr*, const char*, float)",
    ),
    "aclopSetAttrBool": (
        _I,
        [_P, _STR, ctypes.c_uint8],
        "aclError(aclopAttr*, const char*, uint8_t)",
    ),
    "aclopSetAttrString": (_I, [_P, _STR, _STR], "aclError(aclopAttr*, const char*, const char*)"),
    "aclopSetAttrListInt": (
        _I,
        [_P, _STR, _I, ctypes.POINTER(ctypes.c_int64)],
        "aclError(aclopAttr*, const char*, int, const int64_t*)",
    ),
    "aclopSetAttrListFloat": (
        _I,
        [_P, _STR, _I, ctypes.POINTER(ctypes.c_float)],
        "aclError(aclopAttr*, const char*, int, const float*)",
    ),
    "aclopCompileAndExecute": (
        _I,
        [_STR, _I, _PP, _PP, _I, _PP, _PP, _P, _I, _I, _STR, _P],
        "aclError(const char*, int, const aclTensorDesc* const*, const aclDataBuffer* const*, int, "
        "const aclTensorDesc* const*, aclDataBuffer* const*, const aclopAttr*, aclopEngineType, "
        "aclopCompileType, const char*, aclrtStream)",
    ),
}


def _cann_home() -> Path | None:
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        if os.environ.get(var):
            return Path(os.environ[var])
    default = Path("/usr/local/Ascend/ascend-toolkit/latest")
    return default if default.is_dir() else None


def _find_lib() -> tuple[str | None, str]:
    home = _cann_home()
    if home is None:
        return None, (
            "no CANN toolkit: ASCEND_HOME_PATH is not set and "
            "/usr/local/Ascend/ascend-toolkit/latest does not exist (source set_env.sh)"
        )
    for cand in (home / "lib64" / "libascendcl.so", home / "runtime" / "lib64" / "libascendcl.so"):
        if cand.is_file():
            return str(cand), ""
    found = ctypes.util.find_library("ascendcl")
    if found:
        return found, ""
    return None, f"libascendcl.so not found under {home} (lib64/) nor on the library path"


class _Acl:
    """The process-wide ACL session: library, device and stream (initialized once)."""

    _lock = threading.Lock()
    _instance: _Acl | None = None
    _failure: str | None = None

    def __init__(self, lib: ctypes.CDLL, device: int) -> None:
        self.lib = lib
        for name, (res, args, _) in SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        self.device = device
        self.stream = ctypes.c_void_p()
        self._check("aclInit", lib.aclInit(None))
        count = ctypes.c_uint32(0)
        self._check("aclrtGetDeviceCount", lib.aclrtGetDeviceCount(ctypes.byref(count)))
        if count.value == 0:
            raise DeviceUnavailable(
                "npu unavailable: no Ascend device is visible (aclrtGetDeviceCount = 0)"
            )
        self._check("aclrtSetDevice", lib.aclrtSetDevice(device))
        self._check("aclrtCreateStream", lib.aclrtCreateStream(ctypes.byref(self.stream)))
        atexit.register(self.close)

    def _check(self, what: str, ret: int) -> None:
        if ret != 0:
            raise DeviceUnavailable(
                f"npu unavailable: {what} returned ACL error {ret} (check npu-smi info)"
            )

    def close(self) -> None:
        self.lib.aclrtDestroyStream(self.stream)
        self.lib.aclrtResetDevice(self.device)
        self.lib.aclFinalize()

    @classmethod
    def get(cls, device: int = 0) -> _Acl:
        with cls._lock:
            if cls._instance is not None:
                return cls._instance
            if cls._failure is not None:
                raise DeviceUnavailable(f"npu unavailable: {cls._failure}")
            path, why = _find_lib()
            if path is None:  # not cached: installing CANN later in the process is seen
                raise DeviceUnavailable(f"npu unavailable: {why}")
            try:
                cls._instance = cls(ctypes.CDLL(path), device)
            except OSError as e:
                cls._failure = f"cannot load {path}: {e}"
                raise DeviceUnavailable(f"npu unavailable: {cls._failure}") from None
            except DeviceUnavailable as e:
                cls._failure = str(e).removeprefix("npu unavailable: ")
                raise
            return cls._instance


def npu_available(device: int = 0) -> tuple[bool, str]:
    """``(True, "")`` when CANN and an Ascend device are usable here, else ``(False, reason)``.

    Example:
        >>> ok, why = npu_available()
        >>> isinstance(ok, bool) and isinstance(why, str)
        True
    """
    try:
        _Acl.get(device)
    except DeviceUnavailable as e:
        return False, str(e).removeprefix("npu unavailable: ")
    return True, ""


class _Launch:
    """Device buffers, descriptors and attributes of one call; freed by :meth:`free`."""

    def __init__(self, acl: _Acl) -> None:
        self.acl, self.lib = acl, acl.lib
        self.descs: list[int] = []
        self.bufs: list[int] = []
        self.dev: list[int] = []
        self.attr: int | None = None

    def tensor(self, arr: np.ndarray | None, upload: bool) -> tuple[int, int, int]:
        """(desc, data buffer, device pointer) of a tensor; (desc, buffer, 0) when absent."""
        lib = self.lib
        if arr is None:
            desc = lib.aclCreateTensorDesc(ACL_DT_UNDEFINED, 0, None, ACL_FORMAT_UNDEFINED)
            buf = lib.aclCreateDataBuffer(None, 0)
            self.descs.append(desc)
            self.bufs.append(buf)
            return desc, buf, 0
        dims = (ctypes.c_int64 * arr.ndim)(*arr.shape)
        desc = lib.aclCreateTensorDesc(
            ACL_DTYPES[dtype_name(arr.dtype)], arr.ndim, dims, ACL_FORMAT_ND
        )
        ptr = ctypes.c_void_p()
        self._ok(
            "aclrtMalloc",
            lib.aclrtMalloc(ctypes.byref(ptr), max(arr.nbytes, 1), ACL_MEM_MALLOC_HUGE_FIRST),
        )
        self.dev.append(ptr.value or 0)
        if upload and arr.nbytes:
            self._ok(
                "aclrtMemcpy",
                lib.aclrtMemcpy(
                    ptr, arr.nbytes, arr.ctypes.data, arr.nbytes, ACL_MEMCPY_HOST_TO_DEVICE
                ),
            )
        buf = lib.aclCreateDataBuffer(ptr, arr.nbytes)
        self.descs.append(desc)
        self.bufs.append(buf)
        return desc, buf, ptr.value or 0

    def attrs(self, spec: OpSpec, values: dict[str, Any]) -> int:
        lib = self.lib
        self.attr = attr = lib.aclopCreateAttr()
        for a in spec.attrs:
            v, key = values[a.name], a.name.encode()
            if a.type == "int":
                ret = lib.aclopSetAttrInt(attr, key, int(v))
            elif a.type == "float":
                ret = lib.aclopSetAttrFloat(attr, key, float(v))
            elif a.type == "bool":
                ret = lib.aclopSetAttrBool(attr, key, 1 if v else 0)
            elif a.type == "string":
                ret = lib.aclopSetAttrString(attr, key, str(v).encode())
            elif a.type == "ints":
                ret = lib.aclopSetAttrListInt(attr, key, len(v), (ctypes.c_int64 * len(v))(*v))
            else:
                ret = lib.aclopSetAttrListFloat(attr, key, len(v), (ctypes.c_float * len(v))(*v))
            self._ok(f"aclopSetAttr ({spec.name}.{a.name})", ret)
        return attr

    def _ok(self, what: str, ret: int) -> None:
        if ret != 0:
            raise KernelError(f"{what} returned ACL error {ret}")

    def free(self) -> None:
        lib = self.lib
        for b in self.bufs:
            lib.aclDestroyDataBuffer(b)
        for d in self.descs:
            lib.aclDestroyTensorDesc(d)
        for p in self.dev:
            lib.aclrtFree(p)
        if self.attr is not None:
            lib.aclopDestroyAttr(self.attr)


def _array(items: Sequence[int]) -> Any:
    return (ctypes.c_void_p * max(len(items), 1))(*items)


class NpuOperator:
    """``op(*inputs, **attrs)`` runs the operator on the NPU; same interface as the cpu one.

    Raises :class:`~opsdk.errors.DeviceUnavailable` (``npu unavailable: <reason>``) when
    CANN or a device is missing.
    """

    def __init__(self, spec: OpSpec, device: int = 0) -> None:
        self.spec = spec
        self._acl = _Acl.get(device)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def reference(self) -> Any:
        return self.spec.reference

    def __repr__(self) -> str:
        return f"NpuOperator({self.spec.name}, device={self._acl.device})"

    def __call__(self, *inputs: Any, **attrs: Any) -> Any:
        outs = self.run(list(inputs), attrs)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def run(
        self, inputs: Sequence[Any], attrs: dict[str, Any], outputs: list[np.ndarray] | None = None
    ) -> list[np.ndarray]:
        """Run once; writes into ``outputs`` when given (shapes/dtypes must match inference)."""
        spec = self.spec
        resolved = spec.resolve_attrs(attrs)
        arrays = [None if x is None else np.ascontiguousarray(native_order(np.asarray(x)))
                  for x in inputs]
        arrays += [None] * (len(spec.inputs) - len(arrays))
        types = [None if a is None else TensorType(a.shape, dtype_name(a.dtype)) for a in arrays]
        inferred = spec.infer(types, resolved)
        if outputs is None:
            outputs = [np.empty([int(d) for d in t.shape], to_numpy(t.dtype)) for t in inferred]  # type: ignore[arg-type]
        launch = _Launch(self._acl)
        try:
            ins = [launch.tensor(a, True) for a in arrays]
            outs = [launch.tensor(o, False) for o in outputs]
            attr = launch.attrs(spec, resolved)
            lib, stream = self._acl.lib, self._acl.stream
            ret = lib.aclopCompileAndExecute(
                spec.name.encode(),
                len(ins),
                _array([d for d, _, _ in ins]),
                _array([b for _, b, _ in ins]),
                len(outs),
                _array([d for d, _, _ in outs]),
                _array([b for _, b, _ in outs]),
                attr,
                ACL_ENGINE_SYS,
                ACL_COMPILE_SYS,
                None,
                stream,
            )
            if ret != 0:
                raise KernelError(
                    f"{spec.name}: aclopCompileAndExecute returned ACL error {ret}; is the "
                    "operator package installed (custom_opp_*.run) and ASCEND_CUSTOM_OPP_PATH set?"
                )
            launch._ok("aclrtSynchronizeStream", lib.aclrtSynchronizeStream(stream))
            for o, (_, _, dev) in zip(outputs, outs, strict=True):
                if o.nbytes:
                    launch._ok(
                        "aclrtMemcpy",
                        lib.aclrtMemcpy(
                            o.ctypes.data, o.nbytes, dev, o.nbytes, ACL_MEMCPY_DEVICE_TO_HOST
                        ),
                    )
        finally:
            launch.free()
        return outputs
