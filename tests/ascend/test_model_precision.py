"""Whole-model precision emulation (``opsdk precision``) and its bisector (``--fix``).

Hand-built graphs: the dtype ATC's rules give each node per mode, the casts inserted, a
model whose float16 ReduceSum overflows (``--fix`` keeps exactly that node), determinism and
the files going into ``opsdk atc``. One real corpus model (PP-OCR cls) end to end. The data
file of CANN's lists is checked against an installed CANN 8.1.RC1 toolkit when there is one.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from opsdk.ascend.model_precision import (
    KEEP_FILE,
    MIXLIST_FILE,
    REPORT_FILE,
    analyze_model,
    assign_dtypes,
    float_tensors,
    lower_model,
    make_inputs,
    op_facts,
)
from opsdk.ascend.model_precision._graph import inserted
from opsdk.ascend.model_precision._lists import lists_data
from opsdk.ascend.precision import PrecisionMode
from opsdk.cli import main
from opsdk.errors import SpecError
from opsdk.testing import corpus

F = TensorProto.FLOAT


def _const(name: str, value: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(value.astype(np.float32), name)


def mixed_graph() -> onnx.ModelProto:
    """Conv -> Relu -> ReduceSum -> Softmax -> LayerNormalization -> Reshape -> MatMul."""
    rng = np.random.default_rng(1)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("ReduceSum", ["r", "axes"], ["s"], name="sum", keepdims=1),
        helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
        helper.make_node("LayerNormalization", ["p", "g", "b"], ["n"], name="norm", axis=-1),
        helper.make_node("Reshape", ["n", "shape"], ["f"], name="flat"),
        helper.make_node("MatMul", ["f", "m"], ["y"], name="matmul"),
    ]
    inits = [_const("w", rng.standard_normal((4, 3, 3, 3))),
             numpy_helper.from_array(np.array([1], np.int64), "axes"),
             _const("g", np.ones(8)), _const("b", np.zeros(8)),
             numpy_helper.from_array(np.array([1, 32], np.int64), "shape"),
             _const("m", rng.standard_normal((32, 5)))]
    g = helper.make_graph(nodes, "mixed", [helper.make_tensor_value_info("x", F, [1, 3, 4, 8])],
                          [helper.make_tensor_value_info("y", F, [1, 5])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def runs(model: onnx.ModelProto, mode: str, soc: str = "ascend910b", **lists: frozenset[str]
         ) -> list[str]:
    pm = PrecisionMode(mode, **lists)
    return [d.run for d in assign_dtypes(model.graph.node, float_tensors(model), pm, soc)]


#: conv relu sum softmax norm flat matmul; "-": moves data only
ASSIGNED = [
    ("force_fp16", "ascend910b", {}, "low low low low low - low"),
    ("allow_fp32_to_fp16", "ascend910b", {}, "low float32 float32 float32 float32 - low"),
    ("must_keep_origin_dtype", "ascend910b", {}, "float32 float32 float32 float32 float32 - float32"),
    ("force_fp32", "ascend910b", {}, "low-in float32 float32 float32 float32 - low-in"),
    # ReduceSum is on 910B's black list: downstream gray ops follow its float32
    ("allow_mix_precision", "ascend910b", {}, "low low float32 float32 float32 - low"),
    # and gray on 310P: the gray ops follow the white Conv2D down the chain
    ("allow_mix_precision", "ascend310p", {}, "low low low low low - low"),
    ("mixed_float16", "ascend910b", {"black": frozenset({"Conv2D"})},
     "float32 float32 float32 float32 float32 - low"),
    ("force_fp16", "ascend910b", {"keep_nodes": frozenset({"sum"}),
                                  "keep_dtype": frozenset({"SoftmaxV2"})},
     "low low float32 float32 low - low"),
]


@pytest.mark.parametrize("mode,soc,lists,expected", ASSIGNED)
def test_dtype_assignment_per_mode(mode: str, soc: str, lists: dict[str, frozenset[str]],
                                   expected: str) -> None:
    assert runs(mixed_graph(), mode, soc, **lists) == expected.split()


def test_the_lists_are_canns() -> None:
    assert (op_facts("Conv").cann_type, op_facts("Conv").cube) == ("Conv2D", True)
    assert op_facts("Gemm").cann_type == "MatMulV2"
    assert op_facts("Softmax", "ascend910b").cann_type == "SoftmaxV2"
    assert op_facts("ReduceSum", "ascend910b").mixlist == "black"
    assert op_facts("ReduceSum", "ascend310p").mixlist == "gray"
    # AvgPool has no float32 AI Core kernel: allow_fp32_to_fp16 lowers it anyway
    assert op_facts("GlobalAveragePool").floats == ("float16",)
    pool = helper.make_node("GlobalAveragePool", ["x"], ["y"], name="gap")
    pm = PrecisionMode("allow_fp32_to_fp16")
    [d] = assign_dtypes([pool], {"x", "y"}, pm, "ascend310p")
    assert (d.run, d.why) == ("low", "allow_fp32_to_fp16: vector op without a float32 kernel")


def test_an_opsdk_operator_follows_its_spec(tmp_path: Path) -> None:
    node = helper.make_node("ThresholdedRelu", ["x"], ["y"], name="tr", domain="com.opsdk",
                            alpha=0.5)
    for mode, run in [("force_fp16", "low"), ("allow_fp32_to_fp16", "float32")]:
        [d] = assign_dtypes([node], {"x", "y"}, PrecisionMode(mode))
        assert d.run == run and "opsdk operator ThresholdedRelu" in d.why
    # and the model runs through opsdk's Session, its kernel between the casts
    from opsdk.onnx import export_model

    onnx.save(export_model("ThresholdedRelu", shapes={"x": (2, 8)}, attrs={"alpha": 0.5}),
              tmp_path / "tr.onnx")
    r = analyze_model(tmp_path / "tr.onnx", "force_fp16")
    assert [d.run for d in r.nodes] == ["low"] and r.failing == []
    assert 0 < r.outputs[0].max_rel < 2 ** -10  # float16 rounding, nothing more


def test_casts_are_inserted_where_atc_lowers() -> None:
    model = mixed_graph()
    floats = float_tensors(model)
    pm = PrecisionMode("allow_fp32_to_fp16")
    lowered = lower_model(model, assign_dtypes(model.graph.node, floats, pm, "ascend910b"),
                          floats)
    onnx.checker.check_model(lowered, full_check=True)
    casts = [(src, to) for _name, src, _dst, to in inserted(lowered)]
    fp16, fp32 = TensorProto.FLOAT16, TensorProto.FLOAT
    # conv's inputs x and w into float16, its output rounded; matmul's inputs f and m
    assert casts == [
        ("x", fp16), casts[1][:1] + (fp32,), ("w", fp16), casts[3][:1] + (fp32,),
        ("c__opsdk_f32", fp16), casts[5][:1] + (fp32,),
        ("f", fp16), casts[7][:1] + (fp32,), ("m", fp16), casts[9][:1] + (fp32,),
        ("y__opsdk_f32", fp16), casts[11][:1] + (fp32,),
    ]
    import onnxruntime as ort

    feeds = make_inputs(model)
    y32 = ort.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
    y16 = ort.InferenceSession(lowered.SerializeToString()).run(None, feeds)[0]
    assert y16.shape == y32.shape and not np.array_equal(y16, y32)
    assert np.allclose(y16, y32, rtol=0.05, atol=0.05)
    # the bf16 modes round to bfloat16 at the same places
    bf = PrecisionMode("allow_fp32_to_bf16")
    lowered_bf = lower_model(model, assign_dtypes(model.graph.node, floats, bf, "ascend910b"),
                             floats, "bfloat16")
    assert [(src, to) for _n, src, _d, to in inserted(lowered_bf)][::2] == [
        (src, TensorProto.BFLOAT16) for src, _to in casts[::2]]


def overflow_model(path: Path) -> Path:
    """y = ReduceSum(|x| * 100) over 1024 values (about 8e4 > 65504: inf in float16),
    z = Relu(x) beside it."""
    nodes = [
        helper.make_node("Abs", ["x"], ["a"], name="abs"),
        helper.make_node("Mul", ["a", "k"], ["big"], name="scale"),
        helper.make_node("ReduceSum", ["big", "axes"], ["y"], name="sum", keepdims=0),
        helper.make_node("Relu", ["x"], ["z"], name="relu"),
    ]
    g = helper.make_graph(
        nodes, "overflow", [helper.make_tensor_value_info("x", F, ["N", 1024])],
        [helper.make_tensor_value_info("y", F, None), helper.make_tensor_value_info("z", F, None)],
        [_const("k", np.array(100.0)), numpy_helper.from_array(np.array([1], np.int64), "axes")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_force_fp16_overflow_and_the_fix_keeps_the_culprit(tmp_path: Path) -> None:
    model = overflow_model(tmp_path / "m.onnx")
    # 910B computes in the Inf/NaN overflow mode: the float16 sum is Inf
    r = analyze_model(model, "force_fp16", input_shape={"x": (2, 1024)}, fix="node",
                      output_dir=tmp_path / "out", soc="Ascend910B3")
    assert r.overflow == "inf-nan"
    y, z = r.outputs
    assert not y.passed and y.nonfinite == 2 and "non-finite" in y.reason
    assert z.passed and r.failing == ["y"]
    assert r.attribution[0].node == "sum" and r.attribution[0].failing == ("y",)
    assert r.fix is not None and r.fix.kept == ["sum"] and r.fix.failing_after == []
    assert r.fix.runs <= r.fix.bound
    assert (tmp_path / "out" / KEEP_FILE).read_text() == "sum\n"
    assert json.loads((tmp_path / "out" / MIXLIST_FILE).read_text()) == {
        "black-list": {"to-add": ["ReduceSum"]}}
    # the file applied as ATC would read it: every output passes
    again = analyze_model(model, "force_fp16", input_shape={"x": (2, 1024)},
                          keep_dtype=tmp_path / "out" / KEEP_FILE, attribute=False,
                          soc="Ascend910B3")
    assert again.failing == [] and [d.run for d in again.nodes] == ["low", "low", "float32", "low"]


def test_saturation_mode_clips_instead(tmp_path: Path) -> None:
    """310P has only the saturation mode: the float16 sum is 65504, finite but wrong."""
    model = overflow_model(tmp_path / "m.onnx")
    r = analyze_model(model, "force_fp16", input_shape={"x": (2, 1024)}, standard="mere-mare",
                      fix="node", output_dir=tmp_path, soc="Ascend310P3")
    y = r.outputs[0]
    assert r.overflow == "saturation" and y.nonfinite == 0 and not y.passed
    assert r.fix is not None and r.fix.kept == ["sum"] and r.fix.failing_after == []


def test_the_same_run_twice_gives_the_same_files(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    model = overflow_model(tmp_path / "m.onnx")
    args = [str(model), "--precision-mode", "force_fp16", "--input-shape", "x:3,1024",
            "--soc-version", "Ascend910B3",
            "--fix", "--fix-by", "op-type"]
    for out in ("a", "b"):
        assert main(["precision", *args, "-o", str(tmp_path / out)]) == 0
    assert "fix: searching 4 op-types, at most 8 runs" in capsys.readouterr().err
    for name in (KEEP_FILE, MIXLIST_FILE, REPORT_FILE):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert (tmp_path / "a" / KEEP_FILE).read_text() == "OpType::ReduceSum\n"
    # the same content again is fine; other content is not replaced without --force
    assert main(["precision", *args, "-o", str(tmp_path / "a")]) == 0
    (tmp_path / "a" / KEEP_FILE).write_text("mine\n")
    assert main(["precision", *args, "-o", str(tmp_path / "a")]) == 1
    assert "keep_dtype.cfg exist(s) with other content; pass --force" in capsys.readouterr().err
    assert (tmp_path / "a" / KEEP_FILE).read_text() == "mine\n"
    assert main(["precision", *args, "-o", str(tmp_path / "a"), "--force", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["fix"]["kept"] == ["ReduceSum"] and report["failing"] == ["y"]


def test_opsdk_atc_takes_the_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = overflow_model(tmp_path / "m.onnx")
    out = tmp_path / "out"
    assert main(["precision", str(model), "--precision-mode", "force_fp16", "--input-shape",
                 "x:2,1024", "--overflow", "inf-nan", "--fix", "-o", str(out)]) == 0
    capsys.readouterr()
    common = ["atc", str(model), "--soc-version", "Ascend310P3", "--output",
              str(tmp_path / "m"), "--input-shape", "x:2,1024", "--dry-run", "--json"]
    assert main([*common, "--precision-mode", "force_fp16",
                 "--keep-dtype", str(out / KEEP_FILE)]) == 0
    line = " ".join(json.loads(capsys.readouterr().out)["procedure"])
    assert f"--keep_dtype={out / KEEP_FILE}" in line and "--precision_mode=force_fp16" in line
    assert main([*common, "--precision-mode", "allow_mix_precision",
                 "--modify-mixlist", str(out / MIXLIST_FILE)]) == 0
    assert f"--modify_mixlist={out / MIXLIST_FILE}" in " ".join(
        json.loads(capsys.readouterr().out)["procedure"])
    assert main([*common, "--precision-mode", "force_fp16",
                 "--keep-dtype", str(tmp_path / "missing.cfg")]) == 1
    assert "missing.cfg does not exist" in capsys.readouterr().err


def test_errors_name_the_input_and_the_fix(tmp_path: Path) -> None:
    model = overflow_model(tmp_path / "m.onnx")
    with pytest.raises(SpecError, match=r"input 'x' has dynamic dims \(N,1024\); give its shape "
                       r"with --input-shape x:<d0,d1,...>"):
        analyze_model(model, "force_fp16")
    keep = tmp_path / "k.cfg"
    keep.write_text("nope\n")
    with pytest.raises(SpecError, match="--keep-dtype names node\\(s\\) nope that the model"):
        analyze_model(model, "force_fp16", keep_dtype=keep, input_shape={"x": (1, 1024)})
    mixlist = tmp_path / "mix.json"
    mixlist.write_text('{"black-list": {"to-add": ["ReduceSum"]}}')
    with pytest.raises(SpecError, match="--modify-mixlist applies to the mixed-precision modes"):
        analyze_model(model, "force_fp16", modify_mixlist=mixlist, input_shape={"x": (1, 1024)})
    mixed = analyze_model(model, "allow_mix_precision", modify_mixlist=mixlist,
                          input_shape={"x": (1, 1024)}, attribute=False)
    assert [d.run for d in mixed.nodes] == ["float32"] * 4  # gray behind the model input


def test_atc_folds_batch_norm_into_its_conv(tmp_path: Path) -> None:
    """A running variance of 1e7 is Inf in float16, but ATC folds the BatchNorm into the
    Conv's float32 weights first: only the unfused emulation fails."""
    rng = np.random.default_rng(2)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("BatchNormalization", ["c", "s", "b", "mu", "var"], ["y"],
                              name="bn")]
    inits = [_const("w", rng.standard_normal((4, 3, 1, 1))), _const("s", np.ones(4)),
             _const("b", np.zeros(4)), _const("mu", np.zeros(4)), _const("var", np.full(4, 1e7))]
    g = helper.make_graph(nodes, "bn", [helper.make_tensor_value_info("x", F, [1, 3, 4, 4])],
                          [helper.make_tensor_value_info("y", F, [1, 4, 4, 4])], inits)
    path = tmp_path / "bn.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    fused = analyze_model(path, "force_fp16", soc="ascend910b", attribute=False)
    assert fused.folded == ["bn"] and fused.failing == [] and len(fused.nodes) == 1
    unfused = analyze_model(path, "force_fp16", soc="ascend910b", fuse=False)
    assert unfused.failing == ["y"] and unfused.attribution[0].node == "bn"


