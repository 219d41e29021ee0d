"""CANN's C API as the npu executor binds it: every symbol, from the library that exports it.

One table (:data:`SYMBOLS`) names each function the executor calls, the CANN library that
exports it, its ctypes signature and its C type as CANN's headers declare it (the tests
compile a static_assert per entry against the real headers where they are available):

=================  ==========================================================================
``ascendcl``       libascendcl.so: aclInit, the aclrt* runtime, tensor descriptors and data
                   buffers, aclopCreateAttr / aclopSetAttr* (acl/acl.h, acl/acl_op.h)
``acl_op_compiler`` libacl_op_compiler.so: aclopCompileAndExecute (acl/acl_op_compiler.h)
``nnopbase``       libnnopbase.so: aclCreateTensor / aclCreateScalar / aclCreate*Array and
                   their destroyers, the objects of the aclnn API (aclnn/acl_meta.h)
``cust_opapi``     the vendor's libcust_opapi.so (``<vendor>/op_api/lib``): the generated
                   ``aclnn<Op>GetWorkspaceSize`` and ``aclnn<Op>`` of each AI Core operator
=================  ==========================================================================

:func:`load_libraries` finds and loads the toolkit libraries, :func:`bind` binds the symbols
of one library and reports each missing one with the reason, :func:`find_op_api` finds the
vendor library exporting an operator's aclnn pair. Nothing here calls into CANN.

Example:
    >>> SYMBOLS["aclopCompileAndExecute"].library
    'acl_op_compiler'
    >>> sorted({s.library for s in SYMBOLS.values()})
    ['acl_op_compiler', 'ascendcl', 'nnopbase']
"""

from __future__ import annotations

import configparser
import ctypes
import ctypes.util
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "Symbol",
    "SYMBOLS",
    "LIBRARY_FILES",
    "Bound",
    "bind",
    "cann_home",
    "find_library",
    "load_libraries",
    "OpApi",
    "find_op_api",
    "op_api_dirs",
]

_P = ctypes.c_void_p
_I = ctypes.c_int
_S = ctypes.c_size_t
_U64 = ctypes.c_uint64
_I64P = ctypes.POINTER(ctypes.c_int64)
_STR = ctypes.c_char_p
_PP = ctypes.POINTER(ctypes.c_void_p)


@dataclass(frozen=True)
class Symbol:
    """One C function: the library exporting it, its ctypes signature, its C type."""

    library: str
    restype: Any
    argtypes: tuple[Any, ...]
    ctype: str


def _sym(lib: str, res: Any, args: Iterable[Any], ctype: str) -> Symbol:
    return Symbol(lib, res, tuple(args), ctype)


_ACL, _OPC, _NN = "ascendcl", "acl_op_compiler", "nnopbase"
_ERR = "aclError"

