"""Output dims npu_ge computes: derived from the graph, written in its grammar, proven by runs.

The grammar and the evaluator mirror the GE backend's source (``ModelState::ExtractVariables``
/ ``FindAndSetDim``, ``Inference::ReplaceVariables`` / ``InfixToPostfix`` /
``EvaluatePostfix``); see opsdk/triton/_npu_ge_expr.py. Derived names are checked against
ONNX Runtime's real output shapes, and the written model is read back with ONNX Runtime
1.23.2 (the version the backend links) where its venv exists.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from opsdk.cli import main
from opsdk.onnx._dimexpr import Dim
from opsdk.onnx._dimprop import propagate_dims
from opsdk.triton import (
    AscendOptions,
    RepositoryOptions,
    TritonConfigError,
    build_repository,
    run_like_npu_ge,
)
from opsdk.triton import _npu_ge_expr as ge_expr
from tests._helpers.dims_repo import _model, build, out_dims
from tests._helpers.golden import check_golden
from tests._helpers.triton_models import parse_config

H, W, N = Dim.symbol("h"), Dim.symbol("w"), Dim.symbol("n")


# ------------------------------------------------------------------------ the algebra
def test_floor_division_is_kept_canonical() -> None:
    conv = (W + 2 - 3).floordiv(2) + 1  # kernel 3, pads 1+1, stride 2
    assert str(conv) == "floor((w + 1)/2)"
    assert conv.floordiv(2).floordiv(2) == (W + 1).floordiv(8)  # nested floors merge
    assert (W * 4 + 6).floordiv(2) == W * 2 + 3  # exact division leaves no floor
    assert (W - 3).floordiv(2) == (W + 1).floordiv(2) - 2  # numerators kept non-negative
    assert (W + 5).ceildiv(4) == (W + 8).floordiv(4)
    assert Dim.const(7).floordiv(2).value() == 3 and not W.is_const()
    with pytest.raises(ValueError, match="divisor must be positive"):
        W.floordiv(0)


def test_dim_evaluation_matches_integer_arithmetic() -> None:
    exprs = {
        "conv": lambda h, w: ((w + 2 - 3) // 2 + 1),
        "pool_ceil": lambda h, w: -(-(h - 3) // 2) + 1,
        "mixed": lambda h, w: 3 * ((h - 1) // 4) * w - (w + 7) // 3,
    }
    dims = {
        "conv": (W + 2 - 3).floordiv(2) + 1,
        "pool_ceil": (H - 3).ceildiv(2) + 1,
        "mixed": (H - 1).floordiv(4) * 3 * W - (W + 7).floordiv(3),
    }
    for name, f in exprs.items():
        for h, w in itertools.product(range(3, 40, 3), range(1, 50, 7)):
            assert dims[name].evaluate({"h": h, "w": w}) == f(h, w), (name, h, w)


# ----------------------------------------------------------------- the npu_ge grammar
@pytest.mark.parametrize(("text", "value"), [
    ("8/2/2", 2),                 # left to right
    ("2+3*4", 14), ("(2+3)*4", 20),
    ("0-7/2", -3),                # C division truncates toward zero
    ("((seq_len*1)-0)/1", 9),     # the backend's own example
    ("seq_len  *2", 18),          # spaces are skipped
])
def test_evaluate_mirrors_the_backend(text: str, value: int) -> None:
    assert ge_expr.evaluate(text, {"seq_len": 9}) == value


def test_the_backends_quirks_are_mirrored() -> None:
    assert ge_expr.variables("p2o.DynamicDimension.1") == ["p2o", "DynamicDimension"]
    # replacement stops names only at letters and digits: 'h' is replaced inside 'x_h' too
    assert ge_expr.evaluate("h+x_h", {"h": 5, "x_h": 7}) == 10  # "5+x_5": not 12
    with pytest.raises(ge_expr.ExpressionError, match="lacks an operand"):
        ge_expr.evaluate("-1+w", {"w": 4})  # no unary minus
    with pytest.raises(ge_expr.ExpressionError, match="division by zero"):
        ge_expr.evaluate("w/(w-w)", {"w": 4})
    with pytest.raises(ge_expr.ExpressionError, match="overflows the C int"):
        ge_expr.evaluate("w*w*w", {"w": 2000})
    with pytest.raises(ge_expr.ExpressionError, match="DynamicDimension is not an input dim"):
        ge_expr.evaluate("p2o.DynamicDimension.1", {"p2o": 1})


@pytest.mark.parametrize(("text", "match"), [
    ("w.5", r"'\.' is not in npu_ge's grammar"),
    ("(w+1", "unbalanced parentheses"),
    ("h*2", "h is not an input dim name"),
    ("w+x_w", "npu_ge replaces 'w' inside 'x_w'"),
    ("w+", "lacks an operand"),
])
def test_check_refuses_what_the_backend_cannot_evaluate(text: str, match: str) -> None:
    with pytest.raises(ge_expr.ExpressionError, match=match):
        ge_expr.check(text, ["w", "x_w"])


def test_rendered_dims_evaluate_like_the_dims() -> None:
    dims = [(W + 1).floordiv(8), (H - 3).ceildiv(2) + 1, W * 4 - 4, (W - 3).floordiv(2),
            (H + 1).floordiv(2).floordiv(3) * W + 2 * H, Dim.const(5) - W]
    for d in dims:
        text = ge_expr.render(d)
        ge_expr.check(text, ["h", "w"])
        for h, w in itertools.product((1, 2, 7, 48, 161), (3, 9, 64, 97)):
            assert ge_expr.evaluate(text, {"h": h, "w": w}) == d.evaluate({"h": h, "w": w}), text
    assert ge_expr.render((W + 1).floordiv(8)) == "(w+1)/8"
    assert ge_expr.render(Dim.const(5) - W) == "5-w"
    assert ge_expr.render(-W) == "0-w"


# -------------------------------------------------------------------- the propagation


def _const(name: str, value: object, dtype: object = np.int64) -> onnx.NodeProto:
    arr = np.asarray(value, dtype)  # type: ignore[call-overload]
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(arr, name))


def conv_model(out_dims: list[object] | None = None) -> onnx.ModelProto:
    """x[n, 3, h, w] -> Conv 3x3 stride 2 pad 1 -> Relu -> y[n, 4, ?, ?]."""
    w = numpy_helper.from_array(np.full((4, 3, 3, 3), 0.1, np.float32), "wt")
    m = _model([helper.make_node("Conv", ["x", "wt"], ["c"], strides=[2, 2], pads=[1, 1, 1, 1]),
                helper.make_node("Relu", ["c"], ["y"])], {"x": ["n", 3, "h", "w"]}, inits=[w])
    m.graph.output[0].type.tensor_type.shape.CopyFrom(
        helper.make_tensor_type_proto(T.FLOAT, out_dims or ["n", 4, None, None]).tensor_type.shape)
    return m


def resize_model(scale: float) -> onnx.ModelProto:
    return _model([_const("scales", [1, 1, scale, scale], np.float32),
                   helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest")],
                  {"x": ["n", 3, "h", "w"]})


def reshape_model() -> onnx.ModelProto:
    """Shape -> Gather -> Concat -> Reshape [n, -1], then Flatten and Transpose."""
    return _model([
        helper.make_node("Shape", ["x"], ["s"]), _const("i0", [0]),
        helper.make_node("Gather", ["s", "i0"], ["n0"]), _const("m1", [-1]),
        helper.make_node("Concat", ["n0", "m1"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["r"]),
        _const("ax", [2]), helper.make_node("Unsqueeze", ["r", "ax"], ["u"]),
        helper.make_node("Flatten", ["u"], ["f"], axis=1),
        helper.make_node("Transpose", ["f"], ["y"], perm=[1, 0]),
    ], {"x": ["n", 3, "h", "w"]})


@pytest.mark.parametrize(("model", "expected"), [
    (conv_model(), ["n", "4", "floor((h + 1)/2)", "floor((w + 1)/2)"]),
    (resize_model(2.0), ["n", "3", "2*h", "2*w"]),
    (resize_model(0.5), ["n", "3", "floor(h/2)", "floor(w/2)"]),
    (reshape_model(), ["3*h*w", "n"]),
], ids=["conv-stride-2", "resize-2", "resize-half", "shape-reshape-flatten"])
def test_propagation_on_small_graphs(model: onnx.ModelProto, expected: list[str]) -> None:
    dims = propagate_dims(model)["y"]
    assert dims is not None and [str(d) for d in dims] == expected


def test_propagation_of_pooling_transposed_conv_slice_and_concat() -> None:
    wt = numpy_helper.from_array(np.zeros((4, 2, 4, 4), np.float32), "wt")
    model = _model([
        _const("st", [1]), _const("en", [-1]), _const("ax", [3]),
        helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3, 3], strides=[2, 2],
                         ceil_mode=1),
        helper.make_node("ConvTranspose", ["p", "wt"], ["t"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Slice", ["t", "st", "en", "ax"], ["s"]),
        helper.make_node("Concat", ["s", "s"], ["y"], axis=2),
    ], {"x": ["n", 4, "h", "w"]}, inits=[wt])
    dims = propagate_dims(model)["y"]
    assert dims is not None
    h = dims[2]
    assert [str(d) for d in dims[:2]] == ["n", "2"]
    x = np.zeros((1, 4, 13, 20), np.float32)
    import onnxruntime as ort

    (y,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    assert h.evaluate({"h": 13}) == y.shape[2] and dims[3].evaluate({"w": 20}) == y.shape[3]


def test_a_data_dependent_dim_is_not_determined() -> None:
    model = _model([helper.make_node("NonZero", ["x"], ["y"])], {"x": ["n"]})
    assert propagate_dims(model)["y"] is None
    # ceil_mode whose last window may start in the padding: depends on h modulo the stride
    pool = _model([helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3], strides=[3],
                                    pads=[1, 1], ceil_mode=1)], {"x": ["n", 4, "h"]})
    dims = propagate_dims(pool)["y"]
    assert dims is not None and dims[2] is None


# ------------------------------------------------------------------- the ascend build




def test_derived_names_are_written_and_config_is_golden(tmp_path: Path) -> None:
    notes: list[str] = []
    onnx.save(conv_model(), str(tmp_path / "src.onnx"))
    folder = build_repository(tmp_path / "src.onnx", tmp_path / "repo", RepositoryOptions(
        "net", target="ascend", ascend=AscendOptions(cann="8.1.RC1")), report=notes.append)
    assert out_dims(folder) == ["n", 4, "(h+1)/2", "(w+1)/2"]
    config = (folder / "config.pbtxt").read_text()
    check_golden("triton/ascend_derived/config.pbtxt", config)
    assert parse_config(config).max_batch_size == 0  # type: ignore[attr-defined]
    assert any("max_batch_size 0" in n for n in notes)
    assert any("checked with ONNX Runtime on 2 probes (n=1, h=64, w=96; n=2, h=96, w=160)" in n
               for n in notes), notes


@pytest.mark.parametrize(("scale", "expected"), [(2.0, ["n", 3, "2*h", "2*w"]),
                                                (0.5, ["n", 3, "h/2", "w/2"])])
def test_resize_builds_with_its_scale_in_the_names(tmp_path: Path, scale: float,
                                                   expected: list[object]) -> None:
    assert out_dims(build(tmp_path, resize_model(scale))) == expected


def test_reshape_chain_builds_unless_it_needs_the_dropped_leading_dim(tmp_path: Path) -> None:
    """y = [3*h*w, n]: its dim 1 is the leading input dim, which npu_ge leaves out when not
    batching; with a second input whose leading dim differs, npu_ge resolves 'n'."""
    with pytest.raises(TritonConfigError, match=r"dim 1 is variable but its expression n uses "
                       r"n, the leading dim of every input"):
        build(tmp_path / "a", reshape_model())
    model = reshape_model()
    model.graph.input.append(helper.make_tensor_value_info("z", T.FLOAT, ["m"]))
    model.graph.output.append(helper.make_tensor_value_info("z2", T.FLOAT, None))
    model.graph.node.append(helper.make_node("Relu", ["z"], ["z2"]))
    assert out_dims(build(tmp_path / "b", model)) == ["3*h*w", "n"]


def test_paddle_style_input_dims_get_identifier_names(tmp_path: Path) -> None:
    model = conv_model()
    dims = model.graph.input[0].type.tensor_type.shape.dim
    dims[0].dim_value = -1          # paddle2onnx's dynamic batch
    dims[2].dim_param = "p2o.DynamicDimension.1"
    dims[3].dim_param = "?"
    folder = build(tmp_path, model)
    x = onnx.load(str(folder / "1" / "model.onnx")).graph.input[0]
    assert [d.dim_param or d.dim_value for d in x.type.tensor_type.shape.dim] == [
        "x_0", 3, "p2o_DynamicDimension_1", "x_3"]
    # 'n' no longer names an input dim: the output's leading dim is derived again
    assert out_dims(folder) == ["x_0", 4, "(p2o_DynamicDimension_1+1)/2", "(x_3+1)/2"]


def test_batching_writes_names_where_npu_ge_reads_them(tmp_path: Path) -> None:
    """With max_batch_size > 0 the backend reads config dim c's name at ONNX dim c."""
    model = _model([helper.make_node("Concat", ["x", "x"], ["y"], axis=1)], {"x": ["n", "s"]})
    with pytest.warns(UserWarning, match="will not merge"):
        folder = build(tmp_path / "a", model, max_batch_size=4)
    assert out_dims(folder) == ["2*s", "2*s"]
    assert "y: [batch, 2*s]" in (folder / "config.pbtxt").read_text()
    with pytest.raises(TritonConfigError, match=r"dim 2 is variable and dim 1 is fixed \(4\); "
                       r"when batching.*--max-batch-size 0"), pytest.warns(UserWarning):
        build(tmp_path / "b", conv_model(), max_batch_size=4)


