"""The npu executor: one operator on an Ascend NPU through CANN's single-operator APIs.

Two ways to run an installed operator (``custom_opp_*.run`` from ``opsdk cann``):

* **aclnn** (CANN 8's API for Ascend C operators, preferred where it exists): the vendor's
  ``op_api/lib/libcust_opapi.so`` exports the generated ``aclnn<Op>GetWorkspaceSize`` and
  ``aclnn<Op>``. Tensors are ``aclCreateTensor`` objects on device buffers, attributes are
  passed by value (int64_t, double, bool, char*) or as ``aclCreateIntArray`` /
  ``aclCreateFloatArray``; the workspace is allocated with ``aclrtMalloc``, the operator
  launched on the stream, the stream synchronised, and everything destroyed.
* **aclop** (AI CPU operators, which have no aclnn API, and older installs):
  ``aclopCompileAndExecute`` with tensor descriptors, data buffers and an ``aclopAttr``.

``engine="auto"`` takes aclnn when a vendor library exports the operator's aclnn pair, aclop
otherwise; the choice is in ``repr(op)`` and :attr:`NpuOperator.api`. Every C function is
bound from the library that exports it (see :mod:`opsdk.ascend.npu._acl`). A missing toolkit,
library, symbol or device raises ``DeviceUnavailable("npu unavailable: <reason>")``;
nothing is ever emulated.

Example:
    >>> from opsdk.ascend.npu.executor import npu_available
    >>> ok, reason = npu_available()
    >>> ok or reason != ""
    True
"""

from __future__ import annotations

import atexit
import ctypes
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...dtypes import dtype_name, native_order, to_numpy
from ...errors import DeviceUnavailable, KernelError, SpecError
from ...spec import OpSpec, TensorType
from ..spellings import ACL_DTYPES
from ._acl import SYMBOLS, Bound, OpApi, cann_home, find_op_api, load_libraries

__all__ = [
    "NpuOperator", "NpuPlan", "plan_npu", "npu_available", "SIGNATURES", "ACL_DTYPES", "ENGINES",
    "ACLNN_ATTR_ABI", "aclnn_prototype",
]

ACL_DT_UNDEFINED = -1
ACL_FORMAT_ND = 2
ACL_FORMAT_UNDEFINED = -1
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_ENGINE_SYS = 0
ACL_COMPILE_SYS = 0

#: The ACL functions of libascendcl and libacl_op_compiler: name -> (restype, argtypes, C type).
SIGNATURES: dict[str, tuple[Any, list[Any], str]] = {
    n: (s.restype, list(s.argtypes), s.ctype)
    for n, s in SYMBOLS.items()
    if s.library in ("ascendcl", "acl_op_compiler")
}
ENGINES = ("auto", "aclnn", "aclop")
# What each part needs: the runtime (device, stream, memory), then per API.
_RUNTIME = [n for n in SYMBOLS if n in ("aclInit", "aclFinalize") or n.startswith("aclrt")]
_ACLOP = [n for n, s in SYMBOLS.items()
          if s.library in ("ascendcl", "acl_op_compiler") and n not in _RUNTIME]
_ACLNN = ["aclCreateTensor", "aclDestroyTensor", "aclCreateIntArray", "aclDestroyIntArray",
          "aclCreateFloatArray", "aclDestroyFloatArray"]


