"""Host side of FusedConvBnRelu's AI Core kernel (op_kernel/fused_conv_bn_relu.cpp), a Cube
kernel: the call's geometry as tiling facts, the cube tiling under the SoC's L1/L0 limits, and
the data layouts the kernel takes.

The kernel takes its operands in the layouts the Cube reads, as a CANN graph hands a Conv2D
kernel its NC1HWC0 feature map and its FRACTAL_Z filter (TransData around it, the weights
converted once at model build):

* ``x`` (N, C, H, W) becomes ``(N * group, C1, H, W, C0)``: each group's channels in blocks of
  C0 (32 bytes: 16 float16, 8 float32), zero-padded;
* ``w`` and ``b`` become one matrix per group, ``(group, nTiles * baseN, C1 * kH * kW * C0 + C0)``:
  row = output channel, column = (c1, kh, kw, c0) as img2col unfolds the feature map, the
  last C0 columns the bias (column 0) against a column of ones the kernel makes with
  LoadData's padding value. BatchNormalization is already folded into ``w`` and ``b``
  (``opsdk rewrite --fuse conv-bn-relu``), so this is the tiling-time fold of the bias;
* ``y`` comes back as (N, OH * OW, M) (NHWC, Fixpipe's row-major result) and is transposed to
  NCHW.

Tiling (a tile = rowsT x colsT output positions of one image and group, times baseN output
channels; K in steps of kTaps filter taps of one C1): mCap and nCap bound the Cube's M and N
per Mmad, kCap the taps per K step (0: as many as L0A/L0B hold), dbuf 1 double-buffers every
L1/L0 queue. Read by opsdk for the model run and by ``opsdk tune`` (:func:`tiling_for`).
"""

import json
import math
from pathlib import Path

import numpy as np

from opsdk.ascend.ascendc import Tiling, TilingField

#: The kernel runs on the AI Cores' Cube units (coreNum is their count).
CORES = "aic"
#: The tiling's knobs and their defaults (``opsdk tune`` searches them).
KNOBS = {"mCap": 128, "nCap": 128, "kCap": 0, "dbuf": 1}
#: Facts of one call beyond opsdk's standard ones (:func:`call_facts`).
FACTS = ("imgs", "cg", "hIn", "wIn", "mg", "mTotal", "kh", "kw", "oh", "ow", "sh", "sw",
         "dh", "dw", "pt", "pl", "l1Bytes", "l0aBytes", "l0bBytes", "l0cBytes")
_FIELDS = ("imgs", "c1", "hIn", "wIn", "mg", "mTotal", "kh", "kw", "oh", "ow", "sh", "sw", "dh",
           "dw", "pt", "pl", "taps", "kTaps", "baseN", "nTiles", "rowsT", "colsT", "rowTiles",
           "colTiles", "mExt", "wCols", "tiles", "bufs", "a1Bytes", "b1Bytes", "a2Bytes",
           "b2Bytes", "cBytes", "wRes")