def test_onnx_shape_inference_names_what_opsdk_does_not_propagate(tmp_path: Path) -> None:
    """An Einsum (not propagated by opsdk) carries 'seq' through ONNX shape inference."""
    model = _model([helper.make_node("Einsum", ["x"], ["y"], equation="sab->sba")],
                   {"x": ["seq", 2, 3]})
    model.graph.output[0].type.tensor_type.shape.CopyFrom(
        helper.make_tensor_type_proto(T.FLOAT, [None, 3, None]).tensor_type.shape)
    assert propagate_dims(model)["y"] is None
    folder = build(tmp_path, model, probe_dims=((("seq", 3),), (("seq", 5),)))
    assert out_dims(folder) == ["seq", 3, 2]


def nonzero_model() -> onnx.ModelProto:
    """x[b, h] -> y = NonZero(ConstantOfShape([h], 1)) [1, ?]: neither opsdk nor ONNX shape
    inference determines NonZero's count (a data-dependent size), which is h here."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "axes1"], ["h"], axis=0),
             helper.make_node("ConstantOfShape", ["h"], ["ones"],
                              value=numpy_helper.from_array(np.array([1], np.int64))),
             helper.make_node("NonZero", ["ones"], ["y"])]
    inits = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (("axes1", [1]),)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, ["b", "h"])],
                              [helper.make_tensor_value_info("y", T.INT64, [1, None])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    return model


def test_undeterminable_dim_is_refused_then_given_by_the_user(tmp_path: Path) -> None:
    model = nonzero_model()
    # NonZero of ones([h]) counts h: the probes find it (random and zero x alike)
    assert out_dims(build(tmp_path / "f", model)) == [1, "h"]
    counted = _model([helper.make_node("NonZero", ["x"], ["y"])], {"x": ["b", "h"]})
    counted.graph.output[0].type.tensor_type.elem_type = T.INT64
    del counted.graph.output[0].type.tensor_type.shape.dim[:]
    counted.graph.output[0].type.tensor_type.shape.dim.add().dim_value = 2
    counted.graph.output[0].type.tensor_type.shape.dim.add()
    with pytest.raises(TritonConfigError, match=r"output 'y' dim 1 is variable but the graph "
                       r"does not determine it.*input dims are named h \(b, the leading dim "
                       r"of every input, is left out.*--output-dims y="):
        build(tmp_path / "a", counted)  # NonZero(x) counts x's data
    folder = build(tmp_path / "b", model, output_dims=(("y", ("1", "h")),))
    assert out_dims(folder) == [1, "h"]
    with pytest.raises(TritonConfigError, match=r"output 'y' dim 1 named 'h\+1' gives 65 for "
                       r"input dims b=1, h=64, but ONNX Runtime gives 64"):
        build(tmp_path / "c", model, output_dims=(("y", ("1", "h+1")),))
    with pytest.raises(TritonConfigError, match=r"--output-dims y dim 1 'b': b is not an input "
                       r"dim name; .*over the input dim names \(h\) \(b, the leading"):
        build(tmp_path / "d", model, output_dims=(("y", ("1", "b")),))
    with pytest.raises(TritonConfigError, match="gives 1 dims for output 'y', which has 2"):
        build(tmp_path / "e", model, output_dims=(("y", ("h",)),))


def test_leading_dim_npu_ge_drops_is_refused_in_inner_dims(tmp_path: Path) -> None:
    """Unbatched, one input x[n, 4]: npu_ge resolves no output name through 'n'."""
    model = _model([_const("shape", [1, -1]),
                    helper.make_node("Reshape", ["x", "shape"], ["y"])], {"x": ["n", 4]})
    with pytest.raises(TritonConfigError, match=r"output 'y' dim 1 is variable but its "
                       r"expression 4\*n uses n, the leading dim of every input"):
        build(tmp_path / "a", model)
    with pytest.raises(TritonConfigError, match="output 'y' has a fixed leading dim 1"):
        build(tmp_path / "b", model, max_batch_size=2)  # and batching cannot help here


def test_probe_sizes_the_model_accepts(tmp_path: Path) -> None:
    """x[n, s] + a [64] constant runs only for s in (1, 64): the default probes cannot find
    two sizings, the user's can."""
    bias = numpy_helper.from_array(np.zeros(64, np.float32), "bias")
    model = _model([helper.make_node("Add", ["x", "bias"], ["a"]),
                    helper.make_node("Concat", ["a", "x"], ["y"], axis=1)],
                   {"x": ["n", "s"]}, inits=[bias])
    with pytest.raises(TritonConfigError, match=r"ONNX Runtime could not run the model with "
                       r"input dims n=2, s=96.*--probe-dims NAME=SIZE"):
        build(tmp_path / "a", model)
    folder = build(tmp_path / "b", model, probe_dims=((("n", 1), ("s", 1)), (("n", 3), ("s", 64))))
    assert out_dims(folder) == ["n", "s+64"]