class _Acl:
    """The process-wide ACL session: libraries, device and stream (initialized once)."""

    _lock = threading.Lock()
    _instance: _Acl | None = None
    _failure: str | None = None

    def __init__(self, fns: Bound, device: int) -> None:
        self.fns = fns
        self.device = device
        self.stream = ctypes.c_void_p()
        self._check("aclInit", fns.aclInit(None))
        count = ctypes.c_uint32(0)
        self._check("aclrtGetDeviceCount", fns.aclrtGetDeviceCount(ctypes.byref(count)))
        if count.value == 0:
            raise DeviceUnavailable(
                "npu unavailable: no Ascend device is visible (aclrtGetDeviceCount = 0)"
            )
        self._check("aclrtSetDevice", fns.aclrtSetDevice(device))
        self._check("aclrtCreateStream", fns.aclrtCreateStream(ctypes.byref(self.stream)))
        atexit.register(self.close)

    def _check(self, what: str, ret: int) -> None:
        if ret != 0:
            raise DeviceUnavailable(
                f"npu unavailable: {what} returned ACL error {ret} (check npu-smi info)"
            )

    def close(self) -> None:
        self.fns.aclrtDestroyStream(self.stream)
        self.fns.aclrtResetDevice(self.device)
        self.fns.aclFinalize()

    def require(self, names: Sequence[str], what: str) -> None:
        """Raise DeviceUnavailable naming each of ``names`` that ``what`` needs and lacks."""
        lacking = self.fns.lacking(names)
        if lacking:
            raise DeviceUnavailable(f"npu unavailable: {what} needs {'; '.join(lacking)}")

    @classmethod
    def get(cls, device: int = 0) -> _Acl:
        with cls._lock:
            if cls._instance is not None:
                return cls._instance
            if cls._failure is not None:
                raise DeviceUnavailable(f"npu unavailable: {cls._failure}")
            home = cann_home()
            if home is None:  # not cached: installing CANN later in the process is seen
                raise DeviceUnavailable(
                    "npu unavailable: no CANN toolkit: ASCEND_HOME_PATH is not set and "
                    "/usr/local/Ascend/ascend-toolkit/latest does not exist (source set_env.sh)"
                )
            fns = load_libraries(home)
            lacking = fns.lacking(_RUNTIME)
            if lacking:  # not cached either: the reason names files the user can fix
                raise DeviceUnavailable(f"npu unavailable: the ACL runtime: {lacking[0]}")
            try:
                cls._instance = cls(fns, device)
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
    """Device memory and CANN objects of one call, all released by :meth:`free`."""

    def __init__(self, acl: _Acl) -> None:
        self.acl, self.fns = acl, acl.fns
        self.dev: list[int] = []
        self.release: list[tuple[str, int]] = []  # (destroy function, handle), in order

    def ok(self, what: str, ret: int) -> None:
        if ret != 0:
            raise KernelError(f"{what} returned ACL error {ret}")

    def alloc(self, nbytes: int) -> int:
        """A device buffer of ``nbytes`` (at least 1), freed with the launch."""
        ptr = ctypes.c_void_p()
        self.ok("aclrtMalloc", self.fns.aclrtMalloc(
            ctypes.byref(ptr), max(nbytes, 1), ACL_MEM_MALLOC_HUGE_FIRST))
        self.dev.append(ptr.value or 0)
        return ptr.value or 0

    def device_copy(self, arr: np.ndarray, upload: bool) -> int:
        """A device buffer of ``arr``'s size, filled from it when ``upload``."""
        ptr = self.alloc(arr.nbytes)
        if upload and arr.nbytes:
            self.ok("aclrtMemcpy", self.fns.aclrtMemcpy(
                ptr, arr.nbytes, arr.ctypes.data, arr.nbytes, ACL_MEMCPY_HOST_TO_DEVICE))
        return ptr

    def download(self, outputs: Sequence[np.ndarray], ptrs: Sequence[int]) -> None:
        self.ok("aclrtSynchronizeStream", self.fns.aclrtSynchronizeStream(self.acl.stream))
        for o, dev in zip(outputs, ptrs, strict=True):
            if o.nbytes:
                self.ok("aclrtMemcpy", self.fns.aclrtMemcpy(
                    o.ctypes.data, o.nbytes, dev, o.nbytes, ACL_MEMCPY_DEVICE_TO_HOST))

    def keep(self, destroy: str, handle: int | None) -> int:
        """Record ``handle`` for release by ``destroy``; a null handle is an error."""
        if not handle:
            raise KernelError(f"{destroy.replace('Destroy', 'Create')} returned a null pointer")
        self.release.append((destroy, handle))
        return handle

    def free(self) -> None:
        for destroy, handle in reversed(self.release):
            getattr(self.fns, destroy)(handle)
        for p in self.dev:
            self.fns.aclrtFree(p)


