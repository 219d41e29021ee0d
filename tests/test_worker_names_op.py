"""Issue 33 item 3: a fork or an exit anywhere in a served model or a validation worker is
reported with the operator whose kernel did it.

The test-only operator tests/data/misbehave (float64 kernel) forks (``fork``), or ends the
process with the exit_group system call (``exit_group0``): what a library the kernel calls
does, which no exit hook of the operator module sees.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper

import opsdk
from opsdk.errors import KernelCrash
from opsdk.onnx import IsolatedSession
from opsdk.runtime.isolated import IsolatedOperator

OP_DIR = Path(__file__).resolve().parent / "data" / "misbehave"
CAP_S = 600.0  # only a hung worker reaches it


def _served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> IsolatedSession:
    """A graph Relu -> Misbehave (node 'copy') -> Relu in the serving worker."""
    monkeypatch.setenv("OPSDK_MISBEHAVE", mode)
    monkeypatch.setenv("OPSDK_OPERATORS_PATH", str(OP_DIR.parent))
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Misbehave", ["r"], ["m"], domain="com.opsdk.test", name="copy"),
             helper.make_node("Relu", ["m"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.DOUBLE, ["n"])],
                          [helper.make_tensor_value_info("y", T.DOUBLE, ["n"])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                                  helper.make_opsetid("com.opsdk.test", 1)]),
              str(tmp_path / "m.onnx"))
    return IsolatedSession(tmp_path / "m.onnx", threads=1)


@pytest.mark.parametrize("mode, message", [
    ("fork", "the kernel of Misbehave (node 'copy') started 1 child process (fork), stopped "
             "after the call; a kernel must not fork"),
    ("exit_group0", "the kernel of Misbehave (node 'copy') ended the worker process with exit "
                    "status 0 while it ran (an exit from code outside the operator module, e.g. "
                    "a library it calls); its worker process was restarted"),
])
def test_a_served_model_names_the_operator_and_node(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, message: str) -> None:
    sess = _served(tmp_path, monkeypatch, mode)
    try:
        with pytest.raises(KernelCrash, match=re.escape(message)):
            sess.run(None, {"x": np.arange(3.0)})
    finally:
        sess.close()


def test_an_exit_from_any_code_in_a_validation_worker_says_so() -> None:
    op = IsolatedOperator(opsdk.load(str(OP_DIR)), timeout=CAP_S,
                          env={"OPSDK_MISBEHAVE": "exit_group0"})
    try:
        with pytest.raises(KernelCrash, match=re.escape(
                f"Misbehave ({OP_DIR / 'kernel.cpp'}): the kernel ended the worker process with "
                "exit status 0 while it ran (an exit from code outside the operator module, "
                "e.g. a library it calls; a kernel must return or throw, never end the "
                "process)")):
            op.run([np.arange(5.0)], {})
        # the next call runs in a fresh worker
        np.testing.assert_array_equal(op.run([np.arange(2, dtype=np.float32)], {})[0], [0, 1])
    finally:
        op.close()