#: Every function the executor calls: name -> where it lives and how it is typed.
SYMBOLS: dict[str, Symbol] = {
    "aclInit": _sym(_ACL, _I, [_STR], f"{_ERR}(const char*)"),
    "aclFinalize": _sym(_ACL, _I, [], f"{_ERR}()"),
    "aclrtSetDevice": _sym(_ACL, _I, [ctypes.c_int32], f"{_ERR}(int32_t)"),
    "aclrtResetDevice": _sym(_ACL, _I, [ctypes.c_int32], f"{_ERR}(int32_t)"),
    "aclrtGetDeviceCount": _sym(
        _ACL, _I, [ctypes.POINTER(ctypes.c_uint32)], f"{_ERR}(uint32_t*)"
    ),
    "aclrtCreateStream": _sym(_ACL, _I, [_PP], f"{_ERR}(aclrtStream*)"),
    "aclrtDestroyStream": _sym(_ACL, _I, [_P], f"{_ERR}(aclrtStream)"),
    "aclrtSynchronizeStream": _sym(_ACL, _I, [_P], f"{_ERR}(aclrtStream)"),
    "aclrtMalloc": _sym(_ACL, _I, [_PP, _S, _I], f"{_ERR}(void**, size_t, aclrtMemMallocPolicy)"),
    "aclrtFree": _sym(_ACL, _I, [_P], f"{_ERR}(void*)"),
    "aclrtMemcpy": _sym(
        _ACL, _I, [_P, _S, _P, _S, _I],
        f"{_ERR}(void*, size_t, const void*, size_t, aclrtMemcpyKind)",
    ),
    "aclCreateTensorDesc": _sym(
        _ACL, _P, [_I, _I, _I64P, _I], "aclTensorDesc*(aclDataType, int, const int64_t*, aclFormat)"
    ),
    "aclDestroyTensorDesc": _sym(_ACL, None, [_P], "void(const aclTensorDesc*)"),
    "aclCreateDataBuffer": _sym(_ACL, _P, [_P, _S], "aclDataBuffer*(void*, size_t)"),
    "aclDestroyDataBuffer": _sym(_ACL, _I, [_P], f"{_ERR}(const aclDataBuffer*)"),
    "aclopCreateAttr": _sym(_ACL, _P, [], "aclopAttr*()"),
    "aclopDestroyAttr": _sym(_ACL, None, [_P], "void(const aclopAttr*)"),
    "aclopSetAttrInt": _sym(
        _ACL, _I, [_P, _STR, ctypes.c_int64], f"{_ERR}(aclopAttr*, const char*, int64_t)"
    ),
    "aclopSetAttrFloat": _sym(
        _ACL, _I, [_P, _STR, ctypes.c_float], f"{_ERR}(aclopAttr*, const char*, float)"
    ),
    "aclopSetAttrBool": _sym(
        _ACL, _I, [_P, _STR, ctypes.c_uint8], f"{_ERR}(aclopAttr*, const char*, uint8_t)"
    ),
    "aclopSetAttrString": _sym(
        _ACL, _I, [_P, _STR, _STR], f"{_ERR}(aclopAttr*, const char*, const char*)"
    ),
    "aclopSetAttrListInt": _sym(
        _ACL, _I, [_P, _STR, _I, _I64P], f"{_ERR}(aclopAttr*, const char*, int, const int64_t*)"
    ),
    "aclopSetAttrListFloat": _sym(
        _ACL, _I, [_P, _STR, _I, ctypes.POINTER(ctypes.c_float)],
        f"{_ERR}(aclopAttr*, const char*, int, const float*)",
    ),
    "aclopCompileAndExecute": _sym(
        _OPC, _I, [_STR, _I, _PP, _PP, _I, _PP, _PP, _P, _I, _I, _STR, _P],
        f"{_ERR}(const char*, int, const aclTensorDesc* const*, const aclDataBuffer* const*, "
        "int, const aclTensorDesc* const*, aclDataBuffer* const*, const aclopAttr*, "
        "aclopEngineType, aclopCompileType, const char*, aclrtStream)",
    ),
    "aclCreateTensor": _sym(
        _NN, _P, [_I64P, _U64, _I, _I64P, ctypes.c_int64, _I, _I64P, _U64, _P],
        "aclTensor*(const int64_t*, uint64_t, aclDataType, const int64_t*, int64_t, aclFormat, "
        "const int64_t*, uint64_t, void*)",
    ),
    "aclDestroyTensor": _sym(_NN, ctypes.c_int32, [_P], "aclnnStatus(const aclTensor*)"),
    "aclCreateScalar": _sym(_NN, _P, [_P, _I], "aclScalar*(void*, aclDataType)"),
    "aclDestroyScalar": _sym(_NN, ctypes.c_int32, [_P], "aclnnStatus(const aclScalar*)"),
    "aclCreateIntArray": _sym(
        _NN, _P, [_I64P, _U64], "aclIntArray*(const int64_t*, uint64_t)"
    ),
    "aclDestroyIntArray": _sym(_NN, ctypes.c_int32, [_P], "aclnnStatus(const aclIntArray*)"),
    "aclCreateFloatArray": _sym(
        _NN, _P, [ctypes.POINTER(ctypes.c_float), _U64], "aclFloatArray*(const float*, uint64_t)"
    ),
    "aclDestroyFloatArray": _sym(
        _NN, ctypes.c_int32, [_P], "aclnnStatus(const aclFloatArray*)"
    ),
}

#: The file of each toolkit library.
LIBRARY_FILES: dict[str, str] = {
    _ACL: "libascendcl.so",
    _OPC: "libacl_op_compiler.so",
    _NN: "libnnopbase.so",
}
OP_API_FILE = "libcust_opapi.so"
_DEFAULT_HOME = Path("/usr/local/Ascend/ascend-toolkit/latest")


def cann_home() -> Path | None:
    """The toolkit root: ``$ASCEND_HOME_PATH``, ``$ASCEND_TOOLKIT_HOME`` or the default
    install prefix, else None."""
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        if os.environ.get(var):
            return Path(os.environ[var])
    return _DEFAULT_HOME if _DEFAULT_HOME.is_dir() else None


def find_library(library: str, home: Path | None) -> tuple[Path | str | None, str]:
    """(where ``library`` is, "") or (None, why not): the toolkit's lib64/ first (and the
    older runtime/lib64/), then the dynamic loader's search path."""
    name = LIBRARY_FILES[library]
    if home is not None:
        for sub in ("lib64", "runtime/lib64"):
            if (home / sub / name).is_file():
                return home / sub / name, ""
    found = ctypes.util.find_library(library)
    if found:
        return found, ""
    where = f"under {home}/lib64 nor " if home is not None else ""
    return None, f"{name} not found {where}on the library path"


@dataclass
class Bound:
    """Functions bound by name, and for each symbol that could not be, the reason."""

    functions: dict[str, Any] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        fns = self.__dict__.get("functions", {})
        if name in fns:
            return fns[name]
        raise AttributeError(name)

    def lacking(self, names: Iterable[str]) -> list[str]:
        """The reasons ``names`` cannot all be called (empty when they can)."""
        absent = [n for n in names if n not in self.functions]
        return [f"{n}: {self.missing.get(n, 'not bound')}" for n in absent]


