"""Placeholder shapes that run (issue 24 item 8): ``opsdk doctor`` and ``opsdk atc`` suggest
input shapes ONNX Runtime runs the model on, found by trying sizes by role, not 1 for
every dynamic dim (on which strided models, reflect padding and chunked audio fail)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from opsdk.ascend.atc.doctor import diagnose
from opsdk.ascend.socs import CannArgError
from opsdk.onnx._probe import dim_roles, probe_feeds, runnable_shapes


def reflect_model() -> onnx.ModelProto:
    """silero-vad's front: reflect-pad 64 samples (needs t > 64), a strided Conv1d, and an
    If on the value of ``sr`` whose other branch needs n*t divisible by 7; an RNN-style
    ``state [2, b, 8]`` whose batch must equal x's."""
    w = numpy_helper.from_array(np.ones((8, 1, 16), np.float32), "w")
    then = helper.make_graph(
        [helper.make_node("Pad", ["x", "pads"], ["xp"], mode="reflect"),
         helper.make_node("Unsqueeze", ["xp", "ax1"], ["x3"]),
         helper.make_node("Conv", ["x3", "w"], ["ty"], strides=[8])], "then", [],
        [helper.make_tensor_value_info("ty", T.FLOAT, None)])
    other = helper.make_graph([helper.make_node("Reshape", ["x", "seven"], ["ey"])], "else",
                              [], [helper.make_tensor_value_info("ey", T.FLOAT, None)])
    nodes = [helper.make_node("Equal", ["sr", "c16k"], ["is16k"]),
             helper.make_node("If", ["is16k"], ["feat"], then_branch=then, else_branch=other),
             helper.make_node("ReduceMean", ["feat"], ["m"], axes=[1, 2], keepdims=0),
             helper.make_node("Unsqueeze", ["m", "ax0"], ["m2"]),
             helper.make_node("Unsqueeze", ["m2", "ax2"], ["m3"]),
             helper.make_node("Add", ["state", "m3"], ["y"])]
    consts = {"c16k": np.array(16000, np.int64), "pads": np.array([0, 0, 0, 64], np.int64),
              "ax0": np.array([0], np.int64), "ax1": np.array([1], np.int64),
              "ax2": np.array([2], np.int64),
              "seven": np.array([-1, 7], np.int64)}
    graph = helper.make_graph(
        nodes, "reflect",
        [helper.make_tensor_value_info("x", T.FLOAT, ["n", "t"]),
         helper.make_tensor_value_info("state", T.FLOAT, [2, "b", 8]),
         helper.make_tensor_value_info("sr", T.INT64, [])],
        [helper.make_tensor_value_info("y", T.FLOAT, [2, "b", 8])],
        [w, *(numpy_helper.from_array(v, k) for k, v in consts.items())])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def _runs(model: onnx.ModelProto, shapes: dict[str, tuple[int, ...]]) -> bool:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    sizes = {(k, a): n for k, shape in shapes.items() for a, n in enumerate(shape)}
    try:
        sess.run(None, probe_feeds(model, sizes))
    except Exception:
        return False
    return True


def test_roles_and_the_first_sizing_that_runs() -> None:
    """Item 8: leading and RNN-state dims are batch dims (1), the rest take 32, 64, 224,
    640 in turn; 1 everywhere (the old placeholder) does not run this model."""
    model = reflect_model()
    assert dim_roles(model) == {("x", 0): "batch", ("x", 1): "size", ("state", 1): "batch"}
    shapes = runnable_shapes(model)
    assert shapes == {"x": (1, 224), "state": (2, 1, 8), "sr": ()}
    assert _runs(model, shapes)
    assert not _runs(model, {"x": (1, 1), "state": (2, 1, 8), "sr": ()})


def test_doctor_suggests_a_shape_that_runs() -> None:
    """Item 8: the doctor's dynamic-shape fix names a shape ONNX Runtime runs."""
    findings = [f for f in diagnose(reflect_model(), target="ascend-cann8")
                if f.code == "dynamic-shape"]
    fixes = {f.node: f.fix for f in findings}
    assert '--input_shape="x:1,224"' in fixes["graph input 'x'"]
    assert '--input_shape="state:2,1,8"' in fixes["graph input 'state'"]
    assert "a shape ONNX Runtime runs the model on" in fixes["graph input 'x'"]


def test_atc_suggests_a_shape_that_runs(tmp_path: Path) -> None:
    """Item 8: ``opsdk atc`` without --input-shape suggests shapes that run."""
    from opsdk.ascend import plan_atc

    path = tmp_path / "m.onnx"
    onnx.save(reflect_model(), str(path))
    with pytest.raises(CannArgError, match=r'e.g. --input-shape "x:1,224;state:2,1,8" '
                       r"\(a shape ONNX Runtime runs the model on"):
        plan_atc(path, soc_version="Ascend910B3", output=str(tmp_path / "out"))


def test_docstring_examples() -> None:
    import doctest

    import opsdk.onnx._probe as probe

    result = doctest.testmod(probe, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_huge_fixed_dims_are_no_probe_and_no_crash(tmp_path: Path) -> None:
    """A model whose fixed input dims no probe run can hold: no sizing is offered (it used
    to end in numpy's 'array is too big'), and opsdk rewrite still writes the copy."""
    from opsdk.cli import main
    from opsdk.onnx._probe import ProbeTooBig

    big = [1 << 40, 1 << 40]
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", T.FLOAT, big)],
                          [helper.make_tensor_value_info("y", T.FLOAT, big)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    assert runnable_shapes(model) is None
    with pytest.raises(ProbeTooBig, match=r"input 'x' of shape \(1099511627776, 1099511627776\)"
                       r" would take \d+ bytes for one probe run"):
        probe_feeds(model, {})
    onnx.save(model, tmp_path / "big.onnx")
    assert main(["rewrite", str(tmp_path / "big.onnx"), "-o", str(tmp_path / "out.onnx"),
                 "--opset", "17"]) == 0
    assert onnx.load(tmp_path / "out.onnx").graph.node[0].op_type == "Relu"