def test_an_untyped_tensor_is_refused() -> None:
    g = helper.make_graph([helper.make_node("Foo", ["x"], ["y"], name="foo", domain="com.x")],
                          "g", [helper.make_tensor_value_info("x", F, [2])],
                          [helper.make_tensor_value_info("y", F, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("com.x", 1)])
    del m.graph.output[:]
    m.graph.output.append(helper.make_empty_tensor_value_info("y"))
    with pytest.raises(SpecError, match="node 'foo': ONNX shape inference gives no element "
                       "type for its output 'y'"):
        float_tensors(m)


def test_a_real_corpus_model(tmp_path: Path) -> None:
    """PP-OCR's direction classifier under allow_fp32_to_fp16, judged by the strict
    double-thousandths standard: it fails, --fix finds nodes to keep, the re-check passes."""
    path = corpus.find("ppocr-cls")
    if path is None:
        pytest.skip("ppocr-cls is not in the cache: run python -m opsdk.testing.corpus --fetch")
    r = analyze_model(path, "allow_fp32_to_fp16", input_shape={"x": (1, 3, 48, 192)},
                      standard="double-thousandths", fix="node", output_dir=tmp_path,
                      soc="Ascend310P3")
    lowered = [d for d in r.nodes if d.lowered]
    # cube ops, and the pools without a float32 AI Core kernel on 310P
    assert {d.cann_type for d in lowered} == {"Conv2D", "BatchMatMulV2", "AvgPool", "MaxPoolV3"}
    assert r.failing and r.fix is not None and r.fix.kept and r.fix.failing_after == []
    assert r.fix.runs <= r.fix.bound
    kept = (tmp_path / KEEP_FILE).read_text().split()
    assert kept == r.fix.kept and set(kept) <= {d.name for d in lowered}


def _toolkit_ops_info(soc: str) -> Path | None:
    from opsdk.ascend.npu._acl import cann_home

    home = cann_home()
    if home is None:
        return None
    f = home / "opp/built-in/op_impl/ai_core/tbe/config" / soc / f"aic-{soc}-ops-info.json"
    return f if f.is_file() else None


def _floats(entry: dict) -> list[str] | None:
    for key in sorted(k for k in entry if k.startswith("input")):
        listed = entry[key].get("dtype")
        if not listed:
            continue
        names = set(listed.split(","))
        found = sorted({"float16" if d == "float16" else "float32" for d in names
                        if d in ("float16", "float", "float32")})
        if found or "bfloat16" in names:
            return found
    return None


@pytest.mark.parametrize("soc", sorted(lists_data()["socs"]))
def test_the_data_file_matches_the_toolkit(soc: str) -> None:
    """Every recorded list and float dtype set as the toolkit's ops-info file has it."""
    info_file = _toolkit_ops_info(soc)
    if info_file is None:
        pytest.skip(f"no CANN toolkit with {soc}'s ops-info here (ASCEND_HOME_PATH)")
    info = json.loads(info_file.read_text())
    for cann, rec in lists_data()["socs"][soc].items():
        entry = info[cann]
        flag = entry.get("precision_reduce", {}).get("flag")
        assert rec["list"] == {"true": "white", "false": "black"}.get(flag, "gray"), cann
        assert rec.get("floats") == _floats(entry), cann
    mapped = {e["cann"] for e in lists_data()["onnx"].values()}
    assert mapped <= set(info), sorted(mapped - set(info))


def _relu_model(path: Path, dims: list[int] | None = None,
                elem: int = F, opset: int = 17) -> Path:
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g",
                          [helper.make_tensor_value_info("x", elem, dims or [1, 4])],
                          [helper.make_tensor_value_info("y", elem, dims or [1, 4])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), path)
    return path


