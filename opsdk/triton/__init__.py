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

from ._env import ServeEnvironment, locate_serve_env, unsupported_platform
from ._errors import ServeEnvMissing, TritonConfigError, TritonServerError
from ._onnx_io import GraphIO, TensorIO, read_graph_io
from ._repository import TARGETS, RepositoryOptions, build_repository, render_model
from ._server import TritonServer, free_port

__all__ = [
    "TARGETS",
    "GraphIO",
    "RepositoryOptions",
    "ServeEnvMissing",
    "ServeEnvironment",
    "TensorIO",
    "TritonConfigError",
    "TritonServer",
    "TritonServerError",
    "build_repository",
    "free_port",
    "locate_serve_env",
    "read_graph_io",
    "render_model",
    "unsupported_platform",
]
