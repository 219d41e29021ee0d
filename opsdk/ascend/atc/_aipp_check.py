"""Does AIPP compute what the CPU step computes, within the float16 AIPP works in?

On the same synthetic images, the AIPP emulator (:mod:`._aipp_emulate`, float16 as AIPP
hands it to the model) and :func:`opsdk.preprocess.preprocess_cpu` are compared stage by
stage, each with the standard its arithmetic allows:

* the uint8 stages (crop, colour, resize) in LSB: equal within 1 LSB, plus the drift of
  the scaler's truncated step (``i * 2**-16`` pixel at output index ``i``, so one more LSB
  per 256 output pixels);
* the normalisation (AIPP's DTC) and padding against the declaration's exact
  ``(x - mean) * var_reci`` of the same uint8 input, within the error budget of AIPP's
  float16 steps: ``min_chn`` and ``var_reci_chn`` rounded to float16, the subtraction
  and the product rounded, each half a float16 ulp, propagated to the output.

A value beyond its standard is a real difference, reported with the stage, the pixel and
the fix. The model then runs under ONNX Runtime (through :class:`opsdk.onnx.Session`) on
both inputs and the largest difference of each output is noted: on the chip the model
takes AIPP's float16, so a model's own sensitivity to float16 input (a ReLU's outputs near
0 under a relative standard) is a fact to know, not a preprocessing error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...preprocess import Preprocess, preprocess_cpu, synthetic_image
from ._aipp_emulate import emulate_aipp
from ._aipp_rules import static_fields

__all__ = ["AippCheck", "check_aipp_model"]

_NP = {1: np.float32, 10: np.float16}
_F16_MAX = 65504.0


@dataclass
class AippCheck:
    """What :func:`check_aipp_model` found."""

    #: largest difference (LSB) between the emulator's and the CPU step's uint8 stages
    stage_lsb: int
    #: one line per output: the largest difference of the model's outputs (informational)
    outputs: list[str] = field(default_factory=list)
    passed: bool = True
    #: largest error of AIPP's normalisation, and of its budget, in float16 ulps
    dtc_ulps: float = 0.0
    budget_ulps: float = 0.0
    #: the first real difference: the stage, the pixel and the fix
    problem: str = ""

    def summary(self) -> str:
        """One line for the plan's notes (or, with a real difference, its blocking error)."""
        if not self.passed:
            return f"AIPP emulator vs CPU preprocessing DIFFER: {self.problem}"
        return (f"AIPP emulator vs CPU preprocessing: equal within float16 (uint8 stages within "
                f"{self.stage_lsb} LSB; normalisation within {self.dtc_ulps:.2g} float16 ulp "
                f"of the declared (x - mean) * var_reci, budget {self.budget_ulps:.2g}); "
                f"model outputs on the two inputs (informational: the chip feeds it float16): "
                f"{'; '.join(self.outputs)}")


def _feeds(model: Any, name: str, x: np.ndarray) -> dict[str, np.ndarray]:
    inits = {t.name for t in model.graph.initializer}
    feeds = {name: x}
    for vi in model.graph.input:
        if vi.name in inits or vi.name == name:
            continue
        dims = [d.dim_value if d.dim_value > 0 else 1 for d in vi.type.tensor_type.shape.dim]
        feeds[vi.name] = np.zeros(dims, _NP.get(vi.type.tensor_type.elem_type, np.float32))
    return feeds


def _ulp16(v: Any) -> np.ndarray:
    """The float16 spacing at each ``|v|`` (inf beyond float16's range), as float64."""
    with np.errstate(over="ignore", invalid="ignore"):
        a = np.abs(np.asarray(v, np.float64)).astype(np.float16)
        return np.where(np.isfinite(a), np.spacing(a).astype(np.float64), np.inf)


_STAGE_FIX = {
    "crop": "check format, crop.start and crop.size (the cfg's channel swaps, which come "
            "first, load_start_pos and crop_size)",
    "color": "check color_standard and channels (the cfg's CSC matrix, biases and swaps)",
    "resize": "resize on the host with the CPU step instead of AIPP (drop [resize])",
}


def _stage_problem(npu: dict[str, np.ndarray], cpu: dict[str, np.ndarray], image: int,
                   check: AippCheck) -> str:
    for stage in ("crop", "color", "resize"):
        diff = np.abs(npu[stage].astype(np.int16) - cpu[stage].astype(np.int16))
        worst = int(diff.max()) if diff.size else 0
        check.stage_lsb = max(check.stage_lsb, worst)
        allowed = 1 + (max(npu[stage].shape[:2]) - 1) // 256 if stage == "resize" else 1
        if worst > allowed:
            y, x, c = np.unravel_index(int(np.argmax(diff)), diff.shape)
            return (f"stage {stage}, image {image}, pixel (x={x}, y={y}, channel {c}): AIPP "
                    f"{int(npu[stage][y, x, c])}, CPU step {int(cpu[stage][y, x, c])}, "
                    f"{worst} LSB apart (allowed {allowed}); {_STAGE_FIX[stage]}")
    return ""