HOSTILE = [
    ("garbage model", "model", b"\x08\x07garbage\xff", r"m.onnx: not a readable ONNX model"),
    ("empty model file", "model", b"", r"m.onnx: the file is empty"),
    ("a cycle", "cycle", None, r"m.onnx: #0 \(Relu\): input 'b' is used before the node"),
    ("an opset from the future", "opset", None,
     r"m.onnx: ONNX Runtime \S+ cannot run the model as given \(.*check it with opsdk doctor"),
    ("a huge input", "dims", [1 << 40, 1 << 40],
     r"input 'x' of shape .* elements, more than the \d+ a generated input may hold"),
    ("a string input", "elem", TensorProto.STRING, r"input 'x' is string; .* numeric tensors"),
    ("an .npy of another dtype", "npy", np.zeros((1, 4), np.int64),
     r"--input x=.*x.npy: dtype int64, but input 'x' is float32; save it as array.astype"),
    ("an .npy of another shape", "npy", np.zeros((3, 3), np.float32),
     r"--input x=.*x.npy: shape \(3, 3\), but input 'x' has dims \(1,4\)"),
    ("a pickled .npy", "npy", np.array([{"a": 1}], dtype=object),
     r"--input x=.*x.npy: not a readable .npy array"),
    ("a binary keep_dtype file", "keep", b"\xff\xfe\x00",
     r"--keep_dtype file .*: byte 0 \(0xff\) is not UTF-8 .*; save the file as UTF-8"),
    ("a mixlist with a bare string", "mix", '{"black-list": {"to-add": "Conv"}}',
     r"black-list.to-add must be a list of op type names"),
    ("a mixlist with a list of numbers", "mix", '{"white-list": {"to-add": [1]}}',
     r"white-list.to-add must be a list of op type names"),
]


