"""What the AI Core (Ascend C) of each SoC family has, read from CANN's implementation headers.

One table for the generator, the CANN project and opsdk's Ascend C model. The facts were read
from a CANN 8.1.RC1 toolkit, ``<arch>-linux/ascendc/include`` (``basic_api/...``,
``highlevel_api/...``) and ``tools/tikicpulib/lib/cmake/targets-tikicpulib.cmake``; each entry
names the header it comes from.

Example:
    >>> aicore_arch("Ascend910B3").cce_aicore, aicore_arch("ascend310p").cce_aicore
    (220, 200)
    >>> missing_apis("Erf(y, x, n);", "Ascend310B1", ["float32"])[0][:41]
    'Erf: not in the Ascend C of Ascend310B1 ('
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ._cpp_if import live_code
from .socs import CannArgError, soc_facts

__all__ = ["AicoreArch", "aicore_arch", "missing_apis", "api_flags", "API_ARCHS",
           "SELECT_SCRATCH_BYTES", "UB_RESERVED"]


@dataclass(frozen=True)
class AicoreArch:
    """One AI Core family: its ``__CCE_AICORE__``, implementation folder and UB layout."""

    cce_aicore: int  # __CCE_AICORE__ (and __DAV_<dir>__) CPU-debug and the compiler define
    impl_dir: str  # basic_api/impl/<impl_dir>
    total_ub: int  # TOTAL_UB_SIZE
    tmp_ub_offset: int  # TMP_UB_OFFSET: where Select (and others) write their scratch
    stack_end: int  # GetEndAddress(): the end of the tmp-buffer stack the high-level APIs use


#: basic_api/impl/utils/kernel_utils_constants.h (TOTAL_UB_SIZE, TMP_UB_OFFSET per
#: __CCE_AICORE__) and basic_api/impl/kernel_pop_stack_buffer.h (GetEndAddress: on 220 the
#: last sizeof(KfcMsg) = 128 bytes, basic_api/impl/dav_c220/kfc/kfc_comm.h, are kept back).
ARCHS: dict[int, AicoreArch] = {
    100: AicoreArch(100, "dav_c100", 256 * 1024, 248 * 1024, 256 * 1024),
    200: AicoreArch(200, "dav_m200", 256 * 1024, 248 * 1024, 256 * 1024),
    220: AicoreArch(220, "dav_c220", 192 * 1024, 184 * 1024, 192 * 1024 - 128),
    300: AicoreArch(300, "dav_m300", 248 * 1024, 248 * 1024, 248 * 1024),
}

#: The platform data's AIC_version -> __CCE_AICORE__, from targets-tikicpulib.cmake
#: (ascend910 -> 100, ascend310p -> 200, ascend910B1 -> 220, ascend310B1 -> 300). AIC-M-100
#: (Ascend310) has no Ascend C target there.
_AIC_VERSIONS = {"AIC-C-100": 100, "AIC-M-200": 200, "AIC-C-220": 220, "AIC-M-300": 300}

#: Select writes 32 (ONE_BLK_SIZE) elements of at most 4 bytes at TMP_UB_OFFSET
#: (basic_api/impl/dav_*/kernel_operator_vec_cmpsel_impl.h, VselImpl / VselIntrinsicsImplPre).
#: On 200, Brcb uses it too; on 300, also ReduceMax/Min/Sum, Compare, GatherMask and some
#: Casts (dav_m200/m300 *_impl.h), but there TMP_UB_OFFSET is the end of the 248 KB UB.
SELECT_SCRATCH_BYTES = 128

#: Unified Buffer bytes at its top that AI Core tilings leave alone: TMP_UB_OFFSET is 8 KB
#: below TOTAL_UB_SIZE on 100, 200 and 220 (the platform data's ub_size) and at it on 300, so
#: buffers below ub_bytes - UB_RESERVED never meet Select's scratch.
UB_RESERVED = 8 * 1024

#: API -> (the __CCE_AICORE__ values that have it, where the headers say so). ``{dir}`` is the
#: implementation folder of the family a message speaks of (``dav_m200`` for 200): each
#: family lacking the API has that header (CANN 8.1.RC1's ascendc/include/basic_api/impl).
API_ARCHS: dict[str, tuple[frozenset[int], str]] = {
    "ToBfloat16": (frozenset({220, 300}), "basic_api/impl/kernel_utils.h: "
                   "#if __CCE_AICORE__ >= 220 && !defined(__DAV_M310__)"),
    "ToFloat": (frozenset({220, 300}), "basic_api/impl/kernel_utils.h: "
                "#if __CCE_AICORE__ >= 220 && !defined(__DAV_M310__)"),
    "Erf": (frozenset({200, 220}), "highlevel_api/lib/math/erf.h: "
            "#if __CCE_AICORE__ == 220 || __CCE_AICORE__ == 200"),
    "Erfc": (frozenset({200, 220}), "highlevel_api/lib/math/erfc.h: "
             "#if __CCE_AICORE__ == 220 || __CCE_AICORE__ == 200"),
    "Tanh": (frozenset({200, 220}), "highlevel_api/lib/math/tanh.h: "
             "#if __CCE_AICORE__ == 200 || __CCE_AICORE__ == 220"),
    "DataCopyPad": (frozenset({220, 300}), "basic_api/impl/{dir}/"
                    "kernel_operator_data_copy_impl.h: DataCopyPadGm2UBImpl and "
                    "DataCopyPadUB2GMImpl are ASCENDC_REPORT_NOT_SUPPORT"),
    "GatherMask": (frozenset({200, 220}), "basic_api/impl/{dir}/"
                   "kernel_operator_vec_gather_mask_impl.h: GatherMaskCal is "
                   "ASCENDC_REPORT_NOT_SUPPORT / unsupported on current device"),
    "SetPadValue": (frozenset({220}), "basic_api/inner_interface/"
                    "inner_kernel_operator_data_copy_intf.cppm: set_mov_pad_val on "
                    "__CCE_AICORE__ 220 (and __DAV_M310__), else ASCENDC_REPORT_NOT_SUPPORT"),
    "DataCacheCleanAndInvalid": (frozenset({200, 220, 300}), "basic_api/interface/"
                                 "kernel_common.h: #if (__CCE_AICORE__ == 220) || "
                                 "(__CCE_AICORE__ == 200) || (__CCE_AICORE__ == 300)"),
    "CompareScalar": (frozenset({200, 220, 300}), "basic_api/impl/{dir}/"
                      "kernel_operator_vec_cmpsel_impl.h: CompareScalar is "
                      "ASCENDC_REPORT_NOT_SUPPORT"),
    "Gather": (frozenset({200, 220, 300}), "basic_api/impl/{dir}/"
               "kernel_operator_vec_gather_impl.h: GatherImpl is ASCENDC_REPORT_NOT_SUPPORT"),
    "Gatherb": (frozenset({220, 300}), "basic_api/impl/{dir}/"
                "kernel_operator_vec_gather_impl.h: GatherbImpl is ASCENDC_REPORT_NOT_SUPPORT"),
}

#: int4b_t in Cast: half -> int4b_t on 200 and 220 (200: CAST_NONE only), int4b_t -> half on
#: 220 only (basic_api/impl/dav_c220 and dav_m200/kernel_operator_vec_vconv_impl.h,
#: CheckCastDatatype; dav_c100 and dav_m300 have no int4b_t conversion).
INT4_CAST_ARCHS = frozenset({200, 220})

#: API -> (the __CCE_AICORE__ values where it takes bfloat16_t, where that is said). A family
#: without the API at all is told so by :data:`API_ARCHS`, not again here.
BF16_API_ARCHS: dict[str, tuple[frozenset[int], str]] = {
    "Cast": (frozenset({220, 300}), "basic_api/impl/{dir}/kernel_operator_vec_vconv_impl.h: "
             "CheckCastDatatype has no bfloat16_t conversion (the 220 and 300 families have)"),
    "DataCopyPad": (frozenset({220}), "basic_api/impl/dav_m300/kernel_operator_data_copy_impl.h: "
                    "copy_gm_to_ubuf_align / copy_ubuf_to_gm_align have no bfloat16_t form "
                    "(tools/tikicpulib/lib/include/stub_fun.h), so the CPU-debug build fails"),
}


def aicore_arch(soc: str) -> AicoreArch:
    """The AI Core family of a SoC version or compute unit; CannArgError when it has no
    Ascend C (Ascend310).

    Example: see the module docstring.
    """
    aic = str(soc_facts(soc)["aic_version"])
    if aic not in _AIC_VERSIONS:
        raise CannArgError(
            f"{soc}: its AI Core ({aic}) has no Ascend C in CANN (no tikicpulib target); "
            "use --engine aicpu")
    return ARCHS[_AIC_VERSIONS[aic]]


def _code(source: str, arch: int) -> str:
    """``source`` as ``arch`` compiles it (``#if __CCE_AICORE__`` branches), without comments
    and string literals."""
    source = re.sub(r"//[^\n]*|/\*.*?\*/", " ", live_code(source, arch), flags=re.S)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', source)


def missing_apis(source: str, soc: str, dtypes: Iterable[str]) -> list[str]:
    """Why a kernel ``source`` run with ``dtypes`` cannot build for ``soc``: one line per
    API it calls that the SoC's Ascend C lacks (empty when it has them all).

    Example: see the module docstring.
    """
    arch = aicore_arch(soc)
    code = _code(source, arch.cce_aicore)
    why = []
    for api, (archs, where) in API_ARCHS.items():
        if arch.cce_aicore not in archs and re.search(rf"\b{api}\s*[<(]", code):
            why.append(f"{api}: not in the Ascend C of {soc} (__CCE_AICORE__ = "
                       f"{arch.cce_aicore}; {where.format(dir=arch.impl_dir)})")
    for api, (archs, where) in BF16_API_ARCHS.items() if "bfloat16" in set(dtypes) else ():
        has_api = arch.cce_aicore in API_ARCHS.get(api, (frozenset({arch.cce_aicore}), ""))[0]
        if has_api and arch.cce_aicore not in archs and re.search(rf"\b{api}\s*[<(]", code):
            why.append(f"{api} of bfloat16_t: not in the Ascend C of {soc} (__CCE_AICORE__ = "
                       f"{arch.cce_aicore}; {where.format(dir=arch.impl_dir)})")
    return why


def api_flags(soc: str) -> dict[str, int]:
    """``{API: 0 or 1}`` for the model's ``OPSDK_HAS_<API>`` macros on ``soc``.

    Example:
        >>> api_flags("Ascend310P3")["Erf"], api_flags("Ascend310P3")["DataCopyPad"]
        (1, 0)
    """
    arch = aicore_arch(soc).cce_aicore
    flags = {api: int(arch in archs) for api, (archs, _) in API_ARCHS.items()}
    flags.update({f"BF16_{api}": int(arch in archs) for api, (archs, _) in BF16_API_ARCHS.items()})
    flags["INT4_Cast"] = int(arch in INT4_CAST_ARCHS)
    return flags