# ------------------------------------------------------------------------- aclop
def _aclop_attr(launch: _Launch, spec: OpSpec, values: dict[str, Any]) -> int:
    fns = launch.fns
    attr = launch.keep("aclopDestroyAttr", fns.aclopCreateAttr())
    for a in spec.attrs:
        v, key = values[a.name], a.name.encode()
        if a.type == "int":
            ret = fns.aclopSetAttrInt(attr, key, int(v))
        elif a.type == "float":
            ret = fns.aclopSetAttrFloat(attr, key, float(v))
        elif a.type == "bool":
            ret = fns.aclopSetAttrBool(attr, key, 1 if v else 0)
        elif a.type == "string":
            ret = fns.aclopSetAttrString(attr, key, str(v).encode())
        elif a.type == "ints":
            ret = fns.aclopSetAttrListInt(attr, key, len(v), (ctypes.c_int64 * len(v))(*v))
        else:
            ret = fns.aclopSetAttrListFloat(attr, key, len(v), (ctypes.c_float * len(v))(*v))
        launch.ok(f"aclopSetAttr ({spec.name}.{a.name})", ret)
    return attr


def _aclop_tensor(launch: _Launch, arr: np.ndarray | None, upload: bool) -> tuple[int, int, int]:
    """(tensor descriptor, data buffer, device pointer); an absent input is an undefined
    descriptor with an empty buffer."""
    fns = launch.fns
    if arr is None:
        desc = fns.aclCreateTensorDesc(ACL_DT_UNDEFINED, 0, None, ACL_FORMAT_UNDEFINED)
        launch.keep("aclDestroyTensorDesc", desc)
        return desc, launch.keep("aclDestroyDataBuffer", fns.aclCreateDataBuffer(None, 0)), 0
    dims = (ctypes.c_int64 * max(arr.ndim, 1))(*arr.shape)
    desc = launch.keep("aclDestroyTensorDesc", fns.aclCreateTensorDesc(
        ACL_DTYPES[dtype_name(arr.dtype)], arr.ndim, dims, ACL_FORMAT_ND))
    ptr = launch.device_copy(arr, upload)
    buf = launch.keep("aclDestroyDataBuffer", fns.aclCreateDataBuffer(ptr, arr.nbytes))
    return desc, buf, ptr


def _array(items: Sequence[int]) -> Any:
    return (ctypes.c_void_p * max(len(items), 1))(*items)


def _run_aclop(launch: _Launch, op_type: str, spec: OpSpec, arrays: list[np.ndarray | None],
               outputs: list[np.ndarray], attrs: dict[str, Any]) -> None:
    ins = [_aclop_tensor(launch, a, True) for a in arrays]
    outs = [_aclop_tensor(launch, o, False) for o in outputs]
    attr = _aclop_attr(launch, spec, attrs)
    ret = launch.fns.aclopCompileAndExecute(
        op_type.encode(), len(ins), _array([d for d, _, _ in ins]), _array([b for _, b, _ in ins]),
        len(outs), _array([d for d, _, _ in outs]), _array([b for _, b, _ in outs]), attr,
        ACL_ENGINE_SYS, ACL_COMPILE_SYS, None, launch.acl.stream,
    )
    if ret != 0:
        raise KernelError(
            f"{op_type}: aclopCompileAndExecute returned ACL error {ret}; is the operator "
            "package installed (custom_opp_*.run) and ASCEND_CUSTOM_OPP_PATH set?"
        )
    launch.download(outputs, [p for _, _, p in outs])


