"""Serve models with opsdk operators under Triton Inference Server.

`build_repository` writes a model repository from an ONNX model (`plan_repository` decides
everything once, `write_repository` writes the plan): ``backend: "npu_ge"``
configs for Ascend hosts, or a Python-backend model whose ``model.py`` runs the graph with
``opsdk.onnx.Session`` on any CPU host. `build_pipeline` writes an ensemble from a pipeline
description (`load_pipeline`), `check_ensemble` checks its wiring, `run_pipeline` runs the
same steps in one process, and `load_report` measures a served model or ensemble.
`TritonServer` runs a real ``tritonserver`` (from the nvidia-pytriton wheel, in the serving
venv made by ``.ci/serve_env.sh``) on 127.0.0.1.

Example:
    >>> from opsdk.triton import RepositoryOptions, TritonServer, build_repository
    >>> build_repository("mlp.onnx", "repo", RepositoryOptions("mlp"))  # doctest: +SKIP
    PosixPath('repo/mlp')
    >>> with TritonServer("repo") as server:  # doctest: +SKIP
    ...     print(server.http_url)
    127.0.0.1:40123
"""

from __future__ import annotations

from ._check import NpuGeCheck, check_npu_ge_folder
from ._ensemble import build_pipeline
from ._env import ServeEnvironment, locate_serve_env, unsupported_platform
from ._errors import (
    ExpressionError,
    OrtCrash,
    PipelineError,
    ServeEnvMissing,
    TritonConfigError,
    TritonConfigWarning,
    TritonServerError,
)
from ._load import LoadTarget, format_load_report, load_report, plot_load_report, variant_server
from ._onnx_io import GraphIO, TensorIO, read_graph_io
from ._ort_check import OrtRun, ensure_ort_env, ort_python, run_like_npu_ge
from ._pipeline import Pipeline, PipeTensor, Step, load_pipeline, pipeline_from_dict
from ._repository import (
    TARGETS,
    AscendOptions,
    CpuOptions,
    RepositoryOptions,
    RepositoryPlan,
    build_repository,
    plan_repository,
    recorded_cann,
    render_model,
    write_repository,
)
from ._run import PipelineRun, run_pipeline
from ._server import TritonServer, free_port
from ._wiring import EnsembleCheck, check_ensemble, is_ensemble

__all__ = [
    "TARGETS",
    "AscendOptions",
    "CpuOptions",
    "EnsembleCheck",
    "GraphIO",
    "LoadTarget",
    "NpuGeCheck",
    "OrtRun",
    "PipeTensor",
    "PipelineRun",
    "Pipeline",
    "PipelineError",
    "OrtCrash",
    "ExpressionError",
    "RepositoryOptions",
    "RepositoryPlan",
    "ServeEnvMissing",
    "ServeEnvironment",
    "Step",
    "TensorIO",
    "TritonConfigError",
    "TritonConfigWarning",
    "TritonServer",
    "TritonServerError",
    "build_pipeline",
    "build_repository",
    "check_ensemble",
    "check_npu_ge_folder",
    "ensure_ort_env",
    "format_load_report",
    "free_port",
    "is_ensemble",
    "load_pipeline",
    "load_report",
    "locate_serve_env",
    "ort_python",
    "pipeline_from_dict",
    "plan_repository",
    "plot_load_report",
    "read_graph_io",
    "recorded_cann",
    "render_model",
    "run_pipeline",
    "run_like_npu_ge",
    "unsupported_platform",
    "variant_server",
    "write_repository",
]
