// opsdk's CPU model of the Ascend C API: Fixpipe's quantPre conversions (docs/ascendc_model.md,
// "The Cube"). The (L0C, GM) dtype pairs and the quantPre each takes are those CANN 8.1.RC1's
// dav_c220 Fixpipe checks (basic_api/impl/dav_c220/kernel_operator_fixpipe_v2_impl.h,
// CheckCommonFixpipeParam and CheckFixpipeL0C2GMParam): float -> float and int32_t -> int32_t
// NoQuant, float -> half F322F16, float -> bfloat16_t F322BF16, int32_t -> half DEQF16 (one scale,
// deqScalar) or VDEQF16 (a scale per output column, a uint64_t tensor in L1 passed as
// cbufWorkspace). A scale is a uint64_t whose low 32 bits hold a float of which the Fixpipe uses the
// top 19 bits (sign, exponent, 10 mantissa bits): CANN's TransQuantParamV2 kernel builds it as
// (bits & 0xFFFFE000) | 1 << 46 (opp/.../trans_quant_param_v2.h), and the model reads it so. The
// code is opsdk's own.
#ifndef OPSDK_ASCENDC_MODEL_CUBE_QUANT_H
#define OPSDK_ASCENDC_MODEL_CUBE_QUANT_H

#include "opsdk_model_core.h"

namespace opsdk_ascendc {

// The float a Fixpipe dequant scale holds: the top 19 bits of the float in its low 32 bits.
inline float DeqScale(uint64_t v) {
    const uint32_t bits = static_cast<uint32_t>(v) & 0xFFFFE000u;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

// One Fixpipe's conversion of L0C values (SrcT) to the GM type (DstT): its quantPre checked
// against the pair, then each value converted, dequantised by its column's scale, ReLU'd.
template <typename DstT, typename SrcT> class FixQuant {
public:
    FixQuant(const AscendC::FixpipeParamsV220& p, const uint64_t* deq) : deq_(deq), scale_(DeqScale(p.deqScalar)) {
        const QuantMode_t q = p.quantPre;
        bool ok = false;
        if constexpr (std::is_same_v<DstT, SrcT>) {
            ok = q == NoQuant;
        } else if constexpr (std::is_same_v<SrcT, float> && std::is_same_v<DstT, half>) {
            ok = q == F322F16;
        } else if constexpr (std::is_same_v<SrcT, float> && std::is_same_v<DstT, bfloat16_t>) {
            ok = q == F322BF16;
        } else if constexpr (std::is_same_v<SrcT, int32_t> && std::is_same_v<DstT, half>) {
            ok = q == DEQF16 || q == VDEQF16;
            vector_ = q == VDEQF16;
        }
        if (!ok) {
            Fail("Fixpipe", std::string("quantPre ") + S(uint64_t(q)) + " from " + TypeName<SrcT>() + " to " +
                                TypeName<DstT>() + ": opsdk models NoQuant (float -> float, int32_t -> int32_t), "
                                "F322F16 (float -> half), F322BF16 (float -> bfloat16_t) and DEQF16 / VDEQF16 "
                                "(int32_t -> half), as CANN 8.1.RC1's dav_c220 Fixpipe pairs them; the int8 "
                                "quantisations (QF322B8_PRE, REQ8, ...) are not modelled");
        }
        if (vector_ && deq_ == nullptr) {
            Fail("Fixpipe", "quantPre VDEQF16 takes a scale per output column from L1: pass the uint64_t tensor of "
                            "scales as cbufWorkspace, Fixpipe(dstGlobal, srcLocal, cbufWorkspace, params); for one "
                            "scale use DEQF16 and deqScalar");
        }
        if (!vector_ && deq_ != nullptr) {
            Fail("Fixpipe", "a cbufWorkspace of scales is passed but quantPre is " + S(uint64_t(q)) +
                                ", which does not read it: use VDEQF16 for a scale per column");
        }
        if constexpr (std::is_same_v<SrcT, int32_t> && std::is_same_v<DstT, half>) {
            if (!vector_ && !(std::fabs(scale_) > 0.0f && std::isfinite(scale_))) {
                Fail("Fixpipe", "DEQF16 with deqScalar " + S(p.deqScalar) + ": its scale (the top 19 bits of the "
                                "float in the low 32 bits) is " + std::to_string(scale_) + "; build deqScalar from "
                                "the float scale's bits, as CANN's TransQuantParam does");
            }
        }
    }

    DstT operator()(SrcT v, uint64_t column, bool relu) const {
        if constexpr (std::is_same_v<SrcT, int32_t> && std::is_same_v<DstT, half>) {
            const float s = vector_ ? DeqScale(deq_[column]) : scale_;
            float x = static_cast<float>(v) * s;
            if (relu && x < 0.0f) x = 0.0f;
            return FromF<half>(x);
        } else {
            if (relu && v < SrcT(0)) v = SrcT(0);
            if constexpr (std::is_same_v<DstT, SrcT>) {
                return v;
            } else {
                return FromF<DstT>(static_cast<float>(v));
            }
        }
    }

private:
    const uint64_t* deq_;
    float scale_;
    bool vector_ = false;
};

}  // namespace opsdk_ascendc

#endif  // OPSDK_ASCENDC_MODEL_CUBE_QUANT_H
