"""A pytest fixture that starts real Triton servers for your own tests.

Import the fixture into a test module or a ``conftest.py``::

    from opsdk.triton.testing import triton_server  # noqa: F401

    def test_my_model(triton_server, tmp_path):
        repo = build_my_repository(tmp_path)
        server = triton_server(repo)          # started and ready, on 127.0.0.1
        with tritonclient.http.InferenceServerClient(server.http_url) as client:
            ...

Every server the fixture started is stopped when the test ends, and the fixture checks that
its process is gone. Where the platform cannot run nvidia-pytriton's tritonserver the test
is skipped with that reason; where the serving venv is missing it is skipped with the
command that creates it (``bash .ci/serve_env.sh``), except under CI (``CI`` set), where a
missing serving venv fails the test. A server that cannot start always fails the test.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ._env import ServeEnvironment, locate_serve_env, unsupported_platform
from ._errors import ServeEnvMissing
from ._server import TritonServer

__all__ = ["triton_server", "serve_env_or_skip", "process_gone"]


def serve_env_or_skip(venv: str | Path | None = None) -> ServeEnvironment:
    """The serving environment; skip the test where it cannot exist or was not made.

    Example:
        >>> env = serve_env_or_skip()  # doctest: +SKIP
    """
    reason = unsupported_platform()
    if reason:
        pytest.skip(reason)
    try:
        return locate_serve_env(venv)
    except ServeEnvMissing as e:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the Triton server tests: {e}", pytrace=False)
        pytest.skip(str(e))


def process_gone(pid: int) -> bool:
    """True when no process (not even a zombie) has this PID."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.is_file() and stat.read_text().split(") ")[-1].startswith("Z")


@pytest.fixture
def triton_server() -> Iterator[Callable[..., TritonServer]]:
    """Factory fixture: ``triton_server(repo, **TritonServer kwargs)`` -> a ready server.

    Example:
        >>> server = triton_server("repo/")  # doctest: +SKIP
        >>> server.http_url  # doctest: +SKIP
        '127.0.0.1:40123'
    """
    started: list[TritonServer] = []

    def start(repository: str | Path, **kwargs: Any) -> TritonServer:
        env = serve_env_or_skip(kwargs.pop("venv", None))
        server = TritonServer(repository, venv=env.venv, **kwargs)
        started.append(server)
        return server.start()

    yield start
    pids = [s.pid for s in started if s.pid is not None]
    for server in reversed(started):
        server.stop()
    alive = [pid for pid in pids if not process_gone(pid)]
    assert not alive, f"tritonserver processes {alive} are still running after stop()"
