"""A pipeline's steps run in one Python process: the reference a served ensemble must equal.

Python steps are called through the helper the served model.py uses; ONNX models and
operators run in opsdk's graph executor (``opsdk.onnx.Session``), as the cpu target does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ._pipeline import Pipeline, PipelineError, numpy_dtype
from ._steps import call_step, load_function

__all__ = ["run_pipeline"]


def run_pipeline(pipe: Pipeline, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run every step of ``pipe`` in order on ``feeds`` (batch axis included in a batched
    pipeline); return the pipeline's outputs by name.

    Example:
        >>> pipe = load_pipeline("pipeline.toml")  # doctest: +SKIP
        >>> run_pipeline(pipe, {"raw": x, "z": z})["label"]  # doctest: +SKIP
    """
    from ._ensemble import plan_pipeline

    plans, _ = plan_pipeline(pipe)
    missing = [t.name for t in pipe.inputs if t.name not in feeds]
    if missing:
        raise PipelineError(f"pipeline {pipe.name!r}: no value for input {missing[0]!r}; "
                            f"pass every input: {', '.join(t.name for t in pipe.inputs)}")
    values: dict[str, Any] = dict(feeds)
    for plan in plans:
        step = plan.step
        args = {own: values[tensor] for own, tensor in step.inputs}
        if step.kind == "python":
            path, function = step.function
            fn = load_function(path, function, f"opsdk_pipeline_{pipe.name}_{step.name}")
            outs = [(t.name, numpy_dtype(t.dtype)) for t in step.output_types]
            results = dict(zip([n for n, _ in outs], call_step(step.name, fn, args, outs),
                               strict=True))
        else:
            from ..onnx import Session

            assert plan.model is not None
            names = [o.name for o in plan.model.graph.output]
            results = dict(zip(names, Session(plan.model).run(names, args), strict=True))
        for own, tensor in step.outputs:
            values[tensor] = results[own]
    return {name: values[name] for name in pipe.outputs}
