"""`opsdk rewrite --replace NAME` with an operator's name: the decompositions exporters write
for RMSNorm, rotary embedding and SwiGLU are found and folded into the operators scaffolded
from the LLM starters, proved in ONNX Runtime; a real LLaMA-style decoder block exported by
torch.onnx (the TorchScript exporter: the dynamo one needs onnxscript, not installed) runs
under opsdk's Session with the folded operators' kernels as ONNX Runtime runs the original."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from opsdk.cli import main
from opsdk.errors import SpecError
from opsdk.onnx import replace_ops
from opsdk.spec import Attr, Input, OpSpec, Output

OPS = {"RmsNorm": "llm:rms_norm", "Rope": "llm:rotary_embedding", "Swiglu": "llm:swiglu"}
D, HEADS, FF = 64, 4, 128


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("llmrw")
    for name, like in OPS.items():
        assert main(["new", name, "--like", like, "--dir", str(root / "operators"),
                     "--domain", "com.llm"]) == 0
    return root


def _block(opset: int, path: Path, half: bool = False, dynamic: bool = False) -> Path:
    torch = pytest.importorskip("torch")
    nn, F = torch.nn, torch.nn.functional

    class RMSNorm(nn.Module):  # as Hugging Face's LlamaRMSNorm
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(1 + 0.1 * torch.randn(D))

        def forward(self, x):  # type: ignore[no-untyped-def]
            dt = x.dtype
            x = x.to(torch.float32)
            x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
            return self.weight * x.to(dt)

    def rotate_half(x):  # type: ignore[no-untyped-def]
        return torch.cat((-x[..., x.shape[-1] // 2:], x[..., : x.shape[-1] // 2]), dim=-1)

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.n1, self.n2 = RMSNorm(), RMSNorm()
            self.q, self.k, self.v, self.o = (nn.Linear(D, D, bias=False) for _ in range(4))
            self.g, self.u = nn.Linear(D, FF, bias=False), nn.Linear(D, FF, bias=False)
            self.dn = nn.Linear(FF, D, bias=False)

        def forward(self, x, cos, sin):  # type: ignore[no-untyped-def]
            b, t, _ = x.shape
            hs = self.n1(x)
            q, k, v = (p(hs).view(b, t, HEADS, D // HEADS).transpose(1, 2)
                       for p in (self.q, self.k, self.v))
            c, s = cos.unsqueeze(1), sin.unsqueeze(1)
            q = q * c + rotate_half(q) * s
            k = k * c + rotate_half(k) * s
            a = torch.softmax(q @ k.transpose(-1, -2) / (D // HEADS) ** 0.5, -1) @ v
            x = x + self.o(a.transpose(1, 2).reshape(b, t, D))
            hs = self.n2(x)
            return x + self.dn(F.silu(self.g(hs)) * self.u(hs))

    torch.manual_seed(0)
    angles = torch.randn(2, 8, D // HEADS // 2)
    full = torch.cat([angles, angles], -1)
    args = (torch.randn(2, 8, D), full.cos(), full.sin())
    block = Block().eval()
    if half:  # float16: the exporter writes the Cast islands around the norm's float32 math
        block, args = block.half(), tuple(a.half() for a in args)
    with warnings.catch_warnings():  # the TorchScript exporter is deprecated
        warnings.simplefilter("ignore")
        # dynamic batch and sequence: rotate_half's bounds become Shape/Gather/Div chains
        axes = {k: {0: "batch", 1: "seq"} for k in ("x", "cos", "sin")} if dynamic else None
        torch.onnx.export(block, args, str(path), dynamo=False, opset_version=opset,
                          input_names=["x", "cos", "sin"], output_names=["y"],
                          dynamic_axes=axes)
    return path


def _opsdk(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "opsdk", *args], cwd=project,
                          capture_output=True, text=True, timeout=1200)


@pytest.mark.parametrize("opset,half,dynamic", [(17, False, False), (18, False, False),
                                                (18, True, False), (18, False, True)])
def test_decoder_block_every_decomposition_is_folded(project, opset, half, dynamic):
    """ReduceMean's axes an attribute (17) and an input (18); float32 and float16; static
    shapes and dynamic batch and sequence."""
    model = _block(opset, project / f"block{opset}{half}{dynamic}.onnx", half, dynamic)
    out = project / f"block{opset}{half}{dynamic}_llm.onnx"
    run = _opsdk(project, "rewrite", str(model), "-o", str(out), "--replace", "RmsNorm",
                 "--replace", "Rope,Swiglu", "--json")
    assert run.returncode == 0, run.stderr
    records = json.loads(run.stdout)["records"]
    folded = [r["detail"].split(" by ")[1].split()[0] for r in records
              if r["action"] == "replaced"]
    assert sorted(folded) == ["com.llm::RmsNorm"] * 2 + ["com.llm::Rope"] * 2 + \
        ["com.llm::Swiglu"], records
    assert [r["action"] for r in records if r["node"] == "the model"] == ["checked"]
    norm = next(r["detail"] for r in records if r["node"].startswith("'/n1/"))
    assert "8 nodes" in norm and "'/n1/ReduceMean'" in norm and "'/n1/Sqrt'" in norm, norm
    rewritten = onnx.load(str(out))
    ops = [n.op_type for n in rewritten.graph.node]
    for gone in ("Pow", "ReduceMean", "Sqrt", "Sigmoid", "Neg", "Slice"):
        assert gone not in ops, (gone, ops)
    assert ops.count("Concat") == (4 if dynamic else 0)  # the Reshape targets' (batch, seq)
    assert ops.count("RmsNorm") == 2 and ops.count("Rope") == 2 and ops.count("Swiglu") == 1
    norms = [n for n in rewritten.graph.node if n.op_type == "RmsNorm"]
    assert norms[0].input[0] == "x"  # read back through the exporter's widening Cast
    assert [n.output[1] for n in norms] == ["", ""]  # rstd, optional, is not asked for
    original = onnx.load(str(model))
    assert len(rewritten.graph.node) < len(original.graph.node) - 40


@pytest.mark.slow
@pytest.mark.parametrize("half,dynamic", [(False, False), (True, False), (False, True)])
def test_rewritten_block_under_session_equals_onnxruntime(project, half, dynamic):
    """The kernels built from the starters, unedited, under Session, against ONNX Runtime on
    the original model: each folded node's output against the value of the decomposition it
    replaced (ONNX Runtime's, on the same inputs) within the operator's precision standard
    for its dtype; the whole model within the float32 standard, and in float16 within one
    float16 unit of mean relative error of the float32 computation of the same graph, as
    ONNX Runtime's float16 run of the original is (a whole float16 block, MatMuls and
    softmax included, meets no per-operator standard)."""
    model = _block(17, project / f"block_s{half}{dynamic}.onnx", half, dynamic)
    out = project / f"block_s{half}{dynamic}_llm.onnx"
    run = _opsdk(project, "rewrite", str(model), "-o", str(out), "--replace",
                 "RmsNorm,Rope,Swiglu")
    assert run.returncode == 0, run.stderr
    script = project / "compare.py"
    script.write_text(_COMPARE)
    got = subprocess.run([sys.executable, str(script), str(model), str(out)], cwd=project,
                         capture_output=True, text=True, timeout=1800)
    assert got.returncode == 0, got.stderr[-3000:]
    result = json.loads(got.stdout.strip().splitlines()[-1])
    nodes = result["nodes"]
    assert sorted(n["op"] for n in nodes) == ["RmsNorm"] * 2 + ["Rope"] * 2 + ["Swiglu"]
    assert all(n["passed"] for n in nodes), nodes
    if half:  # one float16 unit of relative error on average, as ONNX Runtime's own run
        assert result["ort_mere_vs_float32"] < 2**-10, result
        assert result["mere_vs_float32"] < 2**-10, result
    else:
        assert result["passed"] and result["max_abs"] < 1e-4, result


_COMPARE = '''
import json, sys
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T, numpy_helper as nh
from opsdk import load
from opsdk.onnx import Session, check_custom_node, find_spec
from opsdk.testing import compare, standard_for

original, rewritten = sys.argv[1], sys.argv[2]


def widened(m):
    """The float16 graph computing in float32: the same weights, casts and constants."""
    g = m.graph
    for t in list(g.initializer):
        if t.data_type == T.FLOAT16:
            t.CopyFrom(nh.from_array(nh.to_array(t).astype(np.float32), t.name))
    for vi in [*g.input, *g.output, *g.value_info]:
        if vi.type.tensor_type.elem_type == T.FLOAT16:
            vi.type.tensor_type.elem_type = T.FLOAT
    for n in g.node:
        for a in n.attribute:
            if n.op_type == "Cast" and a.name == "to" and a.i == T.FLOAT16:
                a.i = T.FLOAT
            if n.op_type == "Constant" and a.name == "value" and a.t.data_type == T.FLOAT16:
                a.t.CopyFrom(nh.from_array(nh.to_array(a.t).astype(np.float32)))
    return m


def run_ort(model, feeds, names=()):
    m = onnx.load(model) if isinstance(model, str) else model
    m.graph.output.extend(onnx.ValueInfoProto(name=n) for n in names)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


rng = np.random.default_rng(1)
angles = rng.standard_normal((2, 8, 8)).astype(np.float32)
full = np.concatenate([angles, angles], -1)
sess = Session(rewritten)
dt = np.float16 if "float16" in sess.get_inputs()[0].type else np.float32
feeds = {"x": rng.standard_normal((2, 8, 64)).astype(dt),
         "cos": np.cos(full).astype(dt), "sin": np.sin(full).astype(dt)}
fused = [n for n in onnx.load(rewritten).graph.node if n.domain == "com.llm"]
names = sorted({v for n in fused for v in [*n.input, n.output[0]] if v} - set(feeds))
values = run_ort(original, feeds, names)
values.update(feeds)
report = []
for n in fused:
    spec = find_spec(n.domain, n.op_type)
    attrs = check_custom_node(spec, n)
    args = [values[v] if v in values else
            nh.to_array(next(t for t in onnx.load(original).graph.initializer if t.name == v))
            for v in n.input]
    out = load(f"{n.domain}::{n.op_type}")(*args, **attrs)
    y = out[0] if isinstance(out, tuple) else out
    c = compare(y, values[n.output[0]], standard_for(y.dtype.name, spec.standard))
    report.append({"op": n.op_type, "passed": bool(c.passed), "dtype": y.dtype.name,
                   "max_abs": float(c.max_abs_error), "reason": c.reason})
want = values["y"]
got = sess.run(None, feeds)[0]
result = {"nodes": report, "max_abs": float(np.max(np.abs(got.astype(np.float64) - want)))}
if dt == np.float16:
    gold = run_ort(widened(onnx.load(original)),
                   {k: v.astype(np.float32) for k, v in feeds.items()})["y"]
    result["mere_vs_float32"] = float(compare(got, gold, standard_for("float16")).mere)
    result["ort_mere_vs_float32"] = float(compare(want, gold, standard_for("float16")).mere)
else:
    result["passed"] = bool(compare(got, want, standard_for("float32")).passed)
print(json.dumps(result))
'''


def _llm_graph(dtype: int, split: bool, div: bool = False) -> onnx.ModelProto:
    """RMSNorm as ``x * x`` with Cast islands (in float16) and ``Reciprocal(Sqrt)`` or
    ``Div(x, Sqrt)``; rotate-half with Split or Slices; SwiGLU as ``Sigmoid(g) * (g * u)``:
    the variants the torch block does not write."""
    n = h.make_node
    c = h.make_tensor
    f32 = T.FLOAT
    nodes = [
        n("Cast", ["x"], ["xf"], to=f32), n("Mul", ["xf", "xf"], ["sq"]),
        n("ReduceMean", ["sq"], ["ms"], axes=[2], keepdims=1),
        n("Add", ["eps", "ms"], ["mse"]), n("Sqrt", ["mse"], ["rms"]),
    ]
    if div:
        nodes += [n("Div", ["xf", "rms"], ["xn"])]
    else:
        nodes += [n("Reciprocal", ["rms"], ["rstd"]), n("Mul", ["rstd", "xf"], ["xn"])]
    nodes += [n("Cast", ["xn"], ["xh"], to=dtype), n("Mul", ["xh", "w"], ["hn"])]
    if split:
        nodes += [n("Split", ["hn", "two"], ["h1", "h2"], axis=-1)]
    else:
        nodes += [n("Slice", ["hn", "z", "half", "last"], ["h1"]),
                  n("Slice", ["hn", "half", "big", "last"], ["h2"])]
    nodes += [
        n("Neg", ["h2"], ["nh2"]), n("Concat", ["nh2", "h1"], ["rot"], axis=-1),
        n("Mul", ["hn", "cos"], ["a"]), n("Mul", ["sin", "rot"], ["b"]),
        n("Add", ["a", "b"], ["r"]),
        n("Sigmoid", ["r"], ["sg"]), n("Mul", ["r", "up"], ["ru"]), n("Mul", ["sg", "ru"], ["y"]),
    ]
    half = D // 2
    rng = np.random.default_rng(0)
    ftype = onnx.helper.tensor_dtype_to_np_dtype(dtype)
    inits = [onnx.numpy_helper.from_array((1 + 0.1 * rng.standard_normal(D)).astype(ftype), "w"),
             c("eps", f32, [], [1e-5]), c("two", T.INT64, [2], [half, half]),
             c("z", T.INT64, [1], [0]), c("half", T.INT64, [1], [half]),
             c("big", T.INT64, [1], [2**62]), c("last", T.INT64, [1], [-1])]
    vi = h.make_tensor_value_info
    g = h.make_graph(nodes, "llm", [vi("x", dtype, [2, 5, D]), vi("cos", dtype, [5, D]),
                                    vi("sin", dtype, [5, D]), vi("up", dtype, [2, 5, D])],
                     [vi("y", dtype, [2, 5, D])], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


@pytest.mark.parametrize("dtype,split,div", [(T.FLOAT16, True, False), (T.FLOAT, False, False),
                                             (T.FLOAT16, False, True)])
def test_variants_are_folded_and_proved(project, monkeypatch, dtype, split, div):
    monkeypatch.chdir(project)
    result = replace_ops(_llm_graph(dtype, split, div), ["RmsNorm", "Rope", "Swiglu"])
    actions = [(r.action, r.detail.split(" by ")[-1].split()[0]) for r in result.records
               if r.action == "replaced"]
    assert sorted(actions) == [("replaced", f"com.llm::{op}") for op in OPS], result.records
    assert result.records[-1].action == "checked", result.records
    ops = {n.op_type for n in result.model.graph.node}
    assert ops == {"RmsNorm", "Rope", "Swiglu"}, ops  # the Cast islands went with them
    norm = next(n for n in result.model.graph.node if n.op_type == "RmsNorm")
    assert list(norm.input) == ["x", "w"]  # x read back through the widening Cast
    eps = next(a.f for a in norm.attribute if a.name == "epsilon")
    assert eps == pytest.approx(1e-5)


def test_an_intermediate_read_elsewhere_is_not_folded(project, monkeypatch):
    monkeypatch.chdir(project)
    model = _llm_graph(T.FLOAT, False)
    model.graph.output.append(h.make_tensor_value_info("rms", T.FLOAT, None))
    result = replace_ops(model, ["RmsNorm"])
    assert not [r for r in result.records if r.action == "replaced"], result.records
    assert "Sqrt" in {n.op_type for n in result.model.graph.node}


def test_a_name_that_is_neither_op_nor_operator_names_the_starters(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = _llm_graph(T.FLOAT, False)
    with pytest.raises(SpecError) as e:
        replace_ops(model, ["RmsNorm"])
    assert "--like onnx:RmsNorm" not in str(e.value)
    assert "llm:rms_norm" in str(e.value) and "neither a standard ONNX op" in str(e.value)
    with pytest.raises(SpecError, match="--like onnx:Det"):  # an ONNX op: as before
        replace_ops(model, ["Det"])


def _rms_spec() -> OpSpec:
    """An RMSNorm over the last axis only (no axis attribute) standing in for ONNX's."""
    return OpSpec("LastRms", domain="com.llm", inputs=[Input("x"), Input("scale")],
                  outputs=[Output("y"), Output("rstd", "float32", optional=True)],
                  attrs=[Attr("epsilon", "float", 1e-5)], types={"T": ("float32",)},
                  onnx_op="RMSNormalization")