def test_shape_gears_are_the_probes(tmp_path: Path) -> None:
    notes: list[str] = []
    onnx.save(conv_model(), str(tmp_path / "src.onnx"))
    build_repository(tmp_path / "src.onnx", tmp_path / "repo", RepositoryOptions(
        "net", target="ascend",
        ascend=AscendOptions(cann="8.1.RC1", shape_gears=((1, 32, 32), (2, 64, 96)))),
        report=notes.append)
    assert any("2 probes (n=1, h=32, w=32; n=2, h=64, w=96)" in n for n in notes), notes


def test_cli_output_and_probe_dims(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    onnx.save(nonzero_model(), str(tmp_path / "m.onnx"))
    assert main(["triton", "build", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "r"),
                 "--name", "t", "--target", "ascend", "--output-dims", "y=1,h",
                 "--probe-dims", "b=5,h=7", "--probe-dims", "b=6,h=2"]) == 0
    err = capsys.readouterr().err
    assert "output 'y' dim 1 is 'h' (--output-dims)" in err
    assert "2 probes (b=5, h=7; b=6, h=2)" in err
    with pytest.raises(SystemExit):
        main(["triton", "build", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "r"),
              "--name", "t", "--target", "ascend", "--probe-dims", "h=five"])
    assert "expected NAME=SIZE" in capsys.readouterr().err
    assert main(["triton", "build", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "c"),
                 "--name", "t", "--output-dims", "y=1,h"]) == 1
    assert "output_dims is an npu_ge option" in capsys.readouterr().err


