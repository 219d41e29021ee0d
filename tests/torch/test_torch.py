"""opsdk.torch: every shipped operator as a torch.library custom op.

Registration and schema, the CPU kernel on zero-copy views, errors equal to op(x)'s, the fake
implementation (torch.compile with fullgraph, dynamic shapes, torch.export), opcheck,
gradients, ONNX export with both exporters, replace(), and the NPU implementation (skipped
without torch_npu). Skipped with the reason where torch is not installed.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

torch = pytest.importorskip(
    "torch", reason="torch is not installed (scripts/setup.d/40-torch-cpu.sh installs it)")

import opsdk  # noqa: E402
import opsdk.torch as ot  # noqa: E402
from opsdk.errors import SpecError  # noqa: E402
from opsdk.onnx import build_function  # noqa: E402
from opsdk.registry import load_spec  # noqa: E402
from opsdk.torch._check import FLOAT32_TOLERANCES, sample_inputs  # noqa: E402
from opsdk.torch._convert import from_numpy, to_numpy  # noqa: E402
from opsdk.torch._onnx_eval import evaluate  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted(p.name for p in (ROOT / "operators").iterdir() if (p / "spec.py").is_file())
NAMES = [load_spec(ROOT / "operators" / s).name for s in SHIPPED]
# torch's own deprecations inside torch.export / the ONNX exporters, not opsdk's
pytestmark = [
    pytest.mark.filterwarnings("ignore:.*LeafSpec.*:FutureWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.usefixtures("setuptools_keeps_stdlib_distutils"),
    pytest.mark.filterwarnings("ignore:Reliance on distutils from stdlib:UserWarning"),
]


def _float32_sample(name: str) -> tuple[list[Any], dict[str, Any]]:
    spec = ot.register(name).spec
    _, args, attrs = next(s for s in sample_inputs(spec) if s[1][0].dtype == torch.float32)
    return [None if a is None else a.detach() for a in args], attrs


def _as_tuple(out: Any) -> tuple[Any, ...]:
    return out if isinstance(out, tuple) else (out,)


def test_import_opsdk_never_imports_torch() -> None:
    code = "import sys, opsdk, opsdk.onnx, opsdk.cli; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_every_operator_is_registered_under_its_domain_namespace() -> None:
    names = {r.qualname for r in ot.registered()}
    assert {f"com_opsdk::{n}" for n in NAMES} <= names
    assert ot.ops.com_opsdk.Gelu is torch.ops.com_opsdk.Gelu
    assert ot.load("com.opsdk::Softmax") is torch.ops.com_opsdk.Softmax
    with pytest.raises(AttributeError, match="has no operator 'Nope'; known: .*Gelu"):
        ot.ops.com_opsdk.Nope  # noqa: B018


@pytest.mark.parametrize("name,schema", [
    ("LayerNormalization", "com_opsdk::LayerNormalization(Tensor X, Tensor Scale, Tensor? B=None,"
     " *, int axis=-1, float epsilon=1.0000000000000001e-05, int stash_type=1) -> (Tensor, "
     "Tensor, Tensor)"),
    ("Gelu", 'com_opsdk::Gelu(Tensor X, *, str approximate="none") -> Tensor'),
    ("FusedConvBnRelu", "com_opsdk::FusedConvBnRelu(Tensor x, Tensor w, Tensor? b=None, *, "
     "int[] strides=1, int[] pads=0, int[] dilations=1, int group=1) -> Tensor"),
])
def test_schema_comes_from_the_spec(name: str, schema: str) -> None:
    assert str(ot.load(name).default._schema) == schema
    args = ot.load("FusedConvBnRelu").default._schema.arguments
    assert [a.default_value for a in args[3:]] == [[1, 1], [0, 0, 0, 0], [1, 1], 1]


def test_schema_takes_a_spec_or_an_operator_name() -> None:
    assert ot.schema("ThresholdedRelu") == ot.schema(opsdk.load("ThresholdedRelu").spec)
    assert ot.schema("ThresholdedRelu") == "(Tensor x, *, float alpha=1.0) -> Tensor"
    with pytest.raises(SpecError, match="schema: expected an OpSpec or an operator name, got int"):
        ot.schema(5)  # type: ignore[arg-type]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_views_share_memory_both_ways(dtype: Any) -> None:
    t = torch.arange(6, dtype=dtype)
    a = to_numpy(t)
    assert a.ctypes.data == t.data_ptr() and str(a.dtype) == str(dtype).removeprefix("torch.")
    back = from_numpy(a)
    assert back.data_ptr() == t.data_ptr() and back.dtype == dtype
    strided = torch.arange(12, dtype=dtype).reshape(3, 4).t()
    np.testing.assert_array_equal(to_numpy(strided).astype(np.float32),
                                  strided.float().numpy())


@pytest.mark.parametrize("name", NAMES)
def test_torch_op_equals_the_opsdk_op_bitwise(name: str) -> None:
    spec = ot.register(name).spec
    op = opsdk.load(name)
    for _, args, attrs in sample_inputs(spec):
        got = _as_tuple(ot.load(name)(*args, **attrs))
        want = _as_tuple(op(*[None if a is None else to_numpy(a) for a in args], **attrs))
        for g, w in zip(got, want):
            assert str(g.dtype).removeprefix("torch.") == str(w.dtype)
            np.testing.assert_array_equal(to_numpy(g).view(np.uint8), w.view(np.uint8))


def test_non_contiguous_input_is_made_contiguous() -> None:
    x = torch.randn(6, 5).t()
    np.testing.assert_array_equal(ot.ops.com_opsdk.Softmax(x, axis=1).numpy(),
                                  ot.ops.com_opsdk.Softmax(x.contiguous(), axis=1).numpy())


@pytest.mark.parametrize("call,match", [
    (lambda: ot.ops.com_opsdk.Gelu(torch.ones(3, dtype=torch.float64)),
     r"Gelu: input 'X' has dtype float64, expected one of float16, float32, bfloat16"),
    (lambda: ot.ops.com_opsdk.Softmax(torch.ones(2, 3), axis=2),
     r"Softmax: attribute 'axis' is 2, out of range for input 'input' of rank 2"),
    (lambda: ot.ops.com_opsdk.Gelu(torch.ones(3), approximate="fast"), None),
])
def test_bad_input_raises_what_op_raises_eager_and_traced(call: Any, match: str | None) -> None:
    with pytest.raises(Exception) as eager:
        call()
    if match:
        assert isinstance(eager.value, SpecError) and eager.match(match)
    torch._dynamo.reset()
    with pytest.raises(Exception) as traced:
        torch.compile(call, fullgraph=True, backend="aot_eager")()
    assert str(eager.value).splitlines()[0] in str(traced.value)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_opcheck_passes(name: str) -> None:
    report = ot.opcheck(name)
    assert report.ok, str(report)
    assert report.results and all(
        set(r.tests) >= {"test_schema", "test_faketensor", "test_aot_dispatch_dynamic"}
        for r in report.results)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_compile_fullgraph_dynamic_and_export(name: str) -> None:
    args, attrs = _float32_sample(name)
    op = ot.load(name)

    class M(torch.nn.Module):
        def forward(self, *xs: Any) -> Any:
            return op(*xs, **attrs)

    eager = _as_tuple(M()(*args))
    torch._dynamo.reset()
    compiled = _as_tuple(torch.compile(M(), fullgraph=True, dynamic=True)(*args))
    for c, e in zip(compiled, eager):
        torch.testing.assert_close(c, e, rtol=0, atol=0)
    program = torch.export.export(M(), tuple(args))
    targets = [n.target for n in program.graph.nodes if n.op == "call_function"]
    assert op.default in targets
    for p, e in zip(_as_tuple(program.module()(*args)), eager):
        torch.testing.assert_close(p, e, rtol=0, atol=0)


def test_fake_keeps_symbolic_sizes_under_export() -> None:
    class M(torch.nn.Module):
        def forward(self, x: Any, scale: Any) -> Any:
            y = ot.ops.com_opsdk.LayerNormalization(x, scale)[0]
            return ot.ops.com_opsdk.Softmax(y, axis=-1)

    batch = torch.export.Dim("batch", min=2)
    program = torch.export.export(M(), (torch.randn(4, 8), torch.ones(8)),
                                  dynamic_shapes=({0: batch}, None))
    out = next(n for n in program.graph.nodes if n.op == "output").args[0][0]
    assert str(out.meta["val"].shape[0]) == "s0" or not str(out.meta["val"].shape[0]).isdigit()
    got = program.module()(torch.randn(7, 8), torch.ones(8))
    assert got.shape == (7, 8)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_gradcheck_through_the_kernel(name: str) -> None:
    assert ot.gradient_source(ot.register(name).spec) == "decomposition"
    result = ot.gradcheck(name)
    assert result.passed, str(result)


@pytest.mark.parametrize("name", NAMES)
def test_decomposition_evaluator_equals_the_kernel(name: str) -> None:
    """The torch evaluator of the decomposition (the source of the gradients) computes what
    the kernel computes, and its autograd passes gradcheck in float64 (with float32's
    tolerances where the decomposition itself computes in float32, as Gelu's does)."""
    spec = ot.register(name).spec
    args, attrs = _float32_sample(name)
    for got, want in zip(evaluate(spec, args, attrs), _as_tuple(ot.load(name)(*args, **attrs))):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    doubles = tuple(None if a is None else a.double().requires_grad_() for a in args)
    small = tuple(None if a is None else a for a in doubles)

    def first(*xs: Any) -> Any:
        return evaluate(spec, list(xs), attrs)[0]

    narrows = any(n.op_type == "Cast" for n in build_function(spec, 21).node)
    assert torch.autograd.gradcheck(first, small, fast_mode=True,
                                    **(FLOAT32_TOLERANCES if narrows else {}))


def test_backward_of_the_decomposition_matches_torch() -> None:
    x = torch.randn(3, 7, requires_grad=True)
    ot.ops.com_opsdk.Softmax(x, axis=1).pow(2).sum().backward()
    ref = x.detach().clone().requires_grad_()
    torch.softmax(ref, dim=1).pow(2).sum().backward()
    torch.testing.assert_close(x.grad, ref.grad)
    g = torch.randn(2, 5, requires_grad=True)
    ot.ops.com_opsdk.Gelu(g, approximate="tanh").sum().backward()
    ref = g.detach().clone().requires_grad_()
    torch.nn.functional.gelu(ref, approximate="tanh").sum().backward()
    torch.testing.assert_close(g.grad, ref.grad)


def _onnx_nodes(path: Path) -> list[tuple[str, str]]:
    return [(n.domain, n.op_type) for n in onnx.load(str(path)).graph.node]


@pytest.mark.slow
@pytest.mark.parametrize("dynamo", [True, False], ids=["dynamo", "torchscript"])
@pytest.mark.parametrize("name", NAMES)
def test_onnx_export_writes_one_node_and_runs_like_eager(
    name: str, dynamo: bool, tmp_path: Path
) -> None:
    if dynamo:
        pytest.importorskip("onnxscript", reason="the dynamo ONNX exporter needs onnxscript")
    from opsdk.onnx import Session

    args, attrs = _float32_sample(name)
    spec = ot.register(name).spec
    op = ot.load(name)

    class M(torch.nn.Module):
        def forward(self, *xs: Any) -> Any:
            return op(*xs, **attrs)

    path = tmp_path / "m.onnx"
    ot.export(M().eval(), tuple(args), path, dynamo=dynamo, opset_version=18)
    model = onnx.load(str(path))
    assert _onnx_nodes(path) == [(spec.domain, spec.name)]
    assert {(o.domain, o.version) for o in model.opset_import} >= {(spec.domain, spec.version)}
    node = model.graph.node[0]
    written = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    assert set(written) == {a.name for a in spec.attrs}
    for k, v in spec.resolve_attrs(attrs).items():
        assert (written[k].decode() if isinstance(written[k], bytes) else written[k]) == \
            (pytest.approx(v) if isinstance(v, float) else int(v) if isinstance(v, bool) else v)
    feeds = {i.name: a.numpy() for i, a in zip(model.graph.input, [a for a in args if a is not None])}
    eager = _as_tuple(M()(*args))
    for got, want in zip(Session(str(path)).run(None, feeds), eager):
        np.testing.assert_array_equal(got, want.numpy())


def test_onnx_translation_table_covers_every_registered_op() -> None:
    pytest.importorskip("onnxscript", reason="the dynamo ONNX exporter needs onnxscript")
    table = ot.onnx_translations()
    assert {r.overload for r in ot.registered()} == set(table)


def test_replace_swaps_layers_and_functions_where_semantics_match() -> None:
    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)
            self.act = torch.nn.GELU(approximate="tanh")
            self.ln = torch.nn.LayerNorm(8, eps=1e-3)
            self.sm = torch.nn.Softmax(dim=-1)
            self.legacy = torch.nn.Softmax()

        def forward(self, x: Any, grid: Any) -> Any:
            y = self.sm(self.ln(self.act(self.fc(x))))
            z = torch.nn.functional.softmax(y, dim=1) + torch.nn.functional.softmax(
                y, dim=1, dtype=torch.float32)
            img = z.reshape(1, 1, 4, 8)
            return torch.nn.functional.grid_sample(img, grid, align_corners=True)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # nn.Softmax() without dim
        net = Net()
    x, grid = torch.randn(4, 8), torch.rand(1, 3, 3, 2) * 2 - 1
    want = net(x, grid)
    swapped, report = ot.replace(net)
    text = str(report)
    assert [s[1] for s in report.swapped] == [
        "nn.GELU", "nn.LayerNorm", "nn.Softmax", "F.softmax", "F.grid_sample"], text
    assert "com.opsdk::Gelu (approximate='tanh')" in text
    assert "axis=-1, epsilon=0.001" in text
    left = {s[1]: s[2] for s in report.left}
    assert "legacy implicit dim" in left["nn.Softmax"] and "dtype=" in left["F.softmax"], text
    torch.testing.assert_close(swapped(x, grid), want, rtol=1e-5, atol=1e-6)
    graph = str(swapped.graph)
    assert "com_opsdk.Softmax" in graph and "com_opsdk.GridSample" in graph


