// opsdk's CPU model of the Ascend C API, host side: the first error a host tiling function's
// calls into the model's tiling APIs met (the real APIs log it and return -1; opsdk also reports
// it as the run's error, naming the API, the value and the limit).
#ifndef OPSDK_HOST_ERRORS_H
#define OPSDK_HOST_ERRORS_H

#include <cstdio>
#include <string>

namespace opsdk_host {

// Internal linkage: each host tiling library keeps its own (two loaded into one process do not
// share it).
static inline std::string& FirstTilingError() {
    static std::string error;
    return error;
}

// Record (the first) and print an error of `api`; the caller returns -1 as the real API does.
static inline void TilingError(const std::string& api, const std::string& what) {
    const std::string text = api + ": " + what;
    if (FirstTilingError().empty()) FirstTilingError() = text;
    std::fprintf(stderr, "%s\n", text.c_str());
}

}  // namespace opsdk_host

#endif  // OPSDK_HOST_ERRORS_H
