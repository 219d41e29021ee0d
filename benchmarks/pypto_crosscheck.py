"""Cross-check of the Ascend C model's cycle estimate against pypto's cost model (issue 30).

pypto (PyPI) runs its own cost-model simulation of an A2/A3 device (Ascend910B family, 24
cube + 48 vector cores) on the CPU, without CANN or an NPU. It is an optional extra under its
vendor's own licence (see its package metadata): never a requirement of opsdk, never installed
by its CI. Without it this script says so and exits 0.

Both models estimate the same elementwise kernel, ThresholdedRelu (y = x if x > alpha else 0,
float32, 1M elements by default):

* opsdk: ``estimate_op("ThresholdedRelu")``, the kernel in operators/ on opsdk's Ascend C
  model; its ``cycles`` are the busiest vector core's blocks back to back (no launch overhead).
* pypto: ``y[:] = pypto.where(pypto.gt(x, alpha), x, 0.0)`` in a ``pypto.frontend.jit``
  kernel with ``run_mode=RunMode.SIM`` (the cost-model run), on a 2D view of the same
  elements (pypto's fast pipe model sizes a tile from its last two dimensions, so a 1D tile
  is costed as one element). Its figures are read from the simulation's report files:
  ``aicore_span`` (first to last vector-core task: pypto's "AICore End-to-End Time", which
  includes the AICPU's dispatch of each task), ``busiest_core`` (the busiest vector core's
  task cycles back to back, the like of opsdk's figure) and ``total`` (the whole device run,
  AICPU start-up and completion included).

The ratio is pypto / opsdk, whatever it is.

    python benchmarks/pypto_crosscheck.py [--json] [--shape 1024x1024] [--tile 16x1024]
        [--alpha 0.5] [--soc Ascend910B1] [--keep DIR]
"""

# No ``from __future__ import annotations``: pypto.frontend.jit reads the kernel's tensor
# annotations as objects.
import argparse
import contextlib
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

NOT_INSTALLED = "pypto not installed: pip install pypto (optional; its vendor's own licence)"
OP = "ThresholdedRelu"
# pypto's own cycles-to-microseconds conversion: its simulation runs its swimlane script with
# --time_convert_denominator=1800 (MHz) to print "AICore End-to-End Time".
PYPTO_MHZ = 1800.0


def _dims(text: str) -> tuple[int, int]:
    parts = [int(p) for p in text.lower().split("x")]
    if len(parts) != 2 or min(parts) <= 0:
        raise argparse.ArgumentTypeError(f"expected ROWSxCOLS, got {text!r}")
    return parts[0], parts[1]


def opsdk_estimate(elements: int, alpha: float, soc: str) -> dict[str, Any]:
    from opsdk.bench._model import estimate_op

    est = estimate_op(OP, shapes=[str(elements)], attrs={"alpha": alpha}, soc=soc)
    return {
        "cycles": float(est.cycles),
        "microseconds": float(est.microseconds),
        "freq_mhz": float(est.costs.freq_mhz),
        "bound": est.bound,
        "cores": est.cores,
        "block_dim": est.block_dim,
        "busy_cycles": est.busy(),
    }