def test_npu_implementation_needs_torch_npu() -> None:
    reason = ot.npu_unavailable()
    if reason:
        assert "torch_npu" in reason
        pytest.skip(reason)
    from opsdk.ascend.npu.executor import npu_available

    ok, why = npu_available()
    if not ok:
        pytest.skip(why)
    x = torch.randn(4, 16)
    got = ot.ops.com_opsdk.Softmax(x.to("npu"), axis=-1).cpu()
    torch.testing.assert_close(got, ot.ops.com_opsdk.Softmax(x, axis=-1), rtol=1e-3, atol=1e-3)


def test_an_operator_torch_cannot_spell_is_left_out_of_the_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opsdk.torch._register import FAILED

    folder = tmp_path / "quote_op"
    folder.mkdir()
    (folder / "spec.py").write_text(
        "from opsdk.spec import Attr, Input, OpSpec, Output\n"
        "SPEC = OpSpec('QuoteOp', domain='com.quote', inputs=[Input('x', 'float32')],\n"
        "              outputs=[Output('y', 'float32')], attrs=[Attr('s', 'string', \"it's\")])\n")
    monkeypatch.setenv("OPSDK_OPERATORS_PATH", str(tmp_path))
    with pytest.warns(ot.OperatorLeftOut, match="left out 1 operator.* QuoteOp: the default"):
        done = ot.register_all(strict=False)
    assert "com.quote::QuoteOp" not in {r.info.qualified for r in done}
    ot.register_all(strict=False)  # warned once: a second pass is silent (warnings are errors)
    assert "QuoteOp: the default \"it's\" of attribute 's' holds a quote" in \
        FAILED["com.quote::QuoteOp"]
    with pytest.raises(SpecError, match="holds a quote"):
        ot.load("QuoteOp")