@pytest.mark.parametrize("axis,replaced", [(-1, True), (2, True), (1, False)])
def test_opset23_rmsnormalization_on_the_last_axis_is_replaced(axis, replaced):
    g = h.make_graph([h.make_node("RMSNormalization", ["x", "s"], ["y"], axis=axis,
                                  epsilon=1e-5, stash_type=1)], "g",
                     [h.make_tensor_value_info("x", T.FLOAT, [2, 3, 8])],
                     [h.make_tensor_value_info("y", T.FLOAT, [2, 3, 8])],
                     [onnx.numpy_helper.from_array(np.ones(8, np.float32), "s")])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 23)])
    result = replace_ops(model, ["RMSNormalization"], extra=[_rms_spec()])
    (record,) = result.records
    assert (record.action == "replaced") == replaced, record
    if replaced:
        node = result.model.graph.node[0]
        assert list(node.output) == ["y", ""]  # the optional rstd left out
    else:
        assert "axis" in record.detail


def test_a_pattern_registered_in_the_spec_is_found():
    spec = OpSpec("SiluOnly", domain="com.llm", inputs=[Input("x")], outputs=[Output("y")],
                  types={"T": ("float32",)})

    @spec.register_pattern
    def _silu(fb):  # type: ignore[no-untyped-def]
        x = fb.input("x")
        return fb.op("Div", x, fb.op("Add", fb.op("Constant", value_float=1.0),
                                     fb.op("Exp", fb.op("Neg", x))))

    n = h.make_node
    g = h.make_graph([n("Neg", ["x"], ["nx"]), n("Exp", ["nx"], ["e"]),
                      n("Add", ["e", "one"], ["d"]), n("Div", ["x", "d"], ["y"])], "g",
                     [h.make_tensor_value_info("x", T.FLOAT, [3, 4])],
                     [h.make_tensor_value_info("y", T.FLOAT, [3, 4])],
                     [h.make_tensor("one", T.FLOAT, [], [1.0])])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    result = replace_ops(model, ["com.llm::SiluOnly"], extra=[spec], check=False)
    assert [r.action for r in result.records] == ["replaced"]
    assert [nd.op_type for nd in result.model.graph.node] == ["SiluOnly"]


