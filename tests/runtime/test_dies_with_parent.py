"""``kill -9`` of a long opsdk command leaves no process behind: its children (pytest,
tritonserver and its stubs, the workers that run kernels) die with it.

Each command runs with a unique token in its environment; after the kill the test counts the
processes that still carry it (waits are bounded, nothing measures time). The test-only
operator tests/data/misbehave loops for ever in its float64 kernel (``OPSDK_MISBEHAVE=loop``).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper

from tests._helpers.procs import gone, running_with, tracked, wait_for

OP_DIR = Path(__file__).resolve().parents[1] / "data" / "misbehave"


def _running(token: str, module: str) -> bool:
    """A process of the run whose command line names ``module`` is running."""
    for pid in running_with(token):
        try:
            if module.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


def _kill_9_leaves_nothing(args: list[str], waits_for: str) -> None:
    with tracked([sys.executable, "-m", "opsdk", *args], "loop") as (proc, token):
        wait_for(f"{waits_for} starting", lambda: _running(token, waits_for), proc)
        os.kill(proc.pid, signal.SIGKILL)  # opsdk alone, as `kill -9 PID` does
        gone(token)


@pytest.mark.parametrize("command", [
    ["test", str(OP_DIR), "-k", "float64-odd", "--timeout", "3600"],  # outlasts the cap
    ["check", str(OP_DIR)],
])
def test_kill_9_of_a_validation_run_leaves_no_process(command: list[str]) -> None:
    """`opsdk test` (pytest, then the worker running the endless kernel) and `opsdk check`."""
    _kill_9_leaves_nothing(command, "opsdk.runtime.isolated")


def test_kill_9_of_opsdk_serve_leaves_no_process(tmp_path: Path) -> None:
    """`opsdk serve`: tritonserver, its Python-backend stub and the stub's graph worker."""
    from opsdk.triton import RepositoryOptions, build_repository
    from opsdk.triton.testing import serve_env_or_skip

    env = serve_env_or_skip()
    nodes = [helper.make_node("Misbehave", ["x"], ["y"], domain="com.opsdk.test")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.DOUBLE, ["n"])],
                          [helper.make_tensor_value_info("y", T.DOUBLE, ["n"])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                                  helper.make_opsetid("com.opsdk.test", 1)]),
              str(tmp_path / "m.onnx"))
    build_repository(tmp_path / "m.onnx", tmp_path / "repo", RepositoryOptions(
        "mis", max_batch_size=0, operators_path=(str(OP_DIR.parent),)))
    _kill_9_leaves_nothing(["serve", str(tmp_path / "repo"), "--venv", str(env.venv)],
                           "opsdk.onnx._isolated")