def test_onnxruntime_1_23_2_reads_the_names_npu_ge_evaluates(tmp_path: Path, ort_1232: Path,
                                                            ) -> None:
    folder = build(tmp_path, conv_model())
    x = np.ones((2, 3, 37, 50), np.float32)
    run = run_like_npu_ge(folder / "1" / "model.onnx", {"x": x}, python=ort_1232)
    (name, _, dims), = run.outputs
    assert dims == ["n", 4, "(h+1)/2", "(w+1)/2"]
    sizes = {"n": 2, "h": 37, "w": 50}
    got = [d if isinstance(d, int) else ge_expr.evaluate(d, sizes) for d in dims]
    assert tuple(got) == run.results[name].shape == (2, 4, 19, 25)


@pytest.mark.parametrize("name", ["opsdk.onnx._dimexpr", "opsdk.onnx._dimprop",
                                  "opsdk.triton._npu_ge_expr", "opsdk.triton._ascend_dims"])
def test_docstring_examples(name: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0 and result.attempted > 0


def test_triton_check_evaluates_the_names_as_npu_ge_does(tmp_path: Path, ort_1232: Path) -> None:
    """`opsdk triton check` finds sizes the model runs on by itself and recomputes each output
    dim from its name, batching shift included; the unshifted names fail it."""
    model = _model([helper.make_node("Concat", ["x", "x"], ["y"], axis=1)], {"x": ["n", "s"]})
    with pytest.warns(UserWarning, match="will not merge"):
        folder = build(tmp_path, model, max_batch_size=4)
    from opsdk.triton import check_npu_ge_folder

    assert check_npu_ge_folder(folder, cann="8.1.RC1", python=ort_1232).ok
    written = onnx.load(str(folder / "1" / "model.onnx"))
    written.graph.output[0].type.tensor_type.shape.dim[0].dim_param = "n"  # as ONNX means it
    onnx.save(written, str(folder / "1" / "model.onnx"))
    report = check_npu_ge_folder(folder, cann="8.1.RC1", python=ort_1232, dims={"n": 3, "s": 5})
    assert report.problems == ["output 'y' dim 1: npu_ge computes n = 3, ONNX Runtime gives 10"]
    conv = build(tmp_path / "conv", conv_model())  # runs only where the default sizes fit
    assert check_npu_ge_folder(conv, cann="8.1.RC1", python=ort_1232).ok


def _i64(name: str, values: list[int]) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, np.int64), name)


