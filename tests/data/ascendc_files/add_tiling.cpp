// The host tiling of add_tiled.cpp, as plain C++: the struct the kernel takes by value and the
// functions that fill it (both forms opsdk ascendc run --host-tiling takes).
#include <cstdint>

struct AddTiling {
    uint32_t blockLength;
    uint32_t tileLength;
    float scale;
};

AddTiling MakeTiling()
{
    return AddTiling{512, 128, 0.5f};
}

void FillTiling(AddTiling* tiling)
{
    tiling->blockLength = 512;
    tiling->tileLength = 256;
    tiling->scale = -2.0f;
}

int NotATiling(int n) { return n; }
