// The tiling of matmul_leakyrelu.cpp, shared by the kernel and its host tiling function.
#ifndef MIX_TILING_H
#define MIX_TILING_H
#include <cstdint>

struct MixTiling {
    uint32_t blockDim;   // blocks: each computes 32 rows of C
    uint32_t nTiles;     // column tiles of 32, computed one after the other through one workspace tile
    float alpha;         // LeakyRelu's negative slope
};

#endif  // MIX_TILING_H
