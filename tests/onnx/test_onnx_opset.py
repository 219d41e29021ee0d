"""``opsdk rewrite --opset N`` / :func:`opsdk.onnx.lower_opset` (issue 24 item 9): exports at
opset 20 (torch 2.13's dynamo default; ``affine_grid`` needs 20 in either exporter) taken
down to what ATC of CANN 8 reads, where ``onnx.version_converter`` has no way: Gelu and
AffineGrid do not exist before 20, GridSample 20, ConstantOfShape 20 and Identity 16 have
no adapter. Every result is run by ONNX Runtime against the original."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper

from opsdk.cli import main
from opsdk.onnx import ModelError, _opset, lower_opset

RNG = np.random.default_rng(9)


def one_node(op: str, opset: int, inputs: list[tuple[str, int, list[Any]]], **attrs: Any
             ) -> onnx.ModelProto:
    node = helper.make_node(op, [n for n, _, _ in inputs], ["y"], name=op.lower(), **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info("y", T.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=10)


def run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def ops_of(model: onnx.ModelProto) -> set[str]:
    return {n.op_type for n in model.graph.node}


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_20_is_expanded_to_its_function_body(approximate: str) -> None:
    m = one_node("Gelu", 20, [("x", T.FLOAT, ["N", 16])], approximate=approximate)
    x = RNG.standard_normal((3, 16)).astype(np.float32) * 3
    low = lower_opset(m, 18, {"x": x})
    assert [o.version for o in low.model.opset_import] == [18]
    assert "Gelu" not in ops_of(low.model)
    assert ("Tanh" if approximate == "tanh" else "Erf") in ops_of(low.model)
    assert [r.action for r in low.records] == ["expanded", "converted", "checked"]
    assert low.records[0].node == "'gelu' (Gelu)"
    np.testing.assert_allclose(run(low.model, {"x": x}), run(m, {"x": x}), rtol=1e-6, atol=1e-6)
    with pytest.raises(Exception, match="Gelu"):  # the converter alone cannot
        onnx.version_converter.convert_version(m, 18)


@pytest.mark.parametrize("align", [0, 1])
def test_affine_grid_20_becomes_plain_arithmetic_without_if(align: int) -> None:
    """ONNX's own function body tests the rank with an If (which ATC runs badly, and which
    the converter broke: ONNX Runtime failed in a Split inside it); the 2-D form is written
    directly."""
    m = one_node("AffineGrid", 20, [("theta", T.FLOAT, ["N", 2, 3]), ("size", T.INT64, [4])],
                 align_corners=align)
    low = lower_opset(m, 18)
    assert "AffineGrid" not in ops_of(low.model) and "If" not in ops_of(low.model)
    assert {"Range", "MatMul"} <= ops_of(low.model)
    for size in ([2, 1, 5, 7], [3, 2, 4, 1], [1, 1, 1, 6]):
        theta = RNG.standard_normal((size[0], 2, 3)).astype(np.float32)
        feeds = {"theta": theta, "size": np.array(size, np.int64)}
        got = run(low.model, feeds)
        # torch.nn.functional.affine_grid's definition: centres in [-1, 1]; with
        # align_corners the corner centres, and 0 along an axis of size 1
        h, w = size[2], size[3]

        def centres(n: int) -> np.ndarray:
            if align:
                return np.zeros(1) if n == 1 else np.linspace(-1, 1, n)
            return (2 * np.arange(n) + 1) / n - 1

        base = np.stack(np.broadcast_arrays(centres(w)[None, :], centres(h)[:, None],
                                            np.ones((h, w))), -1)
        want = np.einsum("hwi,nji->nhwj", base, theta.astype(np.float64))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        if h > 1 and w > 1 or not align:  # ONNX Runtime agrees but for align on size 1
            np.testing.assert_allclose(got, run(m, feeds), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode, old", [("linear", "bilinear"), ("cubic", "bicubic"),
                                       ("nearest", "nearest")])
def test_grid_sample_20_is_grid_sample_16(mode: str, old: str) -> None:
    m = one_node("GridSample", 20, [("x", T.FLOAT, [2, 3, 6, 5]), ("grid", T.FLOAT, [2, 4, 4, 2])],
                 mode=mode, padding_mode="border")
    feeds = {"x": RNG.standard_normal((2, 3, 6, 5)).astype(np.float32),
             "grid": RNG.uniform(-1.1, 1.1, (2, 4, 4, 2)).astype(np.float32)}
    low = lower_opset(m, 16, feeds)
    (node,) = low.model.graph.node
    assert node.domain == "" and node.op_type == "GridSample"
    assert {a.name: a.s.decode() for a in node.attribute if a.type == onnx.AttributeProto.STRING
            }["mode"] == old
    assert low.records[0].action == "adapted" and low.records[0].node == "'gridsample' (GridSample)"
    assert not {o.domain for o in low.model.opset_import} - {""}
    np.testing.assert_allclose(run(low.model, feeds), run(m, feeds), rtol=1e-6, atol=1e-6)


def test_grid_sample_on_5d_input_has_no_older_form() -> None:
    m = one_node("GridSample", 20, [("x", T.FLOAT, [1, 1, 2, 3, 4]),
                                    ("grid", T.FLOAT, [1, 2, 2, 2, 3])])
    with pytest.raises(ModelError, match=r"'gridsample' \(GridSample\): GridSample on rank-5 "
                                         r"input exists only since opset 20"):
        lower_opset(m, 18)


def test_layer_normalization_17_goes_to_15_for_older_cann() -> None:
    """LayerNormalization's body holds an Identity 16, which the converter has no adapter
    for either."""
    scale = onnx.numpy_helper.from_array(RNG.random(8).astype(np.float32) + 0.5, "s")
    m = one_node("LayerNormalization", 17, [("x", T.FLOAT, ["N", 8]), ("s", T.FLOAT, [8])])
    m.graph.initializer.append(scale)
    x = RNG.standard_normal((4, 8)).astype(np.float32)
    low = lower_opset(m, 15, {"x": x})
    assert "LayerNormalization" not in ops_of(low.model)
    assert [r.action for r in low.records][-2:] == ["converted", "checked"]
    np.testing.assert_allclose(run(low.model, {"x": x}), run(m, {"x": x}), rtol=1e-5, atol=1e-5)


def test_an_op_without_any_older_form_is_an_error_naming_it() -> None:
    m = one_node("ImageDecoder", 20, [("data", T.UINT8, [100])])
    m.graph.output[0].type.tensor_type.elem_type = T.UINT8
    with pytest.raises(ModelError, match=r"'imagedecoder' \(ImageDecoder\): ImageDecoder exists "
                                         r"since ai.onnx opset 20.*re-export at opset 18"):
        lower_opset(m, 18)


def test_a_wrong_result_is_caught_by_the_comparison(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check compares, it does not trust: an expansion that is wrong is refused."""
    def wrong(node: onnx.NodeProto, types: Any, name: Any) -> list[onnx.NodeProto]:
        return [helper.make_node("Relu", [node.input[0]], list(node.output))]

    monkeypatch.setitem(_opset.EXPANSIONS, "Gelu", wrong)
    m = one_node("Gelu", 20, [("x", T.FLOAT, [8])])
    x = np.linspace(-3, 3, 8).astype(np.float32)
    with pytest.raises(ModelError, match=r"outputs differ from the original's by 0\.1[0-9]* on x 8"):
        lower_opset(m, 18, {"x": x})


def test_nothing_to_lower_is_recorded() -> None:
    m = one_node("Relu", 17, [("x", T.FLOAT, [2])])
    low = lower_opset(m, 18)
    assert [r.action for r in low.records] == ["skipped"] and low.model is not m


def test_cli_opset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, dst = tmp_path / "m.onnx", tmp_path / "m18.onnx"
    onnx.save(one_node("Gelu", 20, [("x", T.FLOAT, ["N", 16])]), str(src))
    assert main(["rewrite", str(src), "-o", str(dst), "--opset", "18"]) == 0
    out = capsys.readouterr().out
    assert "expanded  'gelu' (Gelu): into its ONNX function body" in out
    assert "checked   the model: ONNX Runtime gives the same outputs as the original's on x " \
           "1x16" in out
    assert "wrote" in out and "ai.onnx opset 20 -> 18" in out
    assert [o.version for o in onnx.load(str(dst)).opset_import] == [18]
    assert main(["rewrite", str(src), "-o", str(tmp_path / "x.onnx"), "--opset", "3"]) == 1
    assert "--opset 3: give an ai.onnx opset from 7 to" in capsys.readouterr().err
