"""What the Triton GE backend (``npu_ge``) reads and accepts, in one place.

Read from the backend's own source (the triton-inference-server-ge-backend repository:
``src/model_state.cpp``, ``src/model_instance_state.cpp``, ``src/inference.cpp``,
``CMakeLists.txt``, ``Dockerfile``). The ascend target, its checks and docs/serving.md use
these names; nothing else spells them. How the backend reads and evaluates output dim names
is mirrored in :mod:`opsdk.triton._npu_ge_expr` (the grammar and evaluator) and
:mod:`opsdk.triton._ascend_dims` (where it looks the names up).

Example:
    >>> BACKEND, LIBRARY
    ('npu_ge', 'backends/npu_ge/libtriton_npu_ge.so')
    >>> "TYPE_BF16" in CONFIG_DTYPES
    False
"""

from __future__ import annotations

__all__ = [
    "BACKEND",
    "LIBRARY",
    "ORT_VERSION",
    "ORT_MAX_IR",
    "ORT_MAX_OPSET",
    "CONFIG_DTYPES",
    "MODEL_PARAMETERS",
    "OPTION_PREFIXES",
    "DEAD_PREFIXES",
    "PROFILING_VALUES",
    "STATIC_NAME_SEPARATORS",
    "PRECISION_MODE_V2_KEY",
    "SHAPE_GEAR_KEYS",
    "INSERT_OP_FILE_KEY",
]

#: The ``backend:`` value of config.pbtxt.
BACKEND = "npu_ge"
#: Where Triton loads it from (CMake ``OUTPUT_NAME triton_npu_ge``, installed under
#: ``$TRITON_HOME_PATH/backends/npu_ge``).
LIBRARY = "backends/npu_ge/libtriton_npu_ge.so"
#: The ONNX Runtime C++ the backend links (``Dockerfile``); it opens the model, with no
#: custom ops registered, to read the inputs, outputs and their symbolic dims.
ORT_VERSION = "1.23.2"
#: The newest ONNX IR version and ai.onnx opset ONNX Runtime 1.23.2 loads (measured).
ORT_MAX_IR = 11
ORT_MAX_OPSET = 23
#: ``data_type`` names in the backend's ``data_type_map``: anything else becomes an invalid
#: type. TYPE_STRING is left out on purpose: the backend sizes its elements as one byte
#: each, so a serialized BYTES tensor never matches the size it expects.
CONFIG_DTYPES = frozenset({
    "TYPE_FP32", "TYPE_FP16", "TYPE_INT8", "TYPE_INT16", "TYPE_INT32", "TYPE_INT64",
    "TYPE_UINT8", "TYPE_UINT16", "TYPE_UINT32", "TYPE_UINT64", "TYPE_BOOL",
})
#: Model ``parameters`` read by name (``ModelState::ParseModelParametersConfig``).
MODEL_PARAMETERS = (
    "device_ids", "device_exec_blocks", "instance_exec_blocks", "static_model",
    "dump_graph", "profiling", "dump_data",
)
#: Parameter key prefixes forwarded as GE options (``ModelState::SetOptions``): ``session.``
#: keys go to every ``ge::Session``, ``graph.`` keys to ``Session::AddGraph``.
OPTION_PREFIXES = ("session.", "graph.")
#: Prefixes the backend ignores as model parameters: ``ge.`` options reach GEInitialize
#: only from ``--backend-config=npu_ge,ge.X=...``; ``global.`` options are stored, never used.
DEAD_PREFIXES = ("ge.", "global.")
#: ``profiling`` values that switch profiling on (``"true"`` static, ``"dynamic"``).
PROFILING_VALUES = ("true", "dynamic")
#: With ``static_model`` the backend writes ``name:d0,d1;name2:...`` as GE's input_shape.
STATIC_NAME_SEPARATORS = (":", ";", ",")
#: The per-model precision option (GE session option ``ge.exec.precision_mode_v2``).
PRECISION_MODE_V2_KEY = "session.ge.exec.precision_mode_v2"
#: Shape gears (GE's dynamic dims) as graph options.
SHAPE_GEAR_KEYS = ("graph.ge.inputShape", "graph.ge.dynamicDims", "graph.ge.dynamicNodeType")
#: The AIPP config of the graph: GE's session option ``ge.insertOpFile`` (``INSERT_OP_FILE``
#: of ``ge_api_types.h``: a Session constructor option, a file path; also in the IR
#: builder's options, as ATC's ``--insert_op_conf``).
INSERT_OP_FILE_KEY = "session.ge.insertOpFile"