# ------------------------------------------------------------------------- aclnn
def _aclnn_tensor(launch: _Launch, arr: np.ndarray | None, upload: bool) -> tuple[int, int]:
    """(aclTensor*, device pointer) of a contiguous ND tensor; (0, 0) for an absent input,
    which the aclnn API takes as a null pointer."""
    if arr is None:
        return 0, 0
    ptr = launch.device_copy(arr, upload)
    n = max(arr.ndim, 1)
    dims = (ctypes.c_int64 * n)(*arr.shape)
    strides = (ctypes.c_int64 * n)(*(s // arr.itemsize for s in arr.strides))
    tensor = launch.fns.aclCreateTensor(dims, arr.ndim, ACL_DTYPES[dtype_name(arr.dtype)],
                                        strides, 0, ACL_FORMAT_ND, dims, arr.ndim, ptr)
    return launch.keep("aclDestroyTensor", tensor), ptr


#: attribute type -> (ctypes type, C type) of the parameter in the generated aclnn API
#: (opbuild's mapping: int64_t, double, bool, char*, const aclIntArray*, const aclFloatArray*).
ACLNN_ATTR_ABI: dict[str, tuple[Any, str]] = {
    "int": (ctypes.c_int64, "int64_t"),
    "float": (ctypes.c_double, "double"),
    "bool": (ctypes.c_bool, "bool"),
    "string": (ctypes.c_char_p, "char*"),
    "ints": (ctypes.c_void_p, "const aclIntArray*"),
    "floats": (ctypes.c_void_p, "const aclFloatArray*"),
}


def aclnn_prototype(spec: OpSpec) -> str:
    """The C function type of the operator's generated ``aclnn<Op>GetWorkspaceSize``:
    inputs, then attributes, then outputs, then the workspace size and executor.

    Example:
        >>> from opsdk.registry import find_operator
        >>> aclnn_prototype(find_operator("ThresholdedRelu").spec)
        'aclnnStatus(const aclTensor*, double, const aclTensor*, uint64_t*, aclOpExecutor**)'
    """
    params = ["const aclTensor*"] * len(spec.inputs)
    params += [ACLNN_ATTR_ABI[a.type][1] for a in spec.attrs]
    params += ["const aclTensor*"] * len(spec.outputs) + ["uint64_t*", "aclOpExecutor**"]
    return f"aclnnStatus({', '.join(params)})"


def _aclnn_attr(launch: _Launch, typ: str, value: Any) -> Any:
    """One attribute's value as the generated aclnn API takes it."""
    fns = launch.fns
    if typ == "ints":
        arr = fns.aclCreateIntArray((ctypes.c_int64 * max(len(value), 1))(*value), len(value))
        return launch.keep("aclDestroyIntArray", arr)
    if typ == "floats":
        arr = fns.aclCreateFloatArray((ctypes.c_float * max(len(value), 1))(*value), len(value))
        return launch.keep("aclDestroyFloatArray", arr)
    if typ == "string":
        return str(value).encode()
    return {"int": int, "float": float, "bool": bool}[typ](value)


def _run_aclnn(launch: _Launch, api: OpApi, op_type: str, spec: OpSpec,
               arrays: list[np.ndarray | None], outputs: list[np.ndarray],
               attrs: dict[str, Any]) -> None:
    """aclnn<Op>GetWorkspaceSize(inputs..., attributes..., outputs..., &size, &executor),
    then aclnn<Op>(workspace, size, executor, stream)."""
    ins = [_aclnn_tensor(launch, a, True) for a in arrays]
    outs = [_aclnn_tensor(launch, o, False) for o in outputs]
    values = [_aclnn_attr(launch, a.type, attrs[a.name]) for a in spec.attrs]
    size, executor = ctypes.c_uint64(0), ctypes.c_void_p()
    api.get_workspace_size.restype = ctypes.c_int32
    api.get_workspace_size.argtypes = (
        [ctypes.c_void_p] * len(ins) + [ACLNN_ATTR_ABI[a.type][0] for a in spec.attrs]
        + [ctypes.c_void_p] * len(outs)
        + [ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_void_p)]
    )
    ret = api.get_workspace_size(*[t or None for t, _ in ins], *values, *[t for t, _ in outs],
                                 ctypes.byref(size), ctypes.byref(executor))
    if ret != 0:
        raise KernelError(f"aclnn{op_type}GetWorkspaceSize ({api.path}) returned {ret}")
    workspace = 0
    if size.value:
        workspace = launch.alloc(size.value)
    api.launch.restype = ctypes.c_int32
    api.launch.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_void_p]
    ret = api.launch(workspace or None, size.value, executor, launch.acl.stream)
    if ret != 0:
        raise KernelError(f"aclnn{op_type} ({api.path}) returned {ret}")
    launch.download(outputs, [p for _, p in outs])


