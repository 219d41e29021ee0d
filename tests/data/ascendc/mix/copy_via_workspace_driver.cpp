// Launches copy_via_workspace.cpp through the model's runner as opsdk's own drivers do: the
// kernel's workspace argument is the one the launch allocates (16 MiB system part + 4 KiB user).
#include "kernel_operator.h"
#include "kernel.cpp"
#include "opsdk_model_launch.h"

extern "C" int launch(uint8_t** gm, const uint64_t* bytes, const char** names, char* err) {
    return opsdk_ascendc::Run(
        "copy_via_workspace", [](uint8_t** g, uint8_t* ws, uint8_t* t) { copy_via_workspace(g[0], g[1], ws, t); },
        gm, bytes, names, 2, nullptr, 2, 196608, "ascend910b", 1, 1, err, 4096, nullptr, nullptr, 2 * 512 * 4);
}
