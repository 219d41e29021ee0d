"""``opsdk export`` and ``opsdk rewrite`` from the command line."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from opsdk.cli import main
from opsdk.onnx import Session, load_model


def test_export_writes_a_checked_model(tmp_path, capsys):
    out = tmp_path / "t.onnx"
    rc = main(["export", "ThresholdedRelu", "-o", str(out), "--shape", "x=N,3,8",
               "--dtype", "float16", "--attr", "alpha=0.25"])
    assert rc == 0
    assert "wrote" in capsys.readouterr().out
    m = load_model(out)
    onnx.checker.check_model(m)  # plain ONNX accepts the written file's structure
    assert m.graph.input[0].type.tensor_type.elem_type == TensorProto.FLOAT16
    assert m.graph.node[0].attribute[0].f == 0.25
    (y,) = Session(m).run(None, {"x": np.full((2, 3, 8), 0.5, np.float16)})
    assert y.shape == (2, 3, 8) and float(y.max()) == 0.5


def test_export_never_overwrites_without_force(tmp_path, capsys):
    out = tmp_path / "t.onnx"
    out.write_text("keep me")
    assert main(["export", "ThresholdedRelu", "-o", str(out), "--shape", "x=4"]) == 1
    assert "exists; pass --force" in capsys.readouterr().err
    assert out.read_text() == "keep me"
    assert main(["export", "ThresholdedRelu", "-o", str(out), "--shape", "x=4", "--force",
                 "--with-function"]) == 0
    assert "+ fallback function" in capsys.readouterr().out
    assert len(load_model(out).functions) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--shape", "x"], r"--shape 'x': expected NAME=VALUE"),
        (["--shape", "x=1,,2"], r"--shape x=1,,2: empty dim"),
        (["--shape", "x=4", "--dtype", "float16", "--dtype", "float32"], r"--dtype given 2 times"),
        (["--shape", "x=4", "--attr", "gamma=2"], r"unknown attribute 'gamma'"),
        (["--shape", "x=4", "--opset", "12", "--with-function"], r"needs opset >= 15"),
    ],
)
def test_export_argument_errors(tmp_path, capsys, args, message):
    import re

    assert main(["export", "ThresholdedRelu", "-o", str(tmp_path / "o.onnx"), *args]) == 1
    assert re.search(message, capsys.readouterr().err)
    assert not (tmp_path / "o.onnx").exists()


def conv_bn_relu_model():
    rng = np.random.default_rng(3)
    inits = [
        numpy_helper.from_array(rng.normal(size=(4, 3, 3, 3)).astype(np.float32), "w"),
        numpy_helper.from_array(rng.random(4).astype(np.float32) + 0.5, "s"),
        numpy_helper.from_array(rng.normal(size=4).astype(np.float32), "b"),
        numpy_helper.from_array(rng.normal(size=4).astype(np.float32), "m"),
        numpy_helper.from_array(rng.random(4).astype(np.float32) + 0.5, "v"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"], name="bn"),
        helper.make_node("Relu", ["n"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], initializer=inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)], ir_version=8)


def test_rewrite_fuse_writes_and_reports(tmp_path, capsys):
    src, dst = tmp_path / "in.onnx", tmp_path / "out.onnx"
    onnx.save(conv_bn_relu_model(), str(src))
    # 3 input channels: measured slower than ONNX Runtime, so fused only when forced
    assert main(["rewrite", str(src), "-o", str(dst), "--fuse", "conv-bn-relu",
                 "--force-fuse"]) == 0
    out = capsys.readouterr().out
    assert "fused" in out and "wrote" in out and "1 rewrite(s)" in out
    assert [n.op_type for n in load_model(dst).graph.node] == ["FusedConvBnRelu"]
    assert main(["rewrite", str(src), "-o", str(dst), "--fuse", "conv-bn-relu"]) == 1
    assert "exists; pass --force" in capsys.readouterr().err
    assert main(["rewrite", str(src), "-o", str(dst), "--fuse", "conv-bn-relu", "--force",
                 "--force-fuse", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["changed"] == 1 and report["records"][0]["action"] == "fused"


def test_rewrite_needs_something_to_do_and_a_readable_model(tmp_path, capsys):
    src = tmp_path / "in.onnx"
    onnx.save(conv_bn_relu_model(), str(src))
    assert main(["rewrite", str(src), "-o", str(tmp_path / "o.onnx")]) == 1
    assert "nothing to do" in capsys.readouterr().err
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x01\x02\x03")
    assert main(["rewrite", str(bad), "-o", str(tmp_path / "o.onnx"), "--replace", "GridSample"]) == 1
    err = capsys.readouterr().err
    assert "bad.onnx" in err and "Traceback" not in err


def test_rewrite_still_writes_when_onnx_rejected_the_input_already(tmp_path, capsys):
    m = conv_bn_relu_model()
    m.graph.output[0].type.tensor_type.shape.dim[1].dim_value = 5  # wrong: Conv makes 4
    src, dst = tmp_path / "in.onnx", tmp_path / "out.onnx"
    onnx.save(m, str(src))
    assert main(["rewrite", str(src), "-o", str(dst), "--fuse", "conv-bn-relu"]) == 0
    assert "ONNX's checks reject the input model too" in capsys.readouterr().err
    assert dst.exists()
