"""Rewrites that pay or do not happen (issue 24 item 1) and GELU decompositions folded into
one Gelu node (item 10). Every rewritten model is run by opsdk's Session against ONNX
Runtime on the original, on the same inputs."""

from __future__ import annotations

import io
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from opsdk.ascend.parser import ATC_NATIVE_FUSIONS
from opsdk.cli import main
from opsdk.onnx import (
    KEEP_BELOW,
    ModelTiming,
    Session,
    fuse_conv_bn_relu,
    replace_ops,
    rewrite,
    time_models,
)
from opsdk.onnx._rewrite import BN_FOLDED, WHOLE_MODEL, cpu_refusal

RNG = np.random.default_rng(24)


def ort_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[Any]:
    return ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)


def conv_block(prefix: str, x: str, cin: int, cout: int, group: int = 1,
               bn: bool = True, k: int = 3) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """Conv (k x k, same padding) -> BatchNormalization -> Relu, or Conv -> Relu (BN folded)."""
    w = (RNG.normal(size=(cout, cin // group, k, k)) * 0.3).astype(np.float32)
    inits = [numpy_helper.from_array(w, prefix + "w")]
    conv = helper.make_node("Conv", [x, prefix + "w"], [prefix + "c"], name=prefix + "conv",
                            pads=[k // 2] * 4, group=group)
    nodes = [conv]
    last = prefix + "c"
    if bn:
        for name, v in (("scale", RNG.random(cout) + 0.5), ("beta", RNG.normal(size=cout)),
                        ("mean", RNG.normal(size=cout)), ("var", RNG.random(cout) + 0.1)):
            inits.append(numpy_helper.from_array(v.astype(np.float32), prefix + name))
        nodes.append(helper.make_node(
            "BatchNormalization", [last, *(prefix + n for n in ("scale", "beta", "mean", "var"))],
            [prefix + "n"], name=prefix + "bn"))
        last = prefix + "n"
    nodes.append(helper.make_node("Relu", [last], [prefix + "r"], name=prefix + "relu"))
    return nodes, inits


def chain_model(blocks: list[tuple[Any, ...]], hw: int = 12) -> onnx.ModelProto:
    """Blocks (prefix, cin, cout, group, bn[, kernel size]) applied in sequence to x."""
    nodes, inits, x = [], [], "x"
    for prefix, cin, cout, group, bn, *k in blocks:
        n, i = conv_block(prefix, x, cin, cout, group, bn, *k)
        nodes += n
        inits += i
        x = prefix + "r"
    cin0 = blocks[0][1]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin0, hw, hw])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def assert_same_as_ort(original: onnx.ModelProto, rewritten: onnx.ModelProto,
                       atol: float = 1e-4) -> None:
    dims = [d.dim_value for d in original.graph.input[0].type.tensor_type.shape.dim]
    feeds = {original.graph.input[0].name: RNG.normal(size=dims).astype(np.float32)}
    (want,) = ort_run(original, feeds)
    (got,) = Session(rewritten).run(None, feeds)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=atol)


# ------------------------------------------------------------------ item 1: conv-bn-relu
def test_ascend_target_keeps_conv_bn_relu_and_says_why(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Item 1: for the Ascend target the rewrite moved every Conv off the AI Core's cube
    unit (FusedConvBnRelu has only an AI CPU kernel) while ATC fuses the chain itself."""
    m = chain_model([("a_", 16, 32, 1, True), ("b_", 32, 32, 1, True)])
    result = rewrite(m, fuse=["conv-bn-relu"], native=ATC_NATIVE_FUSIONS)
    assert result.changed == 0 and result.model == m
    assert [r.action for r in result.records] == ["refused", "refused"]
    assert result.records[0].node == "'a_conv' (Conv) -> 'a_bn' (BatchNormalization) -> " \
                                     "'a_relu' (Relu)"
    assert "ATC fuses Conv+BatchNormalization+Relu on the AI Core" in result.records[0].detail
    src, dst = tmp_path / "m.onnx", tmp_path / "out.onnx"
    onnx.save(m, str(src))
    assert main(["rewrite", str(src), "-o", str(dst), "--fuse", "conv-bn-relu",
                 "--target", "ascend", "--report"]) == 0
    out = capsys.readouterr().out
    assert "decision: keep (refused)" in out and "AI CPU kernel" in out and "0 rewrite(s)" in out
    assert [n.op_type for n in onnx.load(str(dst)).graph.node] == [n.op_type for n in m.graph.node]


def test_cpu_fuses_only_the_shape_classes_measured_faster() -> None:
    """Item 1: depthwise, grouped and few-input-channel convs were fused although the fused
    kernel was slower there; the classes still slower are refused with the measured figure
    (3x3 and 5x5 depthwise are now fused: the 16-channel blocks are about ONNX Runtime's
    speed or faster; larger depthwise kernels, not measured, stay refused)."""
    m = chain_model([("first_", 3, 16, 1, True), ("dw5_", 16, 16, 16, True, 5),
                     ("dw7_", 16, 16, 16, True, 7),
                     ("grp_", 16, 16, 4, True), ("grp2_", 16, 16, 8, True),
                     ("dw3_", 16, 16, 16, True),
                     ("pw_", 16, 32, 1, True)])
    result = fuse_conv_bn_relu(m)
    decisions = {r.node.split("'")[1]: (r.action, r.detail) for r in result.records}
    assert decisions["first_conv"][0] == "refused"
    assert "fewer than 8 input channels" in decisions["first_conv"][1]
    assert decisions["grp2_conv"][0] == "fused"  # 2 input channels per group: direct path
    assert decisions["dw5_conv"][0] == "fused"
    assert decisions["dw7_conv"][0] == "refused"
    assert "depthwise convolution with a kernel larger than 5x5" in decisions["dw7_conv"][1]
    assert decisions["grp_conv"][0] == "refused" and "grouped" in decisions["grp_conv"][1]
    assert decisions["dw3_conv"][0] == "fused" and decisions["pw_conv"][0] == "fused"
    assert [n.op_type for n in result.model.graph.node].count("FusedConvBnRelu") == 4
    assert_same_as_ort(m, result.model)
    forced = fuse_conv_bn_relu(m, force=True)
    assert forced.changed == 7
    assert_same_as_ort(m, forced.model)


def test_shape_classes_are_data() -> None:
    assert cpu_refusal(64, 64, 1) is None and cpu_refusal(16, 32, 1) is None
    assert cpu_refusal(72, 72, 72, (3, 3)) is None
    # depthwise 5x5 is fused at every stride (the 16-channel blocks: 0.69x-1.29x ONNX
    # Runtime's time at one thread, stride 2 0.83x-1.12x); larger kernels stay refused
    assert cpu_refusal(72, 72, 72, (5, 5)) is None
    assert "depthwise" in (cpu_refusal(72, 72, 72, (7, 7)) or "")
    assert "depthwise" in (cpu_refusal(72, 72, 72, (1, 7)) or "")
    assert "grouped" in (cpu_refusal(64, 64, 4) or "") and cpu_refusal(32, 32, 16) is None
    assert "fewer than 8" in (cpu_refusal(3, 64, 1, (7, 7)) or "")
    assert "fewer than 8" in (cpu_refusal(1, 16, 1, (3, 3)) or "")
    # the first-layer direct kernel brought 3-channel convs to about ONNX Runtime's speed,
    # not below it (benchmarks/conv_corpus.py): still refused, with that figure
    assert "direct first-layer kernel" in (cpu_refusal(4, 32, 1, (3, 3)) or "")
    assert cpu_refusal(8, 8, 1, (3, 3)) is None
    assert "not measured" in (cpu_refusal(576, 576, 576, (7, 7)) or "")


# ------------------------------------------------- item 1: the whole model must get faster
def _timing(ratio: float, calls: list[tuple[onnx.ModelProto, onnx.ModelProto]]) -> Any:
    def pays(before: onnx.ModelProto, after: onnx.ModelProto) -> ModelTiming:
        calls.append((before, after))
        return ModelTiming(2.0, 2.0 * ratio, 9, {"x": (1, 16, 12, 12)}, None, 1e-7)
    return pays


TWO_CHAINS = [("dw3_", 16, 16, 16, True), ("pw_", 16, 32, 1, True)]  # both in no slower class


@pytest.mark.parametrize("ratio, why", [(1.3, "slower"), (0.97, "less than the 5% margin")])
def test_fusions_that_do_not_make_the_whole_model_faster_are_undone(ratio: float, why: str
                                                                    ) -> None:
    """Item 1 (done-when): each chain was in a class measured faster, yet PP-OCR cls with
    its 6 chains fused took 3.5x the original's time under Session. The whole model is now
    judged: fusions that do not make it faster by the margin are undone, with the figures."""
    m = chain_model(TWO_CHAINS)
    calls: list[tuple[onnx.ModelProto, onnx.ModelProto]] = []
    result = rewrite(m, fuse=["conv-bn-relu"], pays=_timing(ratio, calls))
    ((before, after),) = calls
    assert before is m and [n.op_type for n in after.graph.node] == ["FusedConvBnRelu"] * 2
    assert result.changed == 0 and result.model is not m
    assert result.model.SerializeToString() == m.SerializeToString()
    chains = [r for r in result.records if r.node != WHOLE_MODEL]
    assert [r.action for r in chains] == ["refused", "refused"]
    assert all("no class measured slower" in r.detail and f"{ratio:.2f}x" in r.detail
               for r in chains)
    (whole,) = [r for r in result.records if r.node == WHOLE_MODEL]
    assert whole.action == "refused" and "2 fusion(s) undone" in whole.detail
    assert why in whole.detail and "--force-fuse" in whole.detail
    assert "medians of 9 interleaved runs on x 1x16x12x12" in whole.detail


def test_fusions_that_make_the_whole_model_faster_are_kept() -> None:
    m = chain_model(TWO_CHAINS)
    calls: list[tuple[onnx.ModelProto, onnx.ModelProto]] = []
    result = rewrite(m, fuse=["conv-bn-relu"], pays=_timing(0.6, calls))
    assert result.changed == 2 and len(calls) == 1
    (whole,) = [r for r in result.records if r.node == WHOLE_MODEL]
    assert whole.action == "measured" and "the 2 fusion(s) pay" in whole.detail
    assert "0.60x" in whole.detail
    assert_same_as_ort(m, result.model)
    # nothing fused (ATC's own fusion on the ascend target): nothing to time
    native = rewrite(m, fuse=["conv-bn-relu"], native=dict(ATC_NATIVE_FUSIONS),
                     pays=_timing(0.6, calls))
    assert len(calls) == 1 and native.changed == 0
    assert not [r for r in native.records if r.node == WHOLE_MODEL]


def test_time_models_interleaves_within_its_budget() -> None:
    m = chain_model(TWO_CHAINS)
    fused = fuse_conv_bn_relu(m).model
    ticks = iter(range(10**6))
    x = RNG.normal(size=(1, 16, 12, 12)).astype(np.float32)
    t = time_models(m, fused, {"x": x}, clock=lambda: next(ticks) * 1e-3, budget_s=0.0)
    assert t.runs == 5 and t.original_ms == t.rewritten_ms == 1.0 and not t.pays
    assert t.shapes == {"x": (1, 16, 12, 12)} and t.max_abs_diff < 1e-4
    ticks = iter(range(10**6))
    t = time_models(m, fused, {"x": x}, clock=lambda: next(ticks) * 1e-3, budget_s=100.0)
    assert t.runs == 41


def test_cli_times_the_whole_model_and_decides_by_its_figures(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The real measurement: whatever this machine's load makes of it, the decision follows
    the measured figures and the report prints them."""
    import json
    import re

    src = tmp_path / "m.onnx"
    onnx.save(chain_model(TWO_CHAINS), str(src))
    assert main(["rewrite", str(src), "--fuse", "conv-bn-relu", "--report", "--json"]) == 0
    records = json.loads(capsys.readouterr().out)["records"]
    (whole,) = [r for r in records if r["node"] == WHOLE_MODEL]
    ratio = float(re.search(r"\(([0-9.]+)x; medians of (\d+) interleaved runs on x "
                            r"1x16x12x12", whole["detail"]).group(1))
    fused = [r for r in records if r["action"] == "fused"]
    if ratio < KEEP_BELOW:
        assert whole["action"] == "measured" and len(fused) == 2
    else:
        assert whole["action"] == "refused" and not fused
    assert main(["rewrite", str(src), "--fuse", "conv-bn-relu", "--report", "--no-measure"]) == 0
    out = capsys.readouterr().out
    assert "2 fused" in out and WHOLE_MODEL not in out and "decided per convolution only" in out
    assert main(["rewrite", str(src), "--fuse", "conv-bn-relu", "--report",
                 "--input-shape", "y=1,16,8,8"]) == 1
    err = capsys.readouterr().err
    assert "--input-shape y: the model has no input 'y'; its inputs: x" in err


def test_a_model_no_probe_runs_needs_its_shape_to_be_timed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The chain model behind a Reshape to [1, 16, 6, 6]: ONNX Runtime runs it only where
    n*m == 576, which no probe sizing gives; the rewrite says how to time it."""
    m = chain_model(TWO_CHAINS, hw=6)
    m.graph.node[0].input[0] = "img"
    m.graph.node.insert(0, helper.make_node("Reshape", ["flat", "img_shape"], ["img"]))
    m.graph.initializer.append(numpy_helper.from_array(np.array([1, 16, 6, 6], np.int64),
                                                       "img_shape"))
    del m.graph.input[:]
    m.graph.input.append(helper.make_tensor_value_info("flat", TensorProto.FLOAT, ["n", "m"]))
    src = tmp_path / "m.onnx"
    onnx.save(m, str(src))
    argv = ["rewrite", str(src), "--fuse", "conv-bn-relu", "--report"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "ONNX Runtime runs it on no probe sizing; give the shape it runs on with " \
           "--input-shape" in err and "--no-measure" in err
    assert main([*argv, "--input-shape", "flat=4,144"]) == 0
    assert "medians of" in capsys.readouterr().out
    assert main([*argv, "--no-measure"]) == 0


def test_report_names_bn_folded_at_export_and_how_to_keep_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Item 1: on default exports (BN folded into the Conv) the rewrite said only "no
    BatchNormalization before this Relu"."""
    m = chain_model([("a_", 16, 32, 1, False)])
    (record,) = fuse_conv_bn_relu(m).records
    assert record.action == "skipped" and record.detail == BN_FOLDED
    src = tmp_path / "m.onnx"
    onnx.save(m, str(src))
    assert main(["rewrite", str(src), "--fuse", "conv-bn-relu", "--report"]) == 0
    out = capsys.readouterr().out
    assert "folded it into the Conv" in out and "do_constant_folding=False" in out
    assert "optimize=False" in out and "1 skipped" in out
    assert not list(tmp_path.glob("*.onnx"))[1:]  # --report alone writes nothing


torch = pytest.importorskip("torch", reason="torch is not installed: the real-export tests "
                            "need it (pip install torch --index-url .../cpu)")
# The dynamo exporter imports onnx.reference, which refuses to load once an operator name
# exists in two domains (opsdk registers com.opsdk::Gelu next to ai.onnx Gelu): load it first.
import onnx.reference  # noqa: E402,F401


def torch_export(module: Any, x: Any, **kw: Any) -> onnx.ModelProto:
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module.eval(), (x,), f, dynamo=False, **kw)
    return onnx.load_from_string(f.getvalue())


class ConvBnRelu(torch.nn.Module):  # type: ignore[misc,name-defined]
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(cin, cout, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(cout)
        self.relu = torch.nn.ReLU()
        with torch.no_grad():
            self.bn.running_mean.normal_()
            self.bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x: Any) -> Any:
        return self.relu(self.bn(self.conv(x)))


def test_torch_exports_with_and_without_bn_folding() -> None:
    """Item 1 with real torch exports: the default export folds BN (reported, with the fix);
    do_constant_folding=False keeps it, and the chain is fused (16 -> 32 channels)."""
    torch.manual_seed(0)
    mod, x = ConvBnRelu(16, 32), torch.randn(1, 16, 10, 10)
    folded = torch_export(mod, x, opset_version=17)
    assert [n.op_type for n in folded.graph.node] == ["Conv", "Relu"]
    (record,) = fuse_conv_bn_relu(folded).records
    assert record.detail == BN_FOLDED
    kept = torch_export(mod, x, opset_version=17, do_constant_folding=False)
    assert "BatchNormalization" in [n.op_type for n in kept.graph.node]
    result = fuse_conv_bn_relu(kept)
    assert [r.action for r in result.records] == ["fused"]
    assert_same_as_ort(kept, result.model)
    np.testing.assert_allclose(ort_run(kept, {kept.graph.input[0].name: x.numpy()})[0],
                               mod(x).detach().numpy(), rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------ item 10: GELU
def _const(nodes: list[onnx.NodeProto], name: str, value: float) -> str:
    nodes.append(helper.make_node("Constant", [], [name],
                                  value=numpy_helper.from_array(np.array(value, np.float32))))
    return name


def gelu_model(form: str) -> onnx.ModelProto:
    """x -> MatMul -> a GELU decomposition in one of the node orders exporters write."""
    n: list[onnx.NodeProto] = [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm")]
    M = lambda a, b, o: n.append(helper.make_node("Mul", [a, b], [o], name=o))  # noqa: E731
    A = lambda a, b, o: n.append(helper.make_node("Add", [a, b], [o], name=o))  # noqa: E731
    if form in ("erf-torchscript", "erf-dynamo", "erf-mul-half-x"):
        if form == "erf-mul-half-x":  # x * (1/sqrt 2)
            M("h", _const(n, "rsqrt2", 0.70710677), "u")
        else:
            n.append(helper.make_node("Div", ["h", _const(n, "sqrt2", 1.4142135)], ["u"]))
        n.append(helper.make_node("Erf", ["u"], ["e"]))
        A("e", _const(n, "one", 1.0), "a")
        if form == "erf-torchscript":  # (x * a) * 0.5
            M("h", "a", "p")
            M("p", _const(n, "half", 0.5), "y")
        elif form == "erf-dynamo":  # x * (0.5 * a)
            M(_const(n, "half", 0.5), "a", "p")
            M("h", "p", "y")
        else:  # a * (0.5 * x)
            M(_const(n, "half", 0.5), "h", "hx")
            M("a", "hx", "y")
    else:
        if form == "tanh-torchscript":  # x * (x * x)
            M("h", "h", "sq")
            M("h", "sq", "cube")
        else:  # Pow(x, 3)
            n.append(helper.make_node("Pow", ["h", _const(n, "three", 3.0)], ["cube"]))
        M(_const(n, "c2", 0.044715), "cube", "v")
        A("h", "v", "s")
        M(_const(n, "c1", 0.7978846), "s", "u")
        n.append(helper.make_node("Tanh", ["u"], ["t"]))
        A(_const(n, "one", 1.0), "t", "a")
        if form == "tanh-torchscript":  # 0.5 * (x * a)
            M("h", "a", "p")
            M(_const(n, "half", 0.5), "p", "y")
        else:  # x * (0.5 * a)
            M(_const(n, "half", 0.5), "a", "p")
            M("h", "p", "y")
    inits = [numpy_helper.from_array((RNG.normal(size=(8, 8)) * 0.7).astype(np.float32), "W")]
    if form.endswith("-dynamo"):  # the dynamo exporter writes its scalars as initializers
        for c in [c for c in n if c.op_type == "Constant"]:
            t = onnx.TensorProto()
            t.CopyFrom(c.attribute[0].t)
            t.name = c.output[0]
            inits.append(t)
            n.remove(c)
    graph = helper.make_graph(
        n, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


GELU_FORMS = {"erf-torchscript": "none", "erf-dynamo": "none", "erf-mul-half-x": "none",
              "tanh-torchscript": "tanh", "tanh-dynamo": "tanh"}


@pytest.mark.parametrize("form", sorted(GELU_FORMS))
def test_gelu_decompositions_become_one_gelu(form: str) -> None:
    """Item 10: `--replace Gelu` found only Gelu nodes, which torch writes at opset >= 20
    only; the decompositions it writes at opset <= 18 stayed out of reach."""
    m = gelu_model(form)
    result = replace_ops(m, ["Gelu"])
    assert [r.action for r in result.records] == ["replaced"]
    ops = [(n.domain, n.op_type) for n in result.model.graph.node]
    assert ops == [("", "MatMul"), ("com.opsdk", "Gelu")]
    (attr,) = result.model.graph.node[1].attribute
    assert helper.get_attribute_value(attr).decode() == GELU_FORMS[form]
    assert not result.model.graph.initializer[1:]  # the pattern's constants are gone
    onnx.checker.check_model(result.model)
    assert_same_as_ort(m, result.model, atol=1e-5)


def test_near_misses_are_not_gelu() -> None:
    """A wrong constant or an intermediate read elsewhere is no GELU."""
    m = gelu_model("erf-torchscript")
    for node in m.graph.node:
        if node.output[0] == "half":
            node.attribute[0].t.CopyFrom(numpy_helper.from_array(np.array(0.6, np.float32)))
    assert replace_ops(m, ["Gelu"]).records == []
    m = gelu_model("tanh-dynamo")
    m.graph.output.append(helper.make_tensor_value_info("t", TensorProto.FLOAT, [4, 8]))
    assert replace_ops(m, ["Gelu"]).records == []


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_torch_gelu_exports_become_one_gelu(approximate: str) -> None:
    """Item 10 with real torch exports at opset 17 (TorchScript exporter)."""
    torch.manual_seed(0)
    mod = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(approximate=approximate),
                              torch.nn.Linear(16, 4))
    x = torch.randn(3, 8)
    m = torch_export(mod, x, opset_version=17)
    result = replace_ops(m, ["Gelu"])
    assert [n.op_type for n in result.model.graph.node] == ["Gemm", "Gelu", "Gemm"]
    assert_same_as_ort(m, result.model, atol=1e-5)
    got = Session(result.model).run(None, {m.graph.input[0].name: x.numpy()})[0]
    np.testing.assert_allclose(got, mod(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_torch_dynamo_export_gelu_both_forms() -> None:
    """Item 10 with a real dynamo export at opset 18 (the exporter torch uses by default):
    both GELU forms in one model, each folded into one Gelu node."""
    import contextlib

    torch.manual_seed(0)
    mod = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 16),
                              torch.nn.GELU(approximate="tanh")).eval()
    x = torch.randn(3, 8)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        m = torch.onnx.export(mod, (x,), None, dynamo=True, opset_version=18).model_proto
    result = replace_ops(m, ["Gelu"])
    assert [n.op_type for n in result.model.graph.node] == ["Gemm", "Gelu", "Gemm", "Gelu"]
    forms = [helper.get_attribute_value(n.attribute[0]).decode()
             for n in result.model.graph.node if n.op_type == "Gelu"]
    assert forms == ["none", "tanh"]
    assert_same_as_ort(m, result.model, atol=1e-5)
    got = Session(result.model).run(None, {m.graph.input[0].name: x.numpy()})[0]
    np.testing.assert_allclose(got, mod(x).detach().numpy(), rtol=1e-4, atol=1e-5)
