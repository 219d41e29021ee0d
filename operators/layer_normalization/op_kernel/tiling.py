"""Host tiling of LayerNormalization's AI Core kernel (op_kernel/layer_normalization.cpp):
whole rows per core, each row walked in tiles of up to what the Unified Buffer holds. Read by
opsdk for the Ascend C model run and printed as the op_host TilingFunc of the CANN project."""

import math

from opsdk.ascend.ascendc import Tiling, TilingField

# The top 8 KB of the Unified Buffer stay free (TMP_UB_OFFSET, where Select and, on some SoC
# families, reductions write scratch: opsdk.ascend.aicore_apis.UB_RESERVED), and 1 KB for
# the small buffers. Unified Buffer bytes per element of a tile:
# 3 queues x 2 buffers of T, 3 float32 temporaries.
TILING = Tiling(
    "LayerNormalization",
    fields=(TilingField("rowLength"), TilingField("blockRows"), TilingField("lastBlockRows"),
            TilingField("tileLength", "uint32_t"), TilingField("tileNum", "uint32_t")),
    steps=(
        ("rowLength", "lastDim"),
        ("rows", "floordiv(totalLength, lastDim)"),
        ("blockRows", "ceildiv(rows, coreNum)"),
        ("usedCores", "max2(1, ceildiv(rows, blockRows))"),
        ("lastBlockRows", "rows - (usedCores - 1) * blockRows"),
        ("fitTile", "aligndown(floordiv(ubBytes - 9216, 6 * typeBytes + 12), 64)"),
        ("tileLength", "max2(64, min2(fitTile, alignup(rowLength, 64)))"),
        ("tileNum", "ceildiv(rowLength, tileLength)"),
    ),
    block_dim="usedCores",
)


def applicable(shapes, attrs):  # type: ignore[no-untyped-def]
    """Last axis only, with Scale and B holding exactly that axis's elements."""
    x = shapes[0]
    rank = len(x)
    if attrs["axis"] % rank != rank - 1:
        return (f"it normalises over the last axis only; this call has axis={attrs['axis']} "
                f"of rank {rank} (on the NPU such a node runs on AI CPU)")
    for name, shape in zip(("Scale", "B"), shapes[1:]):
        if shape is not None and math.prod(shape) != x[-1]:
            return (f"input {name!r} of shape {list(shape)} must hold X.shape[-1] = {x[-1]} "
                    "elements (broadcast it in the graph first)")
    return None
