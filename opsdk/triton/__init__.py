"""Serve models with opsdk operators under Triton Inference Server.

`build_repository` writes a model repository from an ONNX model: ``backend: "npu_ge"``
configs for Ascend hosts, or a Python-backend model whose ``model.py`` runs the graph with
``opsdk.onnx.Session`` on any CPU host. `TritonServer` runs a real ``tritonserver`` (from
the nvidia-pytriton wheel, in the serving venv made by ``.ci/serve_env.sh``) on 127.0.0.1.

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
from ._env import ServeEnvironment, locate_serve_env, unsupported_platform
from ._errors import ServeEnvMissing, TritonConfigError, TritonConfigWarning, TritonServerError
from ._onnx_io import GraphIO, TensorIO, read_graph_io
from ._ort_check import OrtRun, ensure_ort_env, ort_python, run_like_npu_ge
from ._repository import TARGETS, RepositoryOptions, build_repository, render_model
from ._server import TritonServer, free_port

__all__ = [
    "TARGETS",
    "GraphIO",
    "NpuGeCheck",
    "OrtRun",
    "RepositoryOptions",
    "ServeEnvMissing",
    "ServeEnvironment",
    "TensorIO",
    "TritonConfigError",
    "TritonConfigWarning",
    "TritonServer",
    "TritonServerError",
    "build_repository",
    "check_npu_ge_folder",
    "ensure_ort_env",
    "free_port",
    "locate_serve_env",
    "ort_python",
    "read_graph_io",
    "render_model",
    "run_like_npu_ge",
    "unsupported_platform",
]
