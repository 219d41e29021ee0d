"""One operator as the CANN side sees it: every name, dtype column and attribute spelling.

Everything the templates print comes from :func:`cann_op`, so a spelling (``ge::DT_BF16``,
``list_int``, ``ListInt``) is decided in exactly one place.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from .._generated import BANNER
from ..errors import SpecError
from ..naming import snake_case
from ..spec import Attr, OpSpec
from ._builtins import BuiltinSignature, compare_signature, fallback_signatures, parse_op_protos
from ._cpp import cpp_list, cpp_literal, cpp_string
from .parser import CANN_BUILTIN_OP_TYPES
from .socs import CannArgError, soc_version_of
from .spellings import GE_DTYPES, MSOPGEN_DTYPES
from .versions import DEFAULT_CANN, CannVersion, parse_cann_version

__all__ = [
    "CannOp",
    "CannParam",
    "CannAttr",
    "cann_op",
    "check_op_type",
    "builtin_clash",
    "builtin_clash_parts",
    "builtin_op_types",
    "builtin_signatures",
    "GE_DTYPES",
    "MSOPGEN_DTYPES",
]

#: The compute units a CANN project targets when none is given (``--soc``).
DEFAULT_SOCS: tuple[str, ...] = ("ascend910b",)

#: spec attr type -> (msopgen json type, OpDef/REG_OP method, C++ value type, ONNX AttributeType).
ATTR_KINDS: dict[str, tuple[str, str, str, int]] = {
    "int": ("int", "Int", "int64_t", 2),
    "float": ("float", "Float", "float", 1),
    "bool": ("bool", "Bool", "bool", 2),
    "string": ("string", "String", "std::string", 3),
    "ints": ("list_int", "ListInt", "std::vector<int64_t>", 7),
    "floats": ("list_float", "ListFloat", "std::vector<float>", 6),
}

#: Longest string attribute carried in the tiling data (bytes, NUL included).
TILING_STR_BYTES = 64
#: Most elements of a list attribute carried in the tiling data.
TILING_LIST_MAX = 16


@dataclass(frozen=True)
class CannParam:
    """An input or output: its name, dtype column (one per supported combination)."""

    name: str
    index: int
    dtypes: tuple[str, ...]
    optional: bool = False
    type_var: str = ""

    @property
    def param_type(self) -> str:
        return "optional" if self.optional else "required"

    @property
    def ge_types(self) -> str:
        return cpp_list("ge::" + GE_DTYPES[d] for d in self.dtypes)

    @property
    def ge_formats(self) -> str:
        return cpp_list("ge::FORMAT_ND" for _ in self.dtypes)

    @property
    def ge_type_names(self) -> str:
        """The distinct dtypes as ``DT_FLOAT,DT_FLOAT16`` (op info ini spelling)."""
        return ",".join(GE_DTYPES[d] for d in dict.fromkeys(self.dtypes))

    @property
    def cname(self) -> str:
        """A C++ variable name for the tensor (never clashes with the adapter's own names)."""
        return f"t_{self.name}"

    @property
    def tensor_type(self) -> str:
        unique = list(dict.fromkeys(self.dtypes))
        return "TensorType(" + cpp_list(GE_DTYPES[d] for d in unique) + ")"


@dataclass(frozen=True)
class CannAttr:
    """An attribute with every spelling CANN needs."""

    name: str
    index: int
    type: str
    required: bool
    default: Any = None

    @property
    def msopgen_type(self) -> str:
        return ATTR_KINDS[self.type][0]

    @property
    def method(self) -> str:
        return ATTR_KINDS[self.type][1]

    @property
    def cxx_type(self) -> str:
        return ATTR_KINDS[self.type][2]

    @property
    def onnx_type(self) -> int:
        return ATTR_KINDS[self.type][3]

    @property
    def cpp_default(self) -> str:
        return cpp_literal(self.type, self.default) if not self.required else ""

    @property
    def cpp_name(self) -> str:
        return cpp_string(self.name)

    @property
    def is_list(self) -> bool:
        return self.type in ("ints", "floats")


@dataclass(frozen=True)
class CannOp:
    """The template context of one operator."""

    name: str
    snake: str
    upper: str
    domain: str
    version: int
    socs: tuple[str, ...]
    inputs: tuple[CannParam, ...]
    outputs: tuple[CannParam, ...]
    attrs: tuple[CannAttr, ...]
    origin_op_types: tuple[str, ...]
    elementwise: bool
    out_type_source: tuple[tuple[str, int | str], ...] = field(default=())
    vendor: str = "opsdk"
    kernel_name: str = ""
    engine: str = "aicpu"
    layout: str = "msopgen"
    cann: str = DEFAULT_CANN
    soc_versions: tuple[str, ...] = ()
    shape_header: bool = False
    banner: str = BANNER
    tiling_str_bytes: int = TILING_STR_BYTES
    tiling_list_max: int = TILING_LIST_MAX

    @property
    def aicpu(self) -> bool:
        """True when the project builds the AI CPU kernel (``--engine aicpu`` or ``both``)."""
        return self.engine in ("aicpu", "both")

    @property
    def aicore(self) -> bool:
        """True when the project builds an AI Core kernel (``--engine aicore`` or ``both``)."""
        return self.engine in ("aicore", "both")

    @property
    def kernel_snake(self) -> str:
        return snake_case(self.kernel_name or self.name)

    @property
    def dtype_names(self) -> str:
        """Every dtype the operator's inputs take, for messages (``float16, float32``)."""
        names = dict.fromkeys(d for p in self.inputs + self.outputs for d in p.dtypes)
        return ", ".join(names)

    @property
    def n_combinations(self) -> int:
        return len(self.inputs[0].dtypes) if self.inputs else len(self.outputs[0].dtypes)


def _columns(spec: OpSpec) -> list[tuple[dict[str, str], tuple[str, ...]]]:
    """(binding, input dtypes) for every supported dtype combination, in spec order."""
    cols = []
    for combo in spec.dtype_combinations():
        binding = spec.bind_types(list(combo))
        cols.append((binding, combo))
    return cols


def _out_source(spec: OpSpec) -> tuple[tuple[str, int | str], ...]:
    """Where each output's dtype comes from: an input index, or a fixed ge dtype."""
    src: list[tuple[str, int | str]] = []
    for out in spec.outputs:
        idx = next(
            (
                i
                for i, inp in enumerate(spec.inputs)
                if out.type in spec.types and inp.type == out.type
            ),
            None,
        )
        if idx is not None and not spec.inputs[idx].optional:
            src.append((out.name, idx))
        else:
            src.append((out.name, "ge::" + GE_DTYPES[spec.output_dtype(out, {})]))
    return tuple(src)


def _attr(spec: OpSpec, a: Attr, index: int) -> CannAttr:
    if a.type == "string" and not a.required and len(a.default.encode()) >= TILING_STR_BYTES:
        raise SpecError(
            f"{spec.name}: default of string attribute {a.name!r} is longer than "
            f"{TILING_STR_BYTES - 1} bytes, the most the generated tiling data carries"
        )
    return CannAttr(a.name, index, a.type, a.required, None if a.required else a.default)


def cann_op(
    spec: OpSpec,
    socs: Sequence[str] = DEFAULT_SOCS,
    origin_op_types: Sequence[str] | None = None,
    vendor: str = "opsdk",
    *,
    op_type: str | None = None,
    engine: str = "aicpu",
    cann: CannVersion | None = None,
    shape_header: bool = False,
) -> CannOp:
    """Build the CANN view of ``spec`` for the given compute units (``ascend910b``, ...).

    ``op_type`` is the operator's type name on the CANN side (default: the spec's name); the
    ONNX plugin maps the spec's ONNX nodes to it. ``engine`` and ``cann`` pick the project
    (see :func:`opsdk.ascend.write_project`); ``shape_header`` says the operator has a C++ shape
    function (``operators/<op>/shape.h``, see ``opsdk/shape_fn.h``).

    Example:
        >>> from opsdk.spec import OpSpec, Input, Output, Attr, TFloat
        >>> s = OpSpec("MyOp", domain="com.example", inputs=[Input("x")], outputs=[Output("y")],
        ...            attrs=[Attr("k", "ints", [1, 1])], types={"T": TFloat})
        >>> op = cann_op(s)
        >>> op.inputs[0].ge_types, op.attrs[0].cpp_default, op.origin_op_types
        ('{ge::DT_FLOAT16, ge::DT_FLOAT}', '{1, 1}', ('com.example::1::MyOp',))
        >>> cann_op(s, op_type="MyOpCustom").name, cann_op(s, op_type="MyOpCustom").kernel_name
        ('MyOpCustom', 'MyOp')
    """
    cols = _columns(spec)
    inputs = tuple(
        CannParam(i.name, n, tuple(c[1][n] for c in cols), i.optional, i.type)
        for n, i in enumerate(spec.inputs)
    )
    outputs = tuple(
        CannParam(o.name, n, tuple(spec.output_dtype(o, c[0]) for c in cols), False, o.type)
        for n, o in enumerate(spec.outputs)
    )
    keys = tuple(check_origin_op_type(k) for k in origin_op_types or ()) or (
        default_origin_op_type(spec),
    )
    name = check_op_type(op_type) if op_type is not None else spec.name  # '' is no type
    snake = snake_case(name)
    version = cann or parse_cann_version(DEFAULT_CANN)
    return CannOp(
        name=name,
        snake=snake,
        upper=snake.upper(),
        domain=spec.domain,
        version=spec.version,
        socs=tuple(socs),
        inputs=inputs,
        outputs=outputs,
        attrs=tuple(_attr(spec, a, n) for n, a in enumerate(spec.attrs)),
        origin_op_types=keys,
        elementwise=spec.elementwise,
        out_type_source=_out_source(spec),
        vendor=vendor,
        kernel_name=spec.name,
        engine=engine,
        layout=version.project_layout,
        cann=str(version),
        soc_versions=tuple(soc_version_of(u) for u in socs),
        shape_header=shape_header,
    )


def check_op_type(name: str, what: str = "--op-type") -> str:
    """``name`` if it is a valid CANN operator type (``^[A-Z][A-Za-z0-9]*$``).

    ``what`` names where the value came from in the error.

    Raises:
        CannArgError: naming the value and the rule.

    Example:
        >>> check_op_type("ThresholdedReluCustom")
        'ThresholdedReluCustom'
    """
    if not re.match(r"^[A-Z][A-Za-z0-9]*$", name):
        raise CannArgError(
            f"{what} {name!r} is not a CANN operator type: use UpperCamelCase letters and "
            "digits, e.g. ThresholdedReluCustom"
        )
    return name


#: ``<domain>::<opset>::<OpType>`` as the GE ONNX parser builds an OriginOpType key: an ONNX
#: domain (letters, digits, '_', '.', '-'), an opset that fits an int32, an identifier.
_ORIGIN_KEY = re.compile(r"^[A-Za-z0-9_.-]{1,128}::[0-9]{1,9}::[A-Za-z_][A-Za-z0-9_]{0,127}$")


def check_origin_op_type(
    key: str, what: str = "OriginOpType key (from --origin-op-type or a node of --onnx-model)"
) -> str:
    """``key`` if it is an OriginOpType key ``<domain>::<opset>::<OpType>`` of the grammar
    the generated plugin may carry; whatever a model or the command line gives is checked
    here before it becomes a C++ string literal.

    Raises:
        CannArgError: naming the key and the rule.

    Example:
        >>> check_origin_op_type("com.example::1::MyOp")
        'com.example::1::MyOp'
    """
    if not isinstance(key, str) or not _ORIGIN_KEY.match(key):
        raise CannArgError(
            f"{what} {key!r} is not <domain>::<opset>::<OpType>: the domain uses only "
            "letters, digits, '_', '.' and '-', the opset is a number below 10^9 and the op "
            "type an identifier, e.g. com.example::1::MyOp"
        )
    return key


@lru_cache(maxsize=8)
def _proto_signatures(inc: Path) -> dict[str, BuiltinSignature]:
    from .versions import read_small_text

    found: dict[str, BuiltinSignature] = {}
    for header in sorted(inc.glob("*.h")):
        try:
            text = read_small_text(header, limit=8 << 20)
        except (OSError, CannArgError):
            continue
        for name, sig in parse_op_protos(text).items():
            found.setdefault(name, sig)
    return found


def builtin_signatures(root: Path | None = None) -> tuple[dict[str, BuiltinSignature], str]:
    """CANN's built-in operators (type -> inputs, outputs, attributes) and where they came
    from: the ``REG_OP`` declarations of the toolkit's built-in op protos
    (``opp/built-in/op_proto/inc/*.h``) when a toolkit is installed (``root``, default:
    :func:`opsdk.ascend.versions.toolkit_root`), else opsdk's table read from CANN 8.1.RC1
    (``opsdk/ascend/data/cann_builtin_ops.txt``).

    Example:
        >>> import tempfile
        >>> sigs, source = builtin_signatures(Path(tempfile.mkdtemp()))
        >>> sigs["RmsNorm"].inputs, source.startswith("opsdk's table")
        (('x', 'gamma'), True)
    """
    from .versions import toolkit_root

    root = toolkit_root() if root is None else root
    if root is not None:
        inc = root / "opp" / "built-in" / "op_proto" / "inc"
        found = _proto_signatures(inc) if inc.is_dir() else {}
        if found:
            return found, f"the toolkit's op protos ({inc})"
    return fallback_signatures(), ("opsdk's table of CANN 8.1.RC1's built-in operators "
                                   "(no toolkit found)")


def builtin_op_types(root: Path | None = None) -> tuple[frozenset[str], str]:
    """CANN's built-in operator types and where they came from (see
    :func:`builtin_signatures`; without a toolkit
    :data:`opsdk.ascend.parser.CANN_BUILTIN_OP_TYPES`).

    Example:
        >>> import tempfile
        >>> names, source = builtin_op_types(Path(tempfile.mkdtemp()))
        >>> "SoftmaxV2" in names and "Softmax" not in names, source.startswith("opsdk's table")
        (True, True)
    """
    sigs, source = builtin_signatures(root)
    return (CANN_BUILTIN_OP_TYPES if sigs is fallback_signatures() else frozenset(sigs)), source


def builtin_clash(op_type: str, root: Path | None = None, spec: OpSpec | None = None) -> str | None:
    """A warning when ``op_type`` is the type of an operator in CANN's built-in OPP, else None
    (built-in operators from :func:`builtin_signatures`). With ``spec`` the warning says
    whether the built-in's inputs, outputs and attributes match the spec's.

    Example:
        >>> import tempfile
        >>> builtin_clash("Gelu", Path(tempfile.mkdtemp())).startswith("Gelu is also the type")
        True
        >>> builtin_clash("MyOp") is None
        True
    """
    parts = builtin_clash_parts(op_type, root, spec)
    return None if parts is None else f"{parts[0]} Give the CANN project another type: {parts[1]}"


def builtin_clash_parts(op_type: str, root: Path | None = None,
                        spec: OpSpec | None = None) -> tuple[str, str] | None:
    """(what clashes, the fix) of :func:`builtin_clash`, or None.

    Example:
        >>> builtin_clash_parts("RmsNorm")[1].startswith("opsdk cann --op-type RmsNormCustom")
        True
    """
    sigs, source = builtin_signatures(root)
    builtin = sigs.get(op_type)
    if builtin is None:
        return None
    match = ""
    if spec is not None:
        same, how = compare_signature(builtin, spec)
        match = (f" CANN's {op_type} against {spec.name}'s spec.py: {how}" +
                 ("; if it computes the same, the model can use the built-in instead."
                  if same else "."))
    return (
        f"{op_type} is also the type of a CANN built-in operator (REG_OP({op_type}) in "
        f"{source}): the custom package's op proto and kernel would be confused with the "
        f"built-in one.{match}",
        f"opsdk cann --op-type {op_type}Custom (or another unused name); the ONNX plugin "
        f"then maps the model's {op_type} nodes to {op_type}Custom",
    )


def default_origin_op_type(spec: OpSpec) -> str:
    """``<domain>::<version>::<Name>``: the key the GE ONNX parser builds for this op's node
    in a model whose opset_import gives ``spec.domain`` version ``spec.version``.

    Example:
        >>> from opsdk.spec import OpSpec, Input, Output
        >>> s = OpSpec("MyOp", domain="com.example", version=2, inputs=[Input("x", "float32")],
        ...            outputs=[Output("y", "float32")])
        >>> default_origin_op_type(s)
        'com.example::2::MyOp'
    """
    return f"{spec.domain}::{spec.version}::{spec.name}"