@pytest.mark.parametrize("what, kind, value, message", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_models_and_files_are_refused_naming_them(
        tmp_path: Path, what: str, kind: str, value: object, message: str) -> None:
    path = tmp_path / "m.onnx"
    kw: dict[str, object] = {}
    mode = "force_fp16"
    if kind == "model":
        path.write_bytes(value)  # type: ignore[arg-type]
    elif kind == "cycle":
        _relu_model(path)
        m = onnx.load(path)
        m.graph.node.insert(0, helper.make_node("Relu", ["b"], ["a"]))
        m.graph.node[1].input[0] = "a"
        m.graph.node[1].output[0] = "b"
        m.graph.output[0].name = "b"
        onnx.save(m, path)
    elif kind == "opset":
        _relu_model(path, opset=99)
    elif kind == "dims":
        _relu_model(path, dims=value)  # type: ignore[arg-type]
    elif kind == "elem":
        _relu_model(path, elem=value)  # type: ignore[arg-type]
    elif kind == "npy":
        np.save(tmp_path / "x.npy", value, allow_pickle=True)  # type: ignore[arg-type]
        kw["input_files"] = {"x": tmp_path / "x.npy"}
    elif kind == "keep":
        (tmp_path / "k.cfg").write_bytes(value)  # type: ignore[arg-type]
        kw["keep_dtype"] = tmp_path / "k.cfg"
    elif kind == "mix":
        (tmp_path / "mix.json").write_text(value)  # type: ignore[arg-type]
        kw["modify_mixlist"], mode = tmp_path / "mix.json", "allow_mix_precision"
    if not path.exists():
        _relu_model(path)
    with pytest.raises((SpecError, ValueError), match=message):
        analyze_model(path, mode, attribute=False, **kw)  # type: ignore[arg-type]