def _declared(p: Preprocess, f: dict[str, Any], resized: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """The declaration's exact normalised and padded tensor of ``resized`` (NCHW, float64)
    and the error budget of AIPP's float16 arithmetic for each value."""
    x = resized.astype(np.float64)
    if p.normalize is None:
        exact, budget = x, 0.5 * _ulp16(x)
    else:
        n = x.shape[2]
        mean, reci = np.asarray(p.normalize.mean), np.asarray(p.normalize.var_reci)
        whole = np.array([f.get(f"mean_chn_{c}", 0) for c in range(n)], np.float64)
        frac = np.array([f.get(f"min_chn_{c}", 0.0) for c in range(n)], np.float64)
        factor = np.array([f.get(f"var_reci_chn_{c}", 1.0) for c in range(n)], np.float64)
        t = x - whole - frac
        exact = (x - mean) * reci
        budget = ((0.5 * _ulp16(frac) + 0.5 * _ulp16(t) + np.abs(whole + frac - mean))
                  * np.abs(factor) + 0.5 * _ulp16(factor) * np.abs(t)
                  + np.abs(t * (factor - reci)) + 0.5 * _ulp16(exact))
    if p.padding is not None:
        pad = p.padding
        width = ((pad.top, pad.bottom), (pad.left, pad.right), (0, 0))
        exact = np.pad(exact, width, constant_values=pad.value)
        budget = np.pad(budget, width, constant_values=0.5 * float(_ulp16(pad.value)))
    return exact.transpose(2, 0, 1)[None], budget.transpose(2, 0, 1)[None]


def _dtc_problem(p: Preprocess, f: dict[str, Any], npu: dict[str, np.ndarray], image: int,
                 check: AippCheck) -> str:
    exact, budget = _declared(p, f, npu["resize"])
    got = npu["output"].astype(np.float64)
    err = np.abs(got - exact)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(got) | (np.abs(exact) > _F16_MAX) | ~(err <= budget * 1.01)
        ulp = _ulp16(exact)
        ok = ~bad
        if ok.any():
            check.dtc_ulps = max(check.dtc_ulps, float((err / ulp)[ok].max()))
            check.budget_ulps = max(check.budget_ulps, float((budget / ulp)[ok].max()))
    if not bad.any():
        return ""
    where = np.unravel_index(int(np.argmax(np.where(bad, np.nan_to_num(err, nan=np.inf,
                                                                         posinf=np.inf), -1))),
                             err.shape)
    _, c, y, x = (int(i) for i in where)
    g, e = float(got[where]), float(exact[where])
    why = (f"beyond float16's largest value {_F16_MAX:g}; lower var_reci (a larger std) and "
           "scale in the model's first layer instead" if abs(e) > _F16_MAX else
           f"beyond the float16 budget {float(budget[where]):.3g}; the cfg's mean_chn, "
           "min_chn and var_reci_chn do not give the declared normalisation: check "
           "normalize.mean and std (or var_reci)")
    return (f"stage normalize (AIPP's DTC in float16), image {image}, pixel (x={x}, y={y}, "
            f"channel {c}): AIPP {g:.6g}, the declaration's (x - mean) * var_reci "
            f"{e:.6g}, {why}")


def check_aipp_model(model: Any, p: Preprocess, input_name: str, images: int = 2) -> AippCheck:
    """Compare the AIPP emulator with the CPU step stage by stage on ``images`` synthetic
    images, and run ``model`` on both (see the module docstring).

    Example:
        >>> check_aipp_model(onnx.load("net.onnx"), p, "image").passed  # doctest: +SKIP
        True
    """
    from ...onnx import Session

    session = Session(model)
    vi = next(vi for vi in model.graph.input if vi.name == input_name)
    dtype = _NP.get(vi.type.tensor_type.elem_type, np.float32)
    dims = vi.type.tensor_type.shape.dim
    batch = dims[0].dim_value if dims and dims[0].dim_value > 0 else 1  # a fixed batch
    fields = dict(static_fields(p))
    check = AippCheck(0)
    largest: dict[str, float] = {}
    for seed in range(images):
        image = synthetic_image(p.format, p.source_size, seed)
        npu = emulate_aipp(fields, image, p.out_channels, stages=True)
        cpu = preprocess_cpu(p, image, stages=True)
        check.problem = (_stage_problem(npu, cpu, seed, check)
                         or _dtc_problem(p, fields, npu, seed, check))
        if check.problem:
            check.passed = False
            return check
        x_npu, x_cpu = (np.repeat(x["output"].astype(dtype), batch, axis=0) for x in (npu, cpu))
        got = session.run(None, _feeds(model, input_name, x_npu))
        want = session.run(None, _feeds(model, input_name, x_cpu))
        for out, a, e in zip(session.get_outputs(), got, want):
            diff = np.abs(np.asarray(a, np.float64) - np.asarray(e, np.float64))
            largest[out.name] = max(largest.get(out.name, 0.0),
                                    float(np.nanmax(diff)) if diff.size else 0.0)
    check.outputs = [f"{name} differs by at most {v:.3g}" for name, v in largest.items()]
    return check
