"""Model commands understand opsdk's nodes: a custom node whose outputs carry no type (every
hand-built or rewritten graph has them) gets its types from spec.py before ONNX shape
inference, and a message never suggests an option the user already gave."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import onnx
import onnx.helper as h
import pytest

from opsdk.onnx._schema import infer_shapes

ROOT = Path(__file__).resolve().parents[2]


def _model(path: Path, op: str = "ThresholdedRelu", domain: str = "com.opsdk") -> Path:
    """Relu -> custom node (output 'b' declared nowhere) -> Exp."""
    x = h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 8])
    y = h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 8])
    nodes = [h.make_node("Relu", ["x"], ["a"]),
             h.make_node(op, ["a"], ["b"], domain=domain, name="custom", alpha=0.25),
             h.make_node("Exp", ["b"], ["y"])]
    m = h.make_model(h.make_graph(nodes, "g", [x], [y]),
                     opset_imports=[h.make_opsetid("", 17), h.make_opsetid(domain, 1)])
    onnx.save(m, path)
    return path


def _opsdk(*args: str) -> subprocess.CompletedProcess[str]:
    """A fresh process: no schema registered by earlier tests."""
    return subprocess.run([sys.executable, "-m", "opsdk", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=900)


def test_precision_force_fp16_on_a_custom_node_with_untyped_outputs(tmp_path: Path) -> None:
    model = _model(tmp_path / "untyped.onnx")
    assert not any(v.name == "b" for v in onnx.load(model).graph.value_info)
    proc = _opsdk("precision", str(model), "--precision-mode", "force_fp16",
                  "--input-shape", "x:2,8")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "output y: PASS" in proc.stdout
    assert "custom (ThresholdedRelu -> ThresholdedRelu)" in proc.stdout  # lowered and judged


def test_an_unknown_custom_node_is_named_and_given_options_are_not_suggested(
        tmp_path: Path) -> None:
    model = _model(tmp_path / "warp.onnx", op="Warp", domain="com.acme")
    proc = _opsdk("precision", str(model), "--precision-mode", "force_fp16",
                  "--input-shape", "x:2,8")
    assert proc.returncode == 1
    assert ("node 'custom': ONNX shape inference gives no element type for its output 'b' "
            "(1 such tensors); make com.acme::Warp an opsdk operator (opsdk new Warp, or add "
            "its folder to OPSDK_OPERATORS_PATH)") in proc.stderr
    assert "--input-shape" not in proc.stderr


def test_doctor_and_atc_read_the_model(tmp_path: Path) -> None:
    model = _model(tmp_path / "untyped.onnx")
    proc = _opsdk("doctor", str(model), "--json")
    codes = {f["code"] for f in json.loads(proc.stdout)["findings"]}
    assert codes == {"mixed-default-domain", "builtin-clash"}, proc.stdout + proc.stderr
    proc = _opsdk("atc", str(model), "--soc-version", "Ascend310P3", "--output",
                  str(tmp_path / "out"), "--dry-run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "element type" not in proc.stdout + proc.stderr


def test_rewrite_lowers_a_model_with_untyped_custom_outputs(tmp_path: Path) -> None:
    model = _model(tmp_path / "untyped.onnx")
    proc = _opsdk("rewrite", str(model), "-o", str(tmp_path / "low.onnx"), "--opset", "15")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    low = onnx.load(tmp_path / "low.onnx")
    assert [n.op_type for n in low.graph.node] == ["Relu", "ThresholdedRelu", "Exp"]


@pytest.mark.parametrize("strict", [False, True])
def test_infer_shapes_types_the_custom_outputs_from_spec(tmp_path: Path, strict: bool) -> None:
    model = onnx.load(_model(tmp_path / "untyped.onnx"))
    typed = {v.name: v.type.tensor_type for v in infer_shapes(model, strict_mode=strict)
             .graph.value_info}
    assert typed["b"].elem_type == onnx.TensorProto.FLOAT
    assert [d.dim_value for d in typed["b"].shape.dim] == [2, 8]