def tiling_for(mCap: int = 128, nCap: int = 128, kCap: int = 0, dbuf: int = 1) -> Tiling:
    """The tiling with these knobs (multiples of 16 for mCap and nCap; kCap 0: fit).

    Example:
        >>> tiling_for(64, 64, 0, 0).block_dim
        'max2(1, ceildiv(tiles, tileNum))'
    """
    steps = (
        ("c0", "floordiv(32, typeBytes)"),
        ("c1", "ceildiv(cg, c0)"),
        ("taps", "kh * kw"),
        ("bufs", f"1 + {dbuf}"),
        ("nPad", "alignup(mg, 16)"),
        ("nTiles", f"ceildiv(nPad, {nCap})"),
        ("baseN", "alignup(ceildiv(nPad, nTiles), 16)"),
        ("colTiles", f"ceildiv(ow, {mCap})"),
        ("colsT", "pick(le(colTiles, 1), ow, alignup(ceildiv(ow, colTiles), 16))"),
        ("rowFit", f"max2(1, floordiv({mCap}, colsT))"),
        ("colsIn", "(colsT - 1) * sw + (kw - 1) * dw + 1"),
        ("spanH", "(kh - 1) * dh + 1"),
        # L0A and L0B: bufs K steps of kTaps filter taps (32 bytes of k each)
        ("kTapsL0", "min2(floordiv(l0aBytes, bufs * 32 * alignup(rowFit * colsT, 16)), "
                    "floordiv(l0bBytes, bufs * 32 * baseN))"),
        ("kTaps", f"max2(1, min2(min2(taps, kTapsL0), pick({kCap}, {kCap}, taps)))"),
        # L1: the weights of a tile's output channels stay there when they take at most half
        # of it (wRes: loaded once per block and channel tile), else bufs K steps of them; then
        # bufs feature-map windows (rows x colsIn x 32 bytes, up to 16 positions more than the
        # tile for the 16-row fractals) and the ones tile's 512 bytes
        ("wCols", "c1 * taps * c0 + c0"),
        ("wRes", "le(2 * baseN * wCols * typeBytes, l1Bytes)"),
        ("b1Bytes", "pick(wRes, baseN * wCols * typeBytes, baseN * kTaps * 32)"),
        ("l1Left", "l1Bytes - 512 - pick(wRes, b1Bytes, bufs * b1Bytes)"),
        ("rowsInMax", "floordiv(l1Left, bufs * 32 * colsIn)"),
        ("extraRows", "ceildiv(16, colsT)"),
        ("rowsL1", "pick(le(spanH + extraRows * sh, rowsInMax + sh), "
                   "floordiv(rowsInMax + sh - spanH, sh) - extraRows, 0)"),
        ("rowsCap", "max2(1, min2(oh, min2(rowFit, rowsL1)))"),
        ("rowTiles", "ceildiv(oh, rowsCap)"),
        ("rowsT", "ceildiv(oh, rowTiles)"),
        ("mExt", "alignup(rowsT * colsT, 16)"),
        ("a1Bytes", "((ceildiv(mExt, colsT) - 1) * sh + spanH) * colsIn * 32"),
        ("b2Bytes", "baseN * kTaps * 32"),
        ("a2Bytes", "mExt * kTaps * 32"),
        ("cBytes", "mExt * baseN * 4"),
        ("tiles", "imgs * rowTiles * colTiles * nTiles"),
        ("tileNum", "ceildiv(tiles, max2(1, min2(coreNum, tiles)))"),
    )
    fields = tuple(TilingField(f) for f in _FIELDS) + (TilingField("tileNum", "uint32_t"),)
    return Tiling("FusedConvBnRelu", fields=fields, steps=steps,
                  block_dim="max2(1, ceildiv(tiles, tileNum))", facts=FACTS)


def candidates():  # type: ignore[no-untyped-def]
    """The knob sets ``opsdk tune`` tries, today's first (L1/L0 overflows are dropped)."""
    space = [(128, 128, 1), (256, 64, 1), (64, 128, 1), (128, 64, 1), (64, 64, 1),
             (128, 32, 1), (256, 32, 1), (64, 32, 1), (128, 16, 1), (256, 128, 0),
             (128, 128, 0), (128, 32, 0)]
    return [{"mCap": m, "nCap": n, "kCap": 0, "dbuf": d} for m, n, d in space]


#: The calls ``opsdk tune`` estimates: large convs of the corpus (ResNet-18, YOLOv8n).
TUNE_CALLS = (
    {"shapes": [(1, 64, 56, 56), (64, 64, 3, 3), (64,)], "attrs": {"pads": [1, 1, 1, 1]}},
    {"shapes": [(1, 256, 14, 14), (256, 256, 3, 3), (256,)], "attrs": {"pads": [1, 1, 1, 1]}},
    {"shapes": [(1, 96, 80, 80), (24, 96, 3, 3), (24,)], "attrs": {"pads": [1, 1, 1, 1]}},
)


def _tuned():  # type: ignore[no-untyped-def]
    """The knobs ``opsdk tune`` wrote to the operator's tuning.json, else the defaults."""
    path = Path(__file__).resolve().parent.parent / "tuning.json"
    if path.is_file():
        return {**KNOBS, **json.loads(path.read_text())["knobs"]}
    return dict(KNOBS)


TILING = tiling_for(**_tuned())


def call_facts(shapes, attrs, capacities):  # type: ignore[no-untyped-def]
    """The geometry of one call (input shapes, attributes) and the SoC's L1/L0 bytes."""
    n, c, h, w = shapes[0]
    m, cg, kh, kw = shapes[1]
    g = attrs["group"]
    sh, sw = attrs["strides"]
    dh, dw = attrs["dilations"]
    pt, pl, pb, pr = attrs["pads"]
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (w + pl + pr - dw * (kw - 1) - 1) // sw + 1
    return {"imgs": n * g, "cg": cg, "hIn": h, "wIn": w, "mg": m // g, "mTotal": m, "kh": kh,
            "kw": kw, "oh": oh, "ow": ow, "sh": sh, "sw": sw, "dh": dh, "dw": dw, "pt": pt,
            "pl": pl, **capacities}