@pytest.mark.parametrize("name", ["opsdk.torch._schema", "opsdk.torch._convert"])
def test_docstring_examples(name: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.slow
def test_opsdk_check_runs_opcheck_and_gradcheck(capsys: pytest.CaptureFixture[str]) -> None:
    from opsdk.cli import main

    assert main(["check", "ThresholdedRelu"]) == 0
    out = capsys.readouterr().out
    assert "ThresholdedRelu: torch.library.opcheck passed on 2 sample(s)" in out
    assert "ThresholdedRelu: gradcheck passed (decomposition gradient, float64" in out
    assert "checked  float32-small: d(y)/d(x), 24x24 entries" in out
    assert main(["check", "ThresholdedRelu", "--no-torch"]) == 0
    assert "opcheck" not in capsys.readouterr().out


@pytest.mark.slow
def test_exported_model_builds_for_the_ascend_triton_target(tmp_path: Path) -> None:
    """A PyTorch model calling shipped operators (which have decompositions) exports, builds
    as an npu_ge model and passes `opsdk triton check` under CANN 8.1.RC1's parser rules.

    The commands run in their own process, as a user runs them: the check loads the ONNX
    Runtime release npu_ge pins, which must not share a process with torch's libraries."""
    pytest.importorskip("onnxscript", reason="the dynamo ONNX exporter needs onnxscript")

    def opsdk_cmd(*args: str) -> None:
        proc = subprocess.run([sys.executable, "-m", "opsdk", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)

        def forward(self, x: Any) -> Any:
            return ot.ops.com_opsdk.Softmax(torch.relu(self.fc(x)), axis=-1)

    path = tmp_path / "net.onnx"
    ot.export(Net().eval(), (torch.randn(4, 8),), path, opset_version=18)
    assert [n.op_type for n in onnx.load(str(path)).graph.node] == ["Gemm", "Relu", "Softmax"]
    repo = tmp_path / "repo"
    opsdk_cmd("triton", "build", str(path), "-o", str(repo), "--name", "net", "--target", "ascend")
    opsdk_cmd("triton", "check", str(repo / "net"), "--cann", "8.1.RC1")