def bind(
    bound: Bound, lib: ctypes.CDLL, path: str, library: str,
    symbols: Mapping[str, Symbol] = SYMBOLS,
) -> None:
    """Bind every symbol of ``library`` from the loaded ``lib`` (set restype/argtypes);
    a symbol ``lib`` does not export is recorded in ``bound.missing`` with the reason."""
    for name, sym in symbols.items():
        if sym.library != library:
            continue
        try:
            fn = getattr(lib, name)
        except AttributeError:
            bound.missing[name] = f"{path} does not export it"
            continue
        fn.restype, fn.argtypes = sym.restype, list(sym.argtypes)
        bound.functions[name] = fn


def load_libraries(home: Path | None, libraries: Iterable[str] = tuple(LIBRARY_FILES)) -> Bound:
    """Load each toolkit library (RTLD_GLOBAL, so the vendor op_api library resolves its
    own dependencies on them) and bind its symbols; what is missing says why."""
    bound = Bound()
    for library in libraries:
        path, why = find_library(library, home)
        if path is None:
            reason = why
        else:
            try:
                lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
            except OSError as e:
                reason = f"cannot load {path}: {e}"
            else:
                bind(bound, lib, str(path), library)
                continue
        for name, sym in SYMBOLS.items():
            if sym.library == library:
                bound.missing[name] = reason
    return bound


# ------------------------------------------------------------------ the vendor's op_api
def op_api_dirs(
    custom_path: str | None = None, opp_path: str | Path | None = None
) -> list[Path]:
    """The vendor folders to search for ``op_api/lib/libcust_opapi.so``, in CANN's order:
    each entry of ``$ASCEND_CUSTOM_OPP_PATH`` (a vendor folder, or a folder holding
    ``vendors/<name>``), then ``$ASCEND_OPP_PATH/vendors/<name>`` by the ``load_priority``
    of ``vendors/config.ini`` (every vendor folder, by name, when there is no such file)."""
    custom = os.environ.get("ASCEND_CUSTOM_OPP_PATH", "") if custom_path is None else custom_path
    dirs: list[Path] = []
    for entry in filter(None, custom.split(":")):
        p = Path(entry)
        dirs += [p] if (p / "op_api").is_dir() else sorted((p / "vendors").glob("*/"))
    opp = opp_path if opp_path is not None else os.environ.get("ASCEND_OPP_PATH")
    if opp is None and cann_home() is not None:
        opp = cann_home() / "opp"  # type: ignore[operator]
    if opp:
        dirs += _by_priority(Path(opp) / "vendors")
    return list(dict.fromkeys(dirs))


def _by_priority(vendors: Path) -> list[Path]:
    config = vendors / "config.ini"
    if config.is_file():
        parser = configparser.ConfigParser()
        parser.read_string("[vendors]\n" + config.read_text())
        names = parser.get("vendors", "load_priority", fallback="")
        return [vendors / n.strip() for n in names.split(",") if n.strip()]
    return sorted(p for p in vendors.glob("*") if p.is_dir()) if vendors.is_dir() else []


@dataclass(frozen=True)
class OpApi:
    """An operator's aclnn pair, bound from the vendor library that exports it."""

    path: Path
    get_workspace_size: Any
    launch: Any


def find_op_api(op_type: str, dirs: Iterable[Path] | None = None) -> tuple[OpApi | None, str]:
    """(the aclnn pair of ``op_type``, "") from the first vendor library exporting both
    ``aclnn<op_type>GetWorkspaceSize`` and ``aclnn<op_type>``, or (None, why not).

    Argument types are not set here: they depend on the operator (see the npu executor).

    Example:
        >>> api, why = find_op_api("NoSuchOp", dirs=[])
        >>> api is None and "no vendor op_api library" in why
        True
    """
    ws, launch = f"aclnn{op_type}GetWorkspaceSize", f"aclnn{op_type}"
    looked: list[str] = []
    for d in op_api_dirs() if dirs is None else dirs:
        lib_path = d / "op_api" / "lib" / OP_API_FILE
        if not lib_path.is_file():
            continue
        try:
            lib = ctypes.CDLL(str(lib_path))
        except OSError as e:
            looked.append(f"{lib_path} (cannot load: {e})")
            continue
        absent = [n for n in (ws, launch) if not hasattr(lib, n)]
        if not absent:
            return OpApi(lib_path, getattr(lib, ws), getattr(lib, launch)), ""
        looked.append(f"{lib_path} (no {' nor '.join(absent)})")
    if not looked:
        return None, (
            f"no vendor op_api library ({OP_API_FILE}) under $ASCEND_CUSTOM_OPP_PATH or "
            "$ASCEND_OPP_PATH/vendors"
        )
    return None, f"no vendor library exports both {ws} and {launch}: {'; '.join(looked)}"