def _windows(t):  # type: ignore[no-untyped-def]
    """(l1H, l1W, padTop, padBottom, padLeft, padRight) of every tile's LoadData 3Dv2, as the
    kernel computes them (Window in fused_conv_bn_relu.cpp)."""
    for rt in range(t["rowTiles"]):
        for ct in range(t["colTiles"]):
            rows = -(-t["mExt"] // t["colsT"])  # virtual output rows of the tile
            out = []
            for first, count, step, span, pad, size in (
                    (rt * t["rowsT"], rows, t["sh"], (t["kh"] - 1) * t["dh"] + 1, t["pt"],
                     t["hIn"]),
                    (ct * t["colsT"], t["colsT"], t["sw"], (t["kw"] - 1) * t["dw"] + 1, t["pl"],
                     t["wIn"])):
                lo = first * step - pad
                hi = lo + (count - 1) * step + span
                a, b = max(lo, 0), min(hi, size)
                out += [max(b - a, 0), a - lo, hi - b]
            yield out[0], out[3], out[1], out[2], out[4], out[5]


def tiling_problem(t):  # type: ignore[no-untyped-def]
    """Why the Cube kernel cannot take a call with tiling values ``t`` (None: it can): a
    buffer past its position's capacity, or an img2col window LoadData 3Dv2 cannot describe."""
    for pos, need, have in (
            ("A1/B1 (L1)", t["bufs"] * t["a1Bytes"] + (1 if t["wRes"] else t["bufs"]) * t["b1Bytes"]
             + 512, t["l1Bytes"]),
            ("A2 (L0A)", t["bufs"] * t["a2Bytes"], t["l0aBytes"]),
            ("B2 (L0B)", t["bufs"] * t["b2Bytes"], t["l0bBytes"]),
            ("CO1 (L0C)", t["bufs"] * t["cBytes"], t["l0cBytes"])):
        if need > have:
            return (f"its smallest tile needs {need} bytes of {pos}, which holds {have} (the "
                    f"feature map is {t['wIn']} positions wide with a {t['kh']}x{t['kw']} filter)")
    for l1h, l1w, *pads in _windows(t):
        if max(pads) > 255:
            return (f"a tile's img2col window needs a padding of {max(pads)} rows or columns; "
                    "LoadData 3Dv2's padList holds at most 255 (uint8_t)")
        if l1h < 1 or l1w < 1:
            return "a tile's img2col window holds no input row or column (padding only)"
    return None


def kernel_inputs(arrays, attrs, t):  # type: ignore[no-untyped-def]
    """x, w, b in the layouts the kernel reads (module docstring) and y's buffer."""
    x, w, b = arrays[:3]
    g, c0 = attrs["group"], 32 // x.dtype.itemsize
    n, c, h, wi = x.shape
    cg, mg, taps = c // g, t["mg"], t["kh"] * t["kw"]
    c1 = math.ceil(cg / c0)
    xg = np.zeros((n, g, c1 * c0, h, wi), x.dtype)
    xg[:, :, :cg] = x.reshape(n, g, cg, h, wi)
    x5 = np.ascontiguousarray(xg.reshape(n * g, c1, c0, h, wi).transpose(0, 1, 3, 4, 2))
    rows = t["nTiles"] * t["baseN"]
    wt = np.zeros((g, rows, c1 * c0, t["kh"], t["kw"]), x.dtype)
    wt[:, :mg, :cg] = w.reshape(g, mg, cg, t["kh"], t["kw"])
    wb = np.zeros((g, rows, t["wCols"]), x.dtype)
    wb[:, :, :c1 * taps * c0] = (wt.reshape(g, rows, c1, c0, taps).transpose(0, 1, 2, 4, 3)
                                 .reshape(g, rows, c1 * taps * c0))
    if b is not None:
        wb[:, :mg, c1 * taps * c0] = b.reshape(g, mg)
    y = np.empty((n, t["oh"] * t["ow"], t["mTotal"]), x.dtype)
    return [x5, wb, None, y]


def kernel_outputs(arrays, t):  # type: ignore[no-untyped-def]
    """y (N, OH * OW, M) from the kernel back to NCHW."""
    y = arrays[3]
    n = y.shape[0]
    return [np.ascontiguousarray(y.transpose(0, 2, 1).reshape(n, t["mTotal"], t["oh"], t["ow"]))]