#: op -> (nodes, initializers): each graph maps x[n, c=4, h, w] to y; its derived dims must
#: equal ONNX Runtime's output shape at several sizes
OP_CASES: dict[str, tuple[list[onnx.NodeProto], list[onnx.TensorProto]]] = {
    "MaxPool-ceil-pads": ([helper.make_node(
        "MaxPool", ["x"], ["y"], kernel_shape=[3, 4], strides=[2, 3], pads=[1, 0, 1, 1],
        ceil_mode=1)], []),
    "AveragePool-floor": ([helper.make_node(
        "AveragePool", ["x"], ["y"], kernel_shape=[3, 2], strides=[3, 2])], []),
    "Conv-same": ([helper.make_node(
        "Conv", ["x", "k"], ["y"], strides=[2, 3], auto_pad="SAME_UPPER")],
        [numpy_helper.from_array(np.ones((2, 4, 3, 3), np.float32), "k")]),
    "Conv-dilated-grouped": ([helper.make_node(
        "Conv", ["x", "k"], ["y"], strides=[1, 2], dilations=[2, 3], pads=[2, 0, 1, 3], group=2)],
        [numpy_helper.from_array(np.ones((6, 2, 3, 3), np.float32), "k")]),
    "ConvTranspose-output-padding": ([helper.make_node(
        "ConvTranspose", ["x", "k"], ["y"], strides=[3, 2], output_padding=[1, 0])],
        [numpy_helper.from_array(np.ones((4, 2, 3, 3), np.float32), "k")]),
    "Resize-0.5-then-2": ([helper.make_node("Resize", ["x", "", "half"], ["r"], mode="nearest"),
                           helper.make_node("Resize", ["r", "", "two"], ["y"], mode="linear")],
                          [numpy_helper.from_array(np.array([1, 1, .5, .5], np.float32), "half"),
                           numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "two")]),
    "GlobalAveragePool": ([helper.make_node("GlobalAveragePool", ["x"], ["y"])], []),
    "Pad": ([helper.make_node("Pad", ["x", "p"], ["y"])], [_i64("p", [0, 0, 1, 2, 0, 1, 3, 4])]),
    "Split-equal": ([helper.make_node("Split", ["x"], ["y", "z"], axis=1)], []),
    "ReduceMean-keepdims": ([helper.make_node("ReduceMean", ["x"], ["y"], axes=[1, 3])], []),
    "ReduceSum-drop": ([helper.make_node("ReduceSum", ["x", "a"], ["y"], keepdims=0)],
                       [_i64("a", [-1])]),
    "Slice-step-2": ([helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])],
                     [_i64("s", [1, 0]), _i64("e", [2**62, -1]), _i64("a", [2, 3]),
                      _i64("t", [2, 3])]),
    "Transpose-MatMul": ([helper.make_node("Transpose", ["x"], ["t"], perm=[0, 1, 3, 2]),
                          helper.make_node("MatMul", ["x", "t"], ["y"])], []),
    "DepthToSpace": ([helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2)], []),
    "SpaceToDepth-Flatten": ([helper.make_node("DepthToSpace", ["x"], ["q"], blocksize=2),
                              helper.make_node("SpaceToDepth", ["q"], ["s"], blocksize=2),
                              helper.make_node("Flatten", ["s"], ["y"], axis=2)], []),
    "Tile-Expand": ([helper.make_node("Tile", ["x", "r"], ["t"]),
                     helper.make_node("Expand", ["t", "e"], ["y"])],
                    [_i64("r", [1, 2, 1, 3]), _i64("e", [2, 1, 1, 1, 1])]),
    "Shape-arithmetic-Reshape": ([
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i23"], ["hw"]),
        helper.make_node("Mul", ["hw", "two"], ["hw2"]),
        helper.make_node("Div", ["hw2", "two"], ["hw1"]),
        helper.make_node("Slice", ["s", "z", "two1"], ["nc"]),
        helper.make_node("Concat", ["nc", "hw1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"])],
        [_i64("i23", [2, 3]), _i64("two", [2]), _i64("z", [0]), _i64("two1", [2])]),
    "TopK-Squeeze-Unsqueeze": ([helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1),
                                helper.make_node("Unsqueeze", ["v", "a"], ["u"]),
                                helper.make_node("Squeeze", ["u", "a"], ["y"])],
                               [_i64("k", [3]), _i64("a", [0])]),
}


