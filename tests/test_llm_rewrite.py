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


def _block(opset: int, path: Path) -> Path:
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
    with warnings.catch_warnings():  # the TorchScript exporter is deprecated
        warnings.simplefilter("ignore")
        torch.onnx.export(Block().eval(), args, str(path), dynamo=False, opset_version=opset,
                          input_names=["x", "cos", "sin"], output_names=["y"])
    return path


def _opsdk(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "opsdk", *args], cwd=project,
                          capture_output=True, text=True, timeout=1200)


@pytest.mark.parametrize("opset", [17, 18])  # ReduceMean's axes an attribute, an input
def test_decoder_block_every_decomposition_is_folded(project, opset):
    model = _block(opset, project / f"block{opset}.onnx")
    out = project / f"block{opset}_llm.onnx"
    run = _opsdk(project, "rewrite", str(model), "-o", str(out), "--replace", "RmsNorm",
                 "--replace", "Rope,Swiglu", "--json")
    assert run.returncode == 0, run.stderr
    records = json.loads(run.stdout)["records"]
    folded = [r["detail"].split(" by ")[1].split()[0] for r in records
              if r["action"] == "replaced"]
    assert sorted(folded) == ["com.llm::RmsNorm"] * 2 + ["com.llm::Rope"] * 2 + \
        ["com.llm::Swiglu"], records
    assert [r["action"] for r in records if r["node"] == "the model"] == ["checked"]
    rewritten = onnx.load(str(out))
    ops = [n.op_type for n in rewritten.graph.node]
    for gone in ("Pow", "ReduceMean", "Sqrt", "Sigmoid", "Neg", "Concat", "Slice"):
        assert gone not in ops, (gone, ops)
    assert ops.count("RmsNorm") == 2 and ops.count("Rope") == 2 and ops.count("Swiglu") == 1
    original = onnx.load(str(model))
    assert len(rewritten.graph.node) < len(original.graph.node) - 40


@pytest.mark.slow
def test_rewritten_block_under_session_equals_onnxruntime(project):
    """The kernels built from the starters, unedited, under Session, against ONNX Runtime on
    the original model, within the operators' float32 precision standard."""
    model = _block(17, project / "block_s.onnx")
    out = project / "block_s_llm.onnx"
    run = _opsdk(project, "rewrite", str(model), "-o", str(out), "--replace",
                 "RmsNorm,Rope,Swiglu")
    assert run.returncode == 0, run.stderr
    script = project / "compare.py"
    script.write_text(_COMPARE)
    got = subprocess.run([sys.executable, str(script), str(model), str(out)], cwd=project,
                         capture_output=True, text=True, timeout=1800)
    assert got.returncode == 0, got.stderr[-3000:]
    result = json.loads(got.stdout.strip().splitlines()[-1])
    assert result["custom_nodes"] == 5
    assert result["passed"], result
    assert result["max_abs"] < 1e-4, result


_COMPARE = '''
import json, sys
import numpy as np
import onnxruntime as ort
from opsdk.onnx import Session
from opsdk.testing import compare, standard_for

original, rewritten = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(1)
angles = rng.standard_normal((2, 8, 8)).astype(np.float32)
full = np.concatenate([angles, angles], -1)
feeds = {"x": rng.standard_normal((2, 8, 64)).astype(np.float32),
         "cos": np.cos(full), "sin": np.sin(full)}
want = ort.InferenceSession(original, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
sess = Session(rewritten)
got = sess.run(None, feeds)[0]
import onnx
custom = sum(1 for n in onnx.load(rewritten).graph.node if n.domain == "com.llm")
verdict = compare(got, want, standard_for("float32"))
print(json.dumps({"passed": bool(verdict.passed), "custom_nodes": custom,
                  "max_abs": float(np.max(np.abs(got.astype(np.float64) - want)))}))
'''


def _llm_graph(dtype: int, split: bool) -> onnx.ModelProto:
    """RMSNorm in float16 with Cast islands and ``Reciprocal(Sqrt)``; rotate-half with Split;
    SwiGLU as ``Sigmoid(g) * (g * u)``: the variants the torch block does not write."""
    n = h.make_node
    c = h.make_tensor
    f32 = T.FLOAT
    nodes = [
        n("Cast", ["x"], ["xf"], to=f32), n("Mul", ["xf", "xf"], ["sq"]),
        n("ReduceMean", ["sq"], ["ms"], axes=[2], keepdims=1),
        n("Add", ["eps", "ms"], ["mse"]), n("Sqrt", ["mse"], ["rms"]),
        n("Reciprocal", ["rms"], ["rstd"]), n("Mul", ["rstd", "xf"], ["xn"]),
        n("Cast", ["xn"], ["xh"], to=dtype), n("Mul", ["xh", "w"], ["hn"]),
    ]
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


@pytest.mark.parametrize("dtype,split", [(T.FLOAT16, True), (T.FLOAT, False)])
def test_variants_are_folded_and_proved(project, monkeypatch, dtype, split):
    monkeypatch.chdir(project)
    result = replace_ops(_llm_graph(dtype, split), ["RmsNorm", "Rope", "Swiglu"])
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
