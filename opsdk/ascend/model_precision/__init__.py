"""Whole-model precision: what ATC's ``--precision_mode`` does to a model's answer.

Every node of an ONNX model gets the dtype ATC's rules give it (:func:`assign_dtypes`, from
CANN's own lists: ``ascend/data/precision_lists.json``); the model runs under ONNX Runtime
with Cast nodes where ATC lowers (:func:`lower_model`) and its outputs are judged against the
float32 model's by a comparison method of :mod:`opsdk.testing`, with the error each node
adds when it alone is lowered. ``fix=`` finds a small set of nodes to keep in float32 and
writes ATC's ``--keep_dtype`` and ``--modify_mixlist`` files (``opsdk atc`` takes them).
:func:`analyze_model_in_child` runs it all in a child process, so that a crash of ONNX
Runtime is an error naming the model, the version, what ran and the node.
The single-operator emulation is :mod:`opsdk.ascend.precision`.

Example:
    >>> from opsdk.ascend.model_precision import analyze_model
    >>> r = analyze_model("det.onnx", "force_fp16", input_shape={"x": (1, 3, 64, 96)})
    ... # doctest: +SKIP
    >>> print(r.text())  # doctest: +SKIP
"""

from __future__ import annotations

from ._analyze import DEFAULT_STANDARD, FixResult, ModelPrecisionReport, analyze_model
from ._assign import NodeDtype, assign_dtypes
from ._child import analyze_model_in_child
from ._engine import Attribution, OutputResult, judge_output, stderr_progress
from ._fix import (
    HTML_REPORT_FILE,
    KEEP_FILE,
    MIXLIST_FILE,
    REPORT_FILE,
    keep_dtype_text,
    mixlist_text,
)
from ._graph import float_tensors, lower_model
from ._inputs import make_inputs, parse_input_shape
from ._lists import OpFacts, op_facts, recorded_socs

__all__ = [
    "stderr_progress",
    "DEFAULT_STANDARD",
    "HTML_REPORT_FILE",
    "KEEP_FILE",
    "MIXLIST_FILE",
    "REPORT_FILE",
    "Attribution",
    "FixResult",
    "ModelPrecisionReport",
    "NodeDtype",
    "OpFacts",
    "OutputResult",
    "analyze_model",
    "analyze_model_in_child",
    "assign_dtypes",
    "float_tensors",
    "judge_output",
    "keep_dtype_text",
    "lower_model",
    "make_inputs",
    "mixlist_text",
    "op_facts",
    "parse_input_shape",
    "recorded_socs",
]