@pytest.mark.parametrize("op", OP_CASES)
def test_propagated_dims_equal_onnxruntime(op: str) -> None:
    import onnxruntime as ort

    nodes, inits = OP_CASES[op]
    model = _model(nodes, {"x": ["n", 4, "h", "w"]}, inits=inits)
    dims = propagate_dims(model)["y"]
    assert dims is not None and all(d is not None for d in dims), op
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for n, h, w in ((1, 8, 12), (2, 13, 9), (3, 32, 48)):
        (y,) = sess.run(["y"], {"x": np.ones((n, 4, h, w), np.float32)})
        sizes = {"n": n, "h": h, "w": w}
        assert tuple(d.evaluate(sizes) for d in dims if d is not None) == y.shape, (op, sizes)


def _branchy_model() -> onnx.ModelProto:
    """y = x if mode == 3 else x[None]: the If's branches give different ranks, so the graph
    does not determine y's dims (silero-vad's sample-rate branches are like this)."""
    then = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", T.FLOAT, None)])
    other = helper.make_graph([helper.make_node("Unsqueeze", ["x", "zero"], ["e"])], "else", [],
                              [helper.make_tensor_value_info("e", T.FLOAT, None)])
    nodes = [_const("three", 3), _const("zero", [0]),
             helper.make_node("Equal", ["mode", "three"], ["is3"]),
             helper.make_node("If", ["is3"], ["y"], then_branch=then, else_branch=other)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, ["n", 4]),
                     helper.make_tensor_value_info("mode", T.INT64, [])],
        [helper.make_tensor_value_info("y", T.FLOAT, [None, None])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def test_dims_the_graph_does_not_determine_are_fitted_on_probes(tmp_path: Path) -> None:
    """Issue 24: silero-vad needed --output-dims for the ascend target; dims the graph does
    not determine are now fitted on three ONNX Runtime runs (two sizings on random inputs, the
    first again on zeros)
    (an input dim whose size they follow, or a size that never changes), then proven."""
    notes: list[str] = []
    onnx.save(_branchy_model(), str(tmp_path / "src.onnx"))
    folder = build_repository(tmp_path / "src.onnx", tmp_path / "repo", RepositoryOptions(
        "net", target="ascend", ascend=AscendOptions(cann="8.1.RC1")), report=notes.append)
    assert out_dims(folder) == ["n", 4]
    assert any("output 'y' dim 0 is 'n' (the graph does not determine it; it equals n on the "
               "3 probe runs of ONNX Runtime, random and zero inputs" in n for n in notes), notes
    assert any("output 'y' dim 1 is 4 (the graph does not determine it" in n for n in notes)


def test_a_data_dependent_dim_is_not_fitted(tmp_path: Path) -> None:
    """NonZero's count changes with the data (all of a random input, none of zeros): it is
    refused as before (its rank, dim 0, is fixed and fitted)."""
    graph = helper.make_graph(
        [helper.make_node("NonZero", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", T.FLOAT, ["n", 8])],
        [helper.make_tensor_value_info("y", T.INT64, [None, None])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    with pytest.raises(TritonConfigError, match="output 'y' dim 1 is variable but the graph "
                                                r"does not determine it .*a data-dependent"):
        build(tmp_path, model)


def test_a_model_with_every_input_dim_fixed_is_checked_on_one_run(tmp_path: Path) -> None:
    """With nothing to vary, one ONNX Runtime run proves the output sizes (the build asked
    for a second probe sizing that cannot exist)."""
    graph = helper.make_graph(
        [helper.make_node("Concat", ["x", "x"], ["y"], axis=1)], "g",
        [helper.make_tensor_value_info("x", T.FLOAT, [2, 12])],
        [helper.make_tensor_value_info("y", T.FLOAT, [None, None])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    assert out_dims(build(tmp_path, model)) == [2, 24]
