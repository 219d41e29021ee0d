"""opsdk operators as first-class ONNX citizens.

- **Schemas**: :func:`register_schema` turns a spec into an ``onnx.defs.OpSchema`` with
  shape inference, so ONNX's strict shape inference and full checker accept custom nodes.
- **Export**: :func:`export_model` writes a single-op model; :func:`add_node` and
  :func:`insert_after` put a custom node into an existing model.
- **Fallback functions**: :func:`attach_function` embeds ``spec.function`` (a
  decomposition into standard ops) as a model-local function any runtime can run.
- **Graph executor**: :class:`Session` runs a model holding custom nodes, standard parts
  in ONNX Runtime and custom nodes in opsdk kernels, like ``onnxruntime.InferenceSession``.
- **Rewrites**: :func:`fuse_conv_bn_relu`, :func:`replace_ops`, :func:`rewrite`; on the
  CPU :func:`time_models` judges a rewrite on the whole model.
- **Constants**: :class:`GraphConstants` resolves a value to its constant array whether
  it is an initializer, a ``Constant`` node or an ``Identity``/``Cast`` of one;
  :func:`input_dims` reads graph-input dims (``dim_value`` -1 or 0 is dynamic).
- **--like**: :func:`like_onnx` outlines a spec from an ONNX operator's schema.

Example:
    >>> import numpy as np
    >>> from opsdk.onnx import export_model, Session
    >>> model = export_model("ThresholdedRelu", shapes={"x": ("N", 4)}, attrs={"alpha": 0.5})
    >>> Session(model).run(None, {"x": np.array([[0.2, 0.7, -1.0, 3.0]], np.float32)})
    ... # doctest: +SKIP
    [array([[0. , 0.7, 0. , 3. ]], dtype=float32)]
"""

from __future__ import annotations

from ._constants import (
    GraphConstants,
    constant_node_value,
    dim_form,
    input_dims,
    remove_dead_constants,
)
from ._crash import Isolated, child_crashes, crash_note
from ._dimprop import propagate_dims
from ._export import DEFAULT_OPSET, add_node, export_model, insert_after, make_node, to_text
from ._functions import (
    AttrRef,
    FunctionBuilder,
    attach_function,
    build_function,
    evaluate_function,
    function_opset,
)
from ._isolated import IsolatedSession
from ._model import (
    OutputExistsError,
    attribute_value,
    is_standard_domain,
    iter_all_nodes,
    iter_nested_nodes,
    load_model,
    node_label,
    opset_version,
    save_model,
    tensor_data_problem,
)
from ._names import FreshNames, graph_names
from ._ops import catalog_scope, find_spec
from ._opset import lower_opset
from ._ort_child import OrtChild
from ._pays import KEEP_BELOW, ModelTiming, time_models
from ._probe import is_state_dim, probe_feeds, runnable_shapes, value_candidates
from ._refusals import (
    checker_refusal,
    explained_refusal,
    model_refusals,
    ort_copy,
    ort_refusal,
    repeated_node_names,
)
from ._rewrite import (
    FUSIONS,
    RewriteRecord,
    RewriteResult,
    fold_batch_norm,
    fuse_conv_bn_relu,
    replace_ops,
    rewrite,
)
from ._schema import (
    check_custom_node,
    check_model,
    infer_shapes,
    known_specs,
    make_schema,
    register_all,
    register_schema,
    registered_schemas,
    unregister_schema,
)
from ._session import IOInfo, ReferenceKernel, Session, StepInfo
from ._structure import scan_structure
from .errors import ModelError, OrtChildCrash, OrtCrashFacts, ProbeTooBig
from .like import like_onnx

__all__ = [
    "DEFAULT_OPSET",
    "AttrRef",
    "FUSIONS",
    "GraphConstants",
    "FunctionBuilder",
    "IOInfo",
    "IsolatedSession",
    "KEEP_BELOW",
    "ModelTiming",
    "ModelError",
    "OrtChildCrash",
    "OrtCrashFacts",
    "ProbeTooBig",
    "OutputExistsError",
    "ReferenceKernel",
    "RewriteRecord",
    "RewriteResult",
    "Session",
    "StepInfo",
    "add_node",
    "attach_function",
    "build_function",
    "evaluate_function",
    "function_opset",
    "check_model",
    "constant_node_value",
    "export_model",
    "fold_batch_norm",
    "fuse_conv_bn_relu",
    "input_dims",
    "insert_after",
    "like_onnx",
    "load_model",
    "lower_opset",
    "make_node",
    "make_schema",
    "register_all",
    "register_schema",
    "registered_schemas",
    "remove_dead_constants",
    "replace_ops",
    "rewrite",
    "save_model",
    "time_models",
    "to_text",
    "unregister_schema",
    "dim_form",
    "Isolated",
    "child_crashes",
    "crash_note",
    "propagate_dims",
    "attribute_value",
    "is_standard_domain",
    "iter_all_nodes",
    "iter_nested_nodes",
    "node_label",
    "opset_version",
    "tensor_data_problem",
    "find_spec",
    "OrtChild",
    "is_state_dim",
    "probe_feeds",
    "runnable_shapes",
    "value_candidates",
    "check_custom_node",
    "known_specs",
    "scan_structure",
    "FreshNames",
    "graph_names",
    "checker_refusal",
    "explained_refusal",
    "model_refusals",
    "catalog_scope",
    "ort_copy",
    "ort_refusal",
    "repeated_node_names",
    "infer_shapes",
]
