"""What ATC's ONNX parser accepts, as data. Edit the tables, not the checks.

Sources, as read in CANN's open operator sources (``framework/onnx_plugin``): converters
register ``OriginOpType("ai.onnx::<opset>::<Op>")`` per opset. The CANN 5-7 era plugins
register ai.onnx opsets up to 15 (Conv lists 8-15, Resize 10-13) and have no GridSample
converter; the 2025 (CANN 8) plugins list opsets up to 18 and convert GridSample to
GridSampler2D. The Resize converter maps ``coordinate_transformation_mode`` to
``half_pixel_centers`` only for ``pytorch_half_pixel`` and to ``align_corners`` only for
``align_corners``; every other mode, the ONNX default ``half_pixel`` included, is computed
as ``asymmetric``, and only ``nearest`` and ``linear`` modes convert.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ._builtins import fallback_signatures
from .versions import DEFAULT_CANN, CannVersion

__all__ = [
    "TargetProfile",
    "TARGETS",
    "profile_for",
    "target_for",
    "ATC_NATIVE_FUSIONS",
    "RESIZE_SAFE_MODES",
    "RESIZE_MODES",
    "CANN_BUILTIN_OP_TYPES",
]

_COMMON_UNSUPPORTED: dict[str, str] = {
    "Det": "ATC's ONNX parser has no converter for Det",
    "StringNormalizer": "string tensors do not exist on the NPU; ATC has no converter",
    "TfIdfVectorizer": "n-gram/string processing has no ATC converter",
}


@dataclass(frozen=True)
class TargetProfile:
    """One ATC generation: the ai.onnx opsets and operators its ONNX parser converts."""

    name: str
    description: str
    opset_min: int
    opset_max: int
    unsupported: Mapping[str, str] = field(default_factory=dict)
    #: the CANN release whose parser rules apply when no ``--cann`` is given
    cann: str = DEFAULT_CANN


TARGETS: dict[str, TargetProfile] = {
    "ascend": TargetProfile(
        "ascend",
        "ATC of CANN 5-7 (the ONNX parser most Ascend toolchains ship)",
        9,
        15,
        {
            **_COMMON_UNSUPPORTED,
            "GridSample": "ATC's ONNX parser (CANN <= 7) has no GridSample converter",
        },
        "7.0",
    ),
    "ascend-cann8": TargetProfile(
        "ascend-cann8",
        "ATC of CANN 8 (ONNX plugins registered up to ai.onnx opset 18)",
        9,
        18,
        dict(_COMMON_UNSUPPORTED),
        "8.1.RC1",
    ),
}

#: The first CANN release whose ONNX parser plugins register ai.onnx opsets up to 18.
_FIRST_OPSET18 = (8, 0)


def target_for(cann: CannVersion) -> str:
    """The key of :data:`TARGETS` whose rules the ONNX parser of ``cann`` follows.

    CANN 5-7 read ai.onnx opsets 9-15; CANN 8 reads up to 18. Releases after 8 are given
    CANN 8's rules (their plugins were not read here).

    Example:
        >>> from opsdk.ascend.versions import parse_cann_version
        >>> target_for(parse_cann_version("7.0")), target_for(parse_cann_version("8.1.RC1"))
        ('ascend', 'ascend-cann8')
    """
    return "ascend-cann8" if (cann.major, cann.minor) >= _FIRST_OPSET18 else "ascend"


def profile_for(cann: CannVersion) -> TargetProfile:
    """The parser rules (opsets, unsupported ops) of the CANN release ``cann``.

    Example:
        >>> from opsdk.ascend.versions import parse_cann_version
        >>> profile_for(parse_cann_version("8.1.RC1")).opset_max
        18
    """
    return TARGETS[target_for(cann)]


#: Chains ATC's graph engine fuses on the AI Core by itself, by ``opsdk rewrite --fuse`` name,
#: with the reason an opsdk replacement would cost speed there. FusedConvBnRelu has an AI CPU
#: kernel only: fusing would move every convolution off the AI Core's cube unit.
ATC_NATIVE_FUSIONS: Mapping[str, str] = {
    "conv-bn-relu": (
        "ATC fuses Conv+BatchNormalization+Relu on the AI Core (cube unit) by itself; "
        "FusedConvBnRelu has only an AI CPU kernel there, so replacing the chain would move "
        "the convolution off the AI Core"
    ),
}

#: coordinate_transformation_mode values ATC's Resize converter computes faithfully.
RESIZE_SAFE_MODES = ("pytorch_half_pixel", "align_corners", "asymmetric")
#: Resize interpolation modes ATC converts.
RESIZE_MODES = ("nearest", "linear")

#: Operator types of CANN's built-in op proto (``REG_OP(<type>)`` in the toolkit's built-in
#: OPP, ``opp/built-in/op_proto/inc``) as read in CANN 8.1.RC1 (``Softmax`` is not one there,
#: only ``SoftmaxV2``): the names of ``data/cann_builtin_ops.txt``, which also holds their
#: inputs, outputs and attributes. Only the fallback: with a toolkit installed,
#: :func:`opsdk.ascend.builtin_op_types` reads the toolkit's own list. A custom operator of
#: the same type is confused with the built-in one; ``opsdk cann --op-type`` picks another
#: CANN type name.
CANN_BUILTIN_OP_TYPES = frozenset(fallback_signatures())