@dataclass(frozen=True)
class NpuPlan:
    """What the npu executor runs for one operator, decided before any ACL call.

    Attributes:
        op: the spec's operator name.
        op_type: the operator's type in CANN (``opsdk cann --op-type``; default the name).
        engine: ``auto``, ``aclnn`` or ``aclop``.
    """

    op: str
    op_type: str
    engine: str

    @property
    def aclnn(self) -> tuple[str, str]:
        """The aclnn pair looked up in the vendor's op_api library."""
        return f"aclnn{self.op_type}GetWorkspaceSize", f"aclnn{self.op_type}"

    def describe(self) -> str:
        """One line for messages, e.g. ``ThresholdedRelu as CANN operator ...``."""
        apis = {"auto": f"{self.aclnn[1]}, else aclop {self.op_type}",
                "aclnn": self.aclnn[1], "aclop": f"aclop {self.op_type}"}[self.engine]
        return f"{self.op} as CANN operator {self.op_type} ({apis})"


def plan_npu(spec: OpSpec, *, op_type: str | None = None, engine: str = "auto") -> NpuPlan:
    """The executor's plan for ``spec``: its CANN type and the APIs it looks for.

    Raises:
        SpecError: an unknown engine, or an ``op_type`` that is no CANN operator type.

    Example:
        >>> from opsdk.registry import find_operator
        >>> plan = plan_npu(find_operator("ThresholdedRelu").spec, op_type="ThresholdedReluCustom")
        >>> plan.aclnn
        ('aclnnThresholdedReluCustomGetWorkspaceSize', 'aclnnThresholdedReluCustom')
    """
    from .. import CannArgError, check_op_type

    if engine not in ENGINES:
        raise SpecError(f"{spec.name}: unknown engine {engine!r}; use one of {ENGINES}")
    try:
        name = check_op_type(op_type, f"{spec.name}: cann_op_type") if op_type else spec.name
    except CannArgError as e:
        raise SpecError(str(e)) from None
    return NpuPlan(spec.name, name, engine)


class NpuOperator:
    """``op(*inputs, **attrs)`` runs the operator on the NPU; same interface as the cpu one.

    ``op_type`` is the operator's CANN type name when ``opsdk cann --op-type`` renamed it
    (default: the spec's name). ``engine`` is ``auto`` (aclnn where the vendor's op_api
    library has the operator, else aclop), ``aclnn`` or ``aclop``.
    The type and APIs are decided first, without touching CANN (:attr:`plan`,
    :func:`plan_npu`). Raises :class:`~opsdk.errors.DeviceUnavailable` (``npu unavailable:
    <reason> [<plan>]``) when CANN, a library or symbol the chosen API needs, or a device is
    missing.

    Example:
        >>> op = NpuOperator(spec)  # doctest: +SKIP
        >>> op.api  # doctest: +SKIP
        'aclnn'
    """

    def __init__(self, spec: OpSpec, device: int = 0, *, op_type: str | None = None,
                 engine: str = "auto") -> None:
        self.plan = plan_npu(spec, op_type=op_type, engine=engine)
        self.spec = spec
        self.op_type = self.plan.op_type
        self._op_api: OpApi | None = None
        try:
            self._acl = _Acl.get(device)
            self.api = self._choose(engine)
        except DeviceUnavailable as e:
            raise DeviceUnavailable(f"{e} [{self.plan.describe()}]") from None

    def _choose(self, engine: str) -> str:
        if engine != "aclop":
            api, why = find_op_api(self.op_type)
            if api is not None:
                self._acl.require(_ACLNN, f"the aclnn API of {self.op_type}")
                self._op_api = api
                return "aclnn"
            if engine == "aclnn":
                raise DeviceUnavailable(f"npu unavailable: aclnn{self.op_type}: {why}")
        self._acl.require(_ACLOP, f"the aclop API of {self.op_type}")
        return "aclop"

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def reference(self) -> Any:
        return self.spec.reference

    def __repr__(self) -> str:
        where = f" from {self._op_api.path}" if self._op_api else ""
        return f"NpuOperator({self.op_type}, device={self._acl.device}, api={self.api}{where})"

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
        spec.check_allocation(inferred, resolved)
        if outputs is None:
            outputs = [np.empty([int(d) for d in t.shape], to_numpy(t.dtype)) for t in inferred]  # type: ignore[arg-type]
        launch = _Launch(self._acl)
        try:
            if self._op_api is not None:
                _run_aclnn(launch, self._op_api, self.op_type, spec, arrays, outputs, resolved)
            else:
                _run_aclop(launch, self.op_type, spec, arrays, outputs, resolved)
        finally:
            launch.free()
        return outputs
