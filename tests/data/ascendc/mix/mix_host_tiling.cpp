// The host tiling function of matmul_leakyrelu.cpp (plain C++, as opsdk ascendc run's
// --host-tiling takes it): the tiling, and the user workspace it needs, one 32 x 32 float tile a block.
#include "mix_tiling.h"

void MakeTiling(MixTiling* tiling, uint64_t* workspace)
{
    tiling->blockDim = 2;
    tiling->nTiles = 2;
    tiling->alpha = 0.125f;
    *workspace = uint64_t(tiling->blockDim) * 32 * 32 * sizeof(float);
}
