// tiling/platform/platform_ascendc.h of opsdk's CPU model of the Ascend C API, host side: the
// platform a host tiling function asks for its SoC's buffers and cores. The figures are the
// SoC's of the run (opsdk's SoC table, opsdk/ascend/data/socs.json, from the platform data's
// [AICoreSpec] and [SoCInfo]); the host build passes them as macros. Asking for another SoC is an
// error naming both.
#ifndef OPSDK_HOST_PLATFORM_ASCENDC_H
#define OPSDK_HOST_PLATFORM_ASCENDC_H

#include <cstdint>
#include <cstring>
#include <string>

#include "../../opsdk_host_errors.h"

#ifndef OPSDK_SOC_VERSION
#define OPSDK_SOC_VERSION "Ascend910B1"
#endif
#ifndef OPSDK_L1_BYTES
#define OPSDK_L1_BYTES 524288
#endif
#ifndef OPSDK_L0A_BYTES
#define OPSDK_L0A_BYTES 65536
#endif
#ifndef OPSDK_L0B_BYTES
#define OPSDK_L0B_BYTES 65536
#endif
#ifndef OPSDK_L0C_BYTES
#define OPSDK_L0C_BYTES 131072
#endif
#ifndef OPSDK_BT_BYTES
#define OPSDK_BT_BYTES 1024
#endif
#ifndef OPSDK_HOST_UB_BYTES
#define OPSDK_HOST_UB_BYTES 196608
#endif
#ifndef OPSDK_HOST_AIC_CORES
#define OPSDK_HOST_AIC_CORES 24
#endif
#ifndef OPSDK_HOST_AIV_CORES
#define OPSDK_HOST_AIV_CORES 48
#endif
#ifndef OPSDK_HOST_SYS_WORKSPACE
#define OPSDK_HOST_SYS_WORKSPACE (16 * 1024 * 1024)
#endif

namespace platform_ascendc {

enum class CoreMemType { L0_A = 0, L0_B = 1, L0_C = 2, L1 = 3, L2 = 4, UB = 5, HBM = 6, RESERVED };
enum class SocVersion { ASCEND910 = 0, ASCEND910B, ASCEND310P, ASCEND310B, RESERVED_VERSION = 99999 };

class PlatformAscendC {
public:
    explicit PlatformAscendC(const char* soc) : soc_(soc) {}
    uint32_t GetCoreNum() const { return OPSDK_HOST_AIV_CORES > 0 ? OPSDK_HOST_AIV_CORES : OPSDK_HOST_AIC_CORES; }
    uint32_t GetCoreNumAic() const { return OPSDK_HOST_AIC_CORES; }
    uint32_t GetCoreNumAiv() const { return OPSDK_HOST_AIV_CORES; }
    uint32_t GetCoreNumVector() const { return 0; }
    uint32_t GetLibApiWorkSpaceSize() const { return OPSDK_HOST_SYS_WORKSPACE; }
    void GetCoreMemSize(const CoreMemType& memType, uint64_t& size) const {
        switch (memType) {
            case CoreMemType::L0_A: size = OPSDK_L0A_BYTES; break;
            case CoreMemType::L0_B: size = OPSDK_L0B_BYTES; break;
            case CoreMemType::L0_C: size = OPSDK_L0C_BYTES; break;
            case CoreMemType::L1: size = OPSDK_L1_BYTES; break;
            case CoreMemType::UB: size = OPSDK_HOST_UB_BYTES; break;
            default: size = 0;
        }
    }
    SocVersion GetSocVersion() const {
        const std::string s = soc_;
        if (s.rfind("Ascend910B", 0) == 0 || s.rfind("Ascend910_93", 0) == 0) return SocVersion::ASCEND910B;
        if (s.rfind("Ascend310P", 0) == 0) return SocVersion::ASCEND310P;
        if (s.rfind("Ascend310B", 0) == 0) return SocVersion::ASCEND310B;
        if (s.rfind("Ascend910", 0) == 0) return SocVersion::ASCEND910;
        return SocVersion::RESERVED_VERSION;
    }
    const char* SocName() const { return soc_; }

private:
    const char* soc_;
};

class PlatformAscendCManager {
public:
    static PlatformAscendC* GetInstance() { return GetInstance(OPSDK_SOC_VERSION); }
    // The run's SoC; another name is an error (the model's host build knows one SoC's figures).
    static PlatformAscendC* GetInstance(const char* customSocVersion) {
        static PlatformAscendC platform(OPSDK_SOC_VERSION);
        if (customSocVersion != nullptr && std::strcmp(customSocVersion, OPSDK_SOC_VERSION) != 0) {
            opsdk_host::TilingError("PlatformAscendCManager::GetInstance",
                                    std::string("socVersion is ") + customSocVersion + ", but the run is for " +
                                        OPSDK_SOC_VERSION + "; pass the SoC of the run (--soc)");
        }
        return &platform;
    }
};

}  // namespace platform_ascendc

#endif  // OPSDK_HOST_PLATFORM_ASCENDC_H