@contextlib.contextmanager
def _quiet(log: Path):
    """Send file descriptors 1 and 2 (pypto's C++ logging, its report scripts) to ``log``."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log, "ab") as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def _report_int(text: str, key: str) -> float | None:
    m = re.search(re.escape(key) + r"\.*:\s*([\d.]+)", text)
    return float(m.group(1)) if m else None


def _read_simulation(out: Path) -> dict[str, Any]:
    reports = sorted(out.glob("*/CostModelSimulationOutput/_simulate.stat.report.txt"),
                     key=lambda p: p.stat().st_mtime)
    if not reports:
        raise RuntimeError(f"pypto wrote no cost-model report under {out}")
    sim = reports[-1].parent
    report = reports[-1].read_text()
    lanes = json.loads((sim / "_simulate.swim.json").read_text())
    aiv = [c for c in lanes if c.get("coreType") == "AIV" and c.get("tasks")]
    if not aiv:
        raise RuntimeError(f"pypto's simulation ran no vector-core task ({sim})")
    tasks = [t for c in aiv for t in c["tasks"]]
    span = max(t["execEnd"] for t in tasks) - min(t["execStart"] for t in tasks)
    per_core = {c["blockIdx"]: sum(t["execEnd"] - t["execStart"] for t in c["tasks"])
                for c in aiv}
    busiest = max(per_core, key=per_core.__getitem__)
    pipes: dict[str, float] = {}
    for c in json.loads((sim / "_simulate.pipe.swim.json").read_text()):
        if c.get("blockIdx") == busiest:
            for pipe, ops in (c.get("pipeLogs") or {}).items():
                pipes[pipe] = float(sum(o["execEnd"] - o["execStart"] for o in ops))
    total = _report_int(report, "Total Cycles")
    return {
        "total_cycles": total,
        "aicore_span_cycles": float(span),
        "busiest_core_cycles": float(per_core[busiest]),
        "busiest_core_pipe_busy": pipes,
        "tasks": _report_int(report, "Total Submit Tasks"),
        "task_cycles": _report_int(report, "Average Task Cycles"),
        "vector_cores_used": len(aiv),
        "output_dir": str(sim),
    }


def pypto_estimate(shape: tuple[int, int], tile: tuple[int, int], alpha: float, soc: str,
                   workdir: Path) -> dict[str, Any]:
    # Keep pypto's run data, logs and kernel output inside workdir (else ~/.pypto, ~/ascend/log
    # and ./output); set before pypto's libraries load.
    for var, sub in (("PYPTO_HOME", "home"), ("ASCEND_PROCESS_LOG_PATH", "log"),
                     ("ASCEND_WORK_PATH", "work"), ("TILE_FWK_OUTPUT_DIR", "output")):
        os.environ[var] = str(workdir / sub)
    log = workdir / "pypto.log"
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        with _quiet(log):
            import pypto
            import torch

            platform = "ASCEND_" + soc[len("Ascend"):] if soc.startswith("Ascend") else soc
            pypto.set_global_config("platform.device_platform", platform)
            rows, cols = shape
            trows, tcols = tile

            @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
            def thresholded_relu(
                x: pypto.Tensor((rows, cols), pypto.DT_FP32),
                y: pypto.Tensor((rows, cols), pypto.DT_FP32),
            ):
                pypto.set_vec_tile_shapes(trows, tcols)
                y[:] = pypto.where(pypto.gt(x, alpha), x, 0.0)

            x = torch.randn(rows, cols, dtype=torch.float32)
            thresholded_relu(x, torch.empty_like(x))
            version = getattr(pypto, "__version__", None)
    except Exception as exc:  # pypto's errors are plain RuntimeErrors with its log behind
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        raise RuntimeError(f"pypto's cost-model run failed: {exc}\n{tail}") from exc
    finally:
        os.chdir(cwd)
    sim = _read_simulation(workdir / "output")
    sim.update({
        "version": version,
        "device_platform": platform,
        "model": "pypto cost model, RunMode.SIM, deviceArch=A2A3 (24 AIC + 48 AIV)",
        "freq_mhz": PYPTO_MHZ,
        "shape": [rows, cols],
        "tile": [trows, tcols],
    })
    for key in ("total", "aicore_span", "busiest_core"):
        cyc = sim[f"{key}_cycles"]
        sim[f"{key}_microseconds"] = cyc / PYPTO_MHZ if cyc is not None else None
    return sim


def _pypto_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("pypto")
    except Exception:
        return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--shape", type=_dims, default=(1024, 1024),
                    help="pypto's 2D view of the elements (opsdk gets their product, 1D)")
    ap.add_argument("--tile", type=_dims, default=(16, 1024),
                    help="pypto's vector tile (set_vec_tile_shapes); 16x1024 = 64 KiB")
    ap.add_argument("--alpha", type=float, default=0.5)
    ap.add_argument("--soc", default="Ascend910B1",
                    help="opsdk's SoC; pypto models the A2/A3 family whatever its name")
    ap.add_argument("--keep", type=Path, help="keep pypto's run files (traces) in this folder")
    args = ap.parse_args(argv)

    if importlib.util.find_spec("pypto") is None:
        print(NOT_INSTALLED)
        return 0

    elements = args.shape[0] * args.shape[1]
    ours = opsdk_estimate(elements, args.alpha, args.soc)
    workdir = Path(tempfile.mkdtemp(prefix="pypto_crosscheck_"))
    try:
        theirs = pypto_estimate(args.shape, args.tile, args.alpha, args.soc, workdir)
        theirs["version"] = theirs["version"] or _pypto_version()
        if args.keep:
            shutil.copytree(workdir, args.keep, dirs_exist_ok=True)
            theirs["output_dir"] = str(args.keep / Path(theirs["output_dir"]).relative_to(workdir))
        else:
            theirs.pop("output_dir")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    ratios = {
        key: (theirs[f"{key}_cycles"] / ours["cycles"]
              if theirs[f"{key}_cycles"] and ours["cycles"] else None)
        for key in ("aicore_span", "busiest_core", "total")
    }
    ratios["aicore_span_microseconds"] = (theirs["aicore_span_microseconds"]
                                          / ours["microseconds"])
    result = {
        "op": OP,
        "dtype": "float32",
        "elements": elements,
        "alpha": args.alpha,
        "soc": args.soc,
        "label": "two models' estimates, neither an NPU time",
        "opsdk": ours,
        "pypto": theirs,
        "ratio_pypto_over_opsdk": ratios,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{OP}, float32, {elements} elements, alpha={args.alpha}; opsdk on {args.soc}, "
          f"pypto {theirs['version']} on A2/A3 ({theirs['device_platform']}), "
          f"{args.shape[0]}x{args.shape[1]} in {args.tile[0]}x{args.tile[1]} tiles "
          f"({theirs['tasks']:.0f} tasks)")
    print(f"  opsdk model            {ours['cycles']:9.0f} cycles {ours['microseconds']:8.2f} us"
          f" at {ours['freq_mhz']:.0f} MHz ({ours['bound']}, {ours['cores']} cores)")
    for key, what in (("aicore_span", "AICore end-to-end"), ("busiest_core", "busiest core"),
                      ("total", "whole device run")):
        cyc, us = theirs[f"{key}_cycles"], theirs[f"{key}_microseconds"]
        print(f"  pypto {what:<17}{cyc:9.0f} cycles {us:8.2f} us at {PYPTO_MHZ:.0f} MHz"
              f"   ratio pypto/opsdk {ratios[key]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
