"""A pipeline's steps run in one Python process: the reference a served ensemble must equal.

Python and preprocess steps are called through the helper the served model.py uses (a
preprocess step's function is the one its served module defines); ONNX models and
operators run in opsdk's graph executor (``opsdk.onnx.Session``), as the cpu target does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ._pipeline import Pipeline, PipelineError, dtype_of_triton, numpy_dtype
from ._steps import call_step, load_function, preprocess_function

__all__ = ["run_pipeline", "PipelineRun"]


def run_pipeline(pipe: Pipeline, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run every step of ``pipe`` in order on ``feeds`` (batch axis included in a batched
    pipeline); return the pipeline's outputs by name. :class:`PipelineRun` keeps the
    sessions for many runs.

    Example:
        >>> pipe = load_pipeline("pipeline.toml")  # doctest: +SKIP
        >>> run_pipeline(pipe, {"raw": x, "z": z})["label"]  # doctest: +SKIP
    """
    return PipelineRun(pipe)(feeds)


class PipelineRun:
    """The steps of ``pipe`` loaded once (functions imported, graph sessions opened);
    call it with the pipeline's inputs.

    Example:
        >>> run = PipelineRun(load_pipeline("ocr.toml"))  # doctest: +SKIP
        >>> [run({"image": im})["texts"] for im in images]  # doctest: +SKIP
    """

    def __init__(self, pipe: Pipeline) -> None:
        from ..onnx import Session
        from ._ensemble import plan_pipeline

        self.pipe = pipe
        plans, _ = plan_pipeline(pipe)
        self._steps: list[tuple[Any, Callable[[dict[str, Any]], dict[str, Any]]]] = []
        for plan in plans:
            step = plan.step
            if step.kind == "preprocess":
                outs = [(t.name, numpy_dtype(dtype_of_triton(t.data_type)))
                        for t in plan.outputs]
                fn = preprocess_function(step.source)
                self._steps.append((step, _python(step.name, fn, outs)))
            elif step.kind == "python":
                path, function = step.function
                fn = load_function(path, function, f"opsdk_pipeline_{pipe.name}_{step.name}")
                outs = [(t.name, numpy_dtype(t.dtype)) for t in step.output_types]
                self._steps.append((step, _python(step.name, fn, outs)))
            else:
                assert plan.model is not None
                self._steps.append((step, _graph(Session(plan.model), plan.model)))

    def __call__(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        missing = [t.name for t in self.pipe.inputs if t.name not in feeds]
        if missing:
            raise PipelineError(
                f"pipeline {self.pipe.name!r}: no value for input {missing[0]!r}; pass every "
                f"input: {', '.join(t.name for t in self.pipe.inputs)}")
        values: dict[str, Any] = dict(feeds)
        for step, run in self._steps:
            results = run({own: values[tensor] for own, tensor in step.inputs})
            for own, tensor in step.outputs:
                values[tensor] = results[own]
        return {name: values[name] for name in self.pipe.outputs}


def _python(name: str, fn: Callable[..., Any], outs: list[tuple[str, np.dtype[Any]]]
            ) -> Callable[[dict[str, Any]], dict[str, Any]]:
    names = [n for n, _ in outs]
    return lambda args: dict(zip(names, call_step(name, fn, args, outs), strict=True))


def _graph(session: Any, model: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    names = [o.name for o in model.graph.output]
    return lambda args: dict(zip(names, session.run(names, args), strict=True))
