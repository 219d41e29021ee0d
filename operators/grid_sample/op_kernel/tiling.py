"""Host tiling of GridSample's AI Core kernel (op_kernel/grid_sample.cpp): the output pixels of
each batch image in tiles; with fewer tiles than cores, the channels in groups too; runs of
(tile, channel group) units per core. Read by opsdk for the Ascend C model run
and printed as the op_host TilingFunc of the CANN project."""

from opsdk.ascend.ascendc import Tiling, TilingField

#: The largest image plane (H x W elements) the kernel gathers from: two planes (double
#: buffering) of up to 64 KB of float32 leave a tile of at least 64 pixels on every SoC family.
MAX_PLANE = 16384

# The top 8 KB of the Unified Buffer stay free (TMP_UB_OFFSET, where Select writes its scratch:
# opsdk.ascend.aicore_apis.UB_RESERVED), and 1 KB more. Unified Buffer bytes per pixel of a tile:
# 29 float32 slots (116) + 2 x 2 grid elements + 2 output elements of up to 4 bytes (24) <= 144;
# each plane buffer holds the plane's whole 32-byte blocks and one zero block.
TILING = Tiling(
    "GridSample",
    fields=(TilingField("channels"), TilingField("inH"), TilingField("inW"),
            TilingField("outPixels"), TilingField("tilesPerBatch"), TilingField("groupChannels"),
            TilingField("channelGroups"), TilingField("blockUnits"), TilingField("totalUnits"),
            TilingField("tileLength", "uint32_t"),
            TilingField("tileNum", "uint32_t")),
    dims=(("batch", 0, 0), ("channels", 0, 1), ("inH", 0, 2), ("inW", 0, 3),
          ("outH", 1, 1), ("outW", 1, 2)),
    steps=(
        ("outPixels", "outH * outW"),
        ("planeBytes", "alignup(inH * inW * typeBytes, 32) + 32"),
        ("free", "ubBytes - min2(ubBytes, 9216 + 2 * planeBytes)"),
        ("fitTile", "aligndown(floordiv(free, 144), 64)"),
        ("tileLength", "max2(64, min2(min2(fitTile, 4096), alignup(outPixels, 64)))"),
        ("tilesPerBatch", "ceildiv(outPixels, tileLength)"),
        ("totalTiles", "batch * tilesPerBatch"),
        # fewer tiles than cores: the channels are split into groups as well
        ("wantGroups", "min2(channels, max2(1, ceildiv(coreNum, max2(1, totalTiles))))"),
        ("groupChannels", "max2(1, ceildiv(channels, wantGroups))"),
        ("channelGroups", "max2(1, ceildiv(channels, groupChannels))"),
        ("totalUnits", "totalTiles * channelGroups"),
        ("blockUnits", "ceildiv(totalUnits, coreNum)"),
        ("usedCores", "max2(1, ceildiv(totalUnits, blockUnits))"),
        ("tileNum", "blockUnits"),
    ),
    block_dim="usedCores",
)


def applicable(shapes, attrs):  # type: ignore[no-untyped-def]
    """2-D (4-D x), linear/bilinear or nearest, zeros or border, a plane of <= MAX_PLANE."""
    x = shapes[0]
    if len(x) != 4:
        return (f"it samples 2-D images (x of rank 4); this call's x has shape {list(x)} "
                "(on the NPU such a node runs on AI CPU)")
    if attrs["mode"] not in ("linear", "bilinear", "nearest"):
        return (f"it interpolates linear (bilinear) or nearest; this call has "
                f"mode={attrs['mode']!r} (on the NPU such a node runs on AI CPU)")
    if attrs["padding_mode"] not in ("zeros", "border"):
        return (f"it pads with zeros or border; this call has "
                f"padding_mode={attrs['padding_mode']!r} (on the NPU such a node runs on AI CPU)")
    if x[2] * x[3] > MAX_PLANE:
        return (f"it gathers from one image plane of at most {MAX_PLANE} elements in the "
                f"Unified Buffer; this call's x has {x[2]} x {x[3]} = {x[2] * x[3]} (on the "
                "NPU such a node runs on AI CPU)")
    return None