def test_a_fold_onnxruntime_disproves_is_not_kept():
    """A pattern whose operator computes something else (its fallback is Relu, the pattern
    x * Sigmoid(x)): the fold matches, ONNX Runtime disagrees, the original is kept."""
    spec = OpSpec("NotSilu", domain="com.llm", inputs=[Input("x")], outputs=[Output("y")],
                  types={"T": ("float32",)})

    @spec.register_function
    def _relu(fb):  # type: ignore[no-untyped-def]
        return fb.op("Relu", fb.input("x"))

    @spec.register_pattern
    def _silu(fb):  # type: ignore[no-untyped-def]
        x = fb.input("x")
        return fb.op("Mul", x, fb.op("Sigmoid", x))

    n = h.make_node
    g = h.make_graph([n("Sigmoid", ["x"], ["s"]), n("Mul", ["s", "x"], ["y"])], "g",
                     [h.make_tensor_value_info("x", T.FLOAT, [3, 4])],
                     [h.make_tensor_value_info("y", T.FLOAT, [3, 4])])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    result = replace_ops(model, ["NotSilu"], extra=[spec])
    assert [r.action for r in result.records] == ["refused", "refused"], result.records
    assert "differ from the original's" in result.records[-1].detail
    assert [nd.op_type for nd in result.model.graph.node] == ["Sigmoid", "Mul"]
