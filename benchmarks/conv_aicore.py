"""FusedConvBnRelu's AI Core (Cube) kernel on opsdk's Ascend C model, on the corpus conv shapes.

Every geometry of ``benchmarks/conv_corpus.py`` (as recorded in
``benchmarks/results/conv_corpus-quiet-1t.json``, so no model download is needed) runs on the
model with the SoC's costs: outputs checked against the NumPy reference, the estimate's time,
bound and the Cube (M pipe) busy share of the busiest core. Estimates from opsdk's model, not
NPU times.

    python benchmarks/conv_aicore.py [--soc Ascend910B3] [--dtype float16] [--only SUBSTR]
                                     [--json out.json] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "benchmarks" / "results" / "conv_corpus-quiet-1t.json"
FOLDER = ROOT / "operators" / "fused_conv_bn_relu"


def corpus_shapes() -> list[dict[str, Any]]:
    """The corpus geometries: ``{"label", "n", "c", "h", "w", "m", "kh", "kw", "attrs"}``."""
    out = []
    for row in json.loads(CORPUS.read_text()):
        s = row["shape"]
        attrs = {"strides": s["strides"], "pads": s["pads"], "dilations": s["dilations"],
                 "group": s["group"]}
        out.append({"label": row["label"], **{k: s[k] for k in "nchwm"}, "kh": s["kh"],
                    "kw": s["kw"], "attrs": attrs})
    return out


def inputs(shape: dict[str, Any], dtype: str, seed: int = 0) -> list[np.ndarray]:
    """x, w, b of ``shape`` in [-1, 1]."""
    rng = np.random.default_rng(seed)
    g = shape["attrs"]["group"]
    x = rng.uniform(-1, 1, (shape["n"], shape["c"], shape["h"], shape["w"])).astype(dtype)
    w = rng.uniform(-1, 1, (shape["m"], shape["c"] // g, shape["kh"], shape["kw"])).astype(dtype)
    return [x, w, rng.uniform(-1, 1, shape["m"]).astype(dtype)]


def error_bound(x: np.ndarray, w: np.ndarray, b: np.ndarray, attrs: dict[str, Any],
                ref: np.ndarray) -> np.ndarray:
    """Per-output bound on |kernel - reference|: float32 accumulation of K products
    (K * 2^-23 * sum |w x| + |b|) plus one ulp of T: the kernel and the reference (float64,
    then T) each round once."""
    import sys as _sys

    _sys.path.insert(0, str(FOLDER))
    from reference import reference

    mag = reference(np.abs(x).astype(np.float64), np.abs(w).astype(np.float64),
                    np.abs(b).astype(np.float64), **attrs)
    k = w.shape[1] * w.shape[2] * w.shape[3] + 1
    eps = float(np.finfo(x.dtype).eps)
    return np.asarray(k * 2.0 ** -23 * mag + eps * np.abs(ref) + 1e-30)


def run_one(op: Any, shape: dict[str, Any], dtype: str) -> dict[str, Any]:
    """One shape: {"label", "status" (pass/fail/refused), "why", "us", "bound", "cube", ...}."""
    from opsdk.errors import DeviceUnavailable

    sys.path.insert(0, str(FOLDER))
    from reference import reference

    x, w, b = inputs(shape, dtype)
    row: dict[str, Any] = {"label": shape["label"], "dtype": dtype}
    try:
        est = op.estimate([x, w, b], shape["attrs"])
    except DeviceUnavailable as e:
        return {**row, "status": "refused", "why": str(e)}
    ref = reference(x, w, b, **shape["attrs"]).astype(np.float64)
    err = np.abs(est.outputs[0].astype(np.float64) - ref)
    bad = int(np.count_nonzero(~(err <= error_bound(x, w, b, shape["attrs"], ref))))
    util = est.utilisation()
    return {**row, "status": "pass" if bad == 0 else "fail", "bad": bad,
            "max_err": float(err.max()), "us": est.microseconds, "bound": est.bound,
            "cube": util.get("M", 0.0), "mte1": util.get("MTE1", 0.0),
            "mte2": util.get("MTE2", 0.0), "fix": util.get("FIX", 0.0),
            "blockDim": est.block_dim,
            "macs": int(np.prod(ref.shape) * w.shape[1] * w.shape[2] * w.shape[3])}


#: The "large" corpus shapes of docs/benchmarks.md: at least this many multiply-adds.
LARGE_MACS = 50_000_000


def markdown(rows: list[dict[str, Any]], soc: str) -> str:
    """The table of docs/benchmarks.md (the large shapes) and a summary of every row."""
    lines = ["| SoC | shape | dtype | MACs (M) | us (estimate) | bound | M (Cube) | MTE1 | MTE2 | "
             "FIX | blockDim |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: -r.get("macs", 0)):
        if r["status"] != "pass" or r["macs"] < LARGE_MACS:
            continue
        lines.append(f"| {soc} | {r['label']} | {r['dtype']} | {r['macs'] / 1e6:.0f} | "
                     f"{r['us']:.1f} | {r['bound']} | {r['cube']:.0%} | {r['mte1']:.0%} | "
                     f"{r['mte2']:.0%} | {r['fix']:.0%} | {r['blockDim']} |")
    passed = [r for r in rows if r["status"] == "pass"]
    bounds: dict[str, int] = {}
    for r in passed:
        bounds[r["bound"]] = bounds.get(r["bound"], 0) + 1
    cube = sorted(r["cube"] for r in passed)
    lines.append("")
    lines.append(f"{len(passed)} of {len(rows)} shapes pass, "
                 f"{sum(r['status'] == 'refused' for r in rows)} refused, "
                 f"{sum(r['status'] == 'fail' for r in rows)} fail; bounds: "
                 + ", ".join(f"{k} {v}" for k, v in sorted(bounds.items()))
                 + (f"; Cube busy median {cube[len(cube) // 2]:.0%}, max {cube[-1]:.0%}"
                    if cube else ""))
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--soc", default="Ascend910B3", help="SoC whose costs apply")
    ap.add_argument("--dtype", default="float16", help="float16 or float32")
    ap.add_argument("--only", default="", help="shapes whose label contains this")
    ap.add_argument("--json", default="", help="write the rows to this file")
    ap.add_argument("--markdown", action="store_true", help="print the docs table")
    ap.add_argument("--from-json", default="", help="print the table of rows written before")
    args = ap.parse_args()
    from opsdk.ascend.ascendc.model import AscendcModel

    if args.from_json:
        print(markdown(json.loads(Path(args.from_json).read_text()), args.soc))
        return 0
    op = AscendcModel(FOLDER, soc=args.soc)
    rows = []
    for shape in corpus_shapes():
        if args.only in shape["label"]:
            rows.append(run_one(op, shape, args.dtype))
            r = rows[-1]
            print(r["label"], r["status"], f"{r.get('us', 0):.1f} us", r.get("bound", ""),
                  f"cube {r.get('cube', 0):.0%}", r.get("why", ""), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    if args.markdown:
        print(markdown(rows, args.soc))
    return 0 if all(r["status"] != "fail" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
