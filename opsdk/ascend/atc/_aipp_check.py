"""Does the model fed by AIPP compute what the model fed by the CPU step computes?

Both run under ONNX Runtime (through :class:`opsdk.onnx.Session`, custom nodes included) on
the same synthetic images: once on the AIPP emulator's output (float16, as AIPP hands it
to the model), once on :func:`opsdk.preprocess.preprocess_cpu`'s. Each output is judged by
the precision standard of its dtype with float16 tolerances (the model's input is float16
on the NPU), and the uint8 stages of the two preprocessings are compared in LSB.
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


@dataclass
class AippCheck:
    """What :func:`check_aipp_model` found."""

    #: largest difference (LSB) between the emulator's and the CPU step's uint8 stages
    stage_lsb: int
    #: one line per output and image: the standard's verdict
    outputs: list[str] = field(default_factory=list)
    passed: bool = True

    def summary(self) -> str:
        """One line for the plan's notes."""
        head = "equal" if self.passed else "DIFFER"
        return (f"AIPP emulator vs CPU preprocessing: uint8 stages within {self.stage_lsb} LSB; "
                f"model outputs {head} ({'; '.join(self.outputs)})")


def _feeds(model: Any, name: str, x: np.ndarray) -> dict[str, np.ndarray]:
    inits = {t.name for t in model.graph.initializer}
    feeds = {name: x}
    for vi in model.graph.input:
        if vi.name in inits or vi.name == name:
            continue
        dims = [d.dim_value if d.dim_value > 0 else 1 for d in vi.type.tensor_type.shape.dim]
        feeds[vi.name] = np.zeros(dims, _NP.get(vi.type.tensor_type.elem_type, np.float32))
    return feeds


def check_aipp_model(model: Any, p: Preprocess, input_name: str, images: int = 2,
                     standard: str | None = None) -> AippCheck:
    """Run ``model`` on the AIPP emulator's and the CPU step's preprocessing of ``images``
    synthetic images and compare (see the module docstring).

    Example:
        >>> check_aipp_model(onnx.load("net.onnx"), p, "image").passed  # doctest: +SKIP
        True
    """
    from ...onnx import Session
    from ...testing import compare, standard_for

    session = Session(model)
    vi = next(vi for vi in model.graph.input if vi.name == input_name)
    dtype = _NP.get(vi.type.tensor_type.elem_type, np.float32)
    dims = vi.type.tensor_type.shape.dim
    batch = dims[0].dim_value if dims and dims[0].dim_value > 0 else 1  # a fixed batch
    fields = dict(static_fields(p))
    check = AippCheck(0)
    for seed in range(images):
        image = synthetic_image(p.format, p.source_size, seed)
        npu = emulate_aipp(fields, image, p.out_channels, stages=True)
        cpu = preprocess_cpu(p, image, stages=True)
        check.stage_lsb = max([check.stage_lsb] + [
            int(np.abs(npu[k].astype(np.int16) - cpu[k].astype(np.int16)).max())
            for k in ("color", "resize")])
        x_npu, x_cpu = (np.repeat(x["output"].astype(dtype), batch, axis=0) for x in (npu, cpu))
        got = session.run(None, _feeds(model, input_name, x_npu))
        want = session.run(None, _feeds(model, input_name, x_cpu))
        for out, a, e in zip(session.get_outputs(), got, want):
            std = standard_for(str(e.dtype), override=standard)
            c = compare(a, e.astype(a.dtype), std, output=out.name, judge_dtype="float16",
                        rounding=False)  # the AIPP unit's arithmetic, not a kernel's
            check.passed &= c.passed
            check.outputs.append(f"image {seed} {out.name}: {c.summary()}")
    return check
