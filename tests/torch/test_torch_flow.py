"""From PyTorch to a served model with a freshly scaffolded operator, with no hand edits.

``opsdk new`` -> inside a torch module with a Conv and a LayerNorm: eager -> opcheck ->
torch.compile(fullgraph=True) -> gradcheck (float64) -> ONNX export with both exporters ->
opsdk doctor -> opsdk.onnx.Session (equal to eager) -> a real Triton server (CPU target).
Skipped with the reason where torch is not installed; the server part needs the serving
venv (see tests/triton/test_triton_server.py).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

torch = pytest.importorskip(
    "torch", reason="torch is not installed (scripts/setup.d/40-torch-cpu.sh installs it)")
pytest.importorskip("onnxscript", reason="the dynamo ONNX exporter needs onnxscript")

import opsdk.torch as ot  # noqa: E402
from opsdk.ascend import (  # noqa: E402
    check_plugin_keys,
    default_origin_op_type,
    normalize_default_domain,
    origin_op_types,
)
from opsdk.ascend.atc.doctor import diagnose  # noqa: E402
from opsdk.cli import main  # noqa: E402
from opsdk.errors import SpecError  # noqa: E402
from opsdk.onnx import Session  # noqa: E402
from opsdk.triton.testing import triton_server  # noqa: E402,F401

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:.*LeafSpec.*:FutureWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.usefixtures("setuptools_keeps_stdlib_distutils"),
    pytest.mark.filterwarnings("ignore:Reliance on distutils from stdlib:UserWarning"),
]


class Net(torch.nn.Module):
    """Conv -> the scaffolded operator -> LayerNorm."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 3, 3)
        self.ln = torch.nn.LayerNorm(4)

    def forward(self, x: Any) -> Any:
        return self.ln(torch.ops.com_example.TorchFlowOp(self.conv(x), threshold=0.25))


def _scaffold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, *flags: str) -> None:
    monkeypatch.chdir(tmp_path)  # opsdk finds ./operators
    assert main(["new", name, "--inputs", "x:float32,float64", "--attrs",
                 "threshold:float=0.5", "--domain", "com.example", *flags]) == 0


def _exports(net: Any, x: Any, tmp_path: Path, op_name: str) -> dict[str, Path]:
    paths = {}
    for dynamo in (True, False):
        path = paths["dynamo" if dynamo else "torchscript"] = tmp_path / f"net_{dynamo}.onnx"
        ot.export(net, (x,), path, dynamo=dynamo, opset_version=18)
        model = onnx.load(str(path))
        assert [(n.domain, n.op_type) for n in model.graph.node] == [
            ("", "Conv"), ("com.example", op_name), ("", "LayerNormalization")], path.name
        custom = model.graph.node[1]
        assert [(a.name, round(a.f, 6)) for a in custom.attribute] == [("threshold", 0.25)]
        assert {(o.domain, o.version) for o in model.opset_import} == {("", 18),
                                                                        ("com.example", 1)}
    return paths


def _doctor(path: Path, op_name: str) -> None:
    """CANN 8's ATC: the one finding is the mixed default domain (ATC error E16005), which the
    copy opsdk makes for ATC resolves; that copy has no findings, and the node's plugin key
    is the one `opsdk cann` registers."""
    assert [f.code for f in diagnose(str(path), "ascend-cann8")] == ["mixed-default-domain"]
    for_atc = normalize_default_domain(onnx.load(str(path)))
    assert diagnose(for_atc, "ascend-cann8") == []
    key = default_origin_op_type(ot.register(op_name).spec)
    assert origin_op_types(for_atc) == {op_name: [key]} == {op_name: ["com.example::1::" + op_name]}
    assert check_plugin_keys(for_atc, {op_name: [key]}) == []


def _serve(path: Path, tmp_path: Path, start: Callable[..., Any], x: np.ndarray) -> Any:
    import tritonclient.http as http

    from opsdk.triton import RepositoryOptions, build_repository

    repo = tmp_path / "repo"
    build_repository(path, repo, RepositoryOptions("net"))
    model = onnx.load(str(path))
    server = start(repo)
    with http.InferenceServerClient(server.http_url) as client:
        inp = http.InferInput(model.graph.input[0].name, list(x.shape), "FP32")
        inp.set_data_from_numpy(x)
        return client.infer("net", [inp]).as_numpy(model.graph.output[0].name)


def test_scaffolded_operator_from_a_torch_module_to_triton(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, triton_server: Callable[..., Any]  # noqa: F811
) -> None:
    _scaffold(tmp_path, monkeypatch, "TorchFlowOp", "--backward")
    torch.manual_seed(0)
    ot.load("TorchFlowOp")
    net = Net().eval()
    x = torch.randn(1, 2, 6, 6)
    # eager: the template's kernel copies its input, so the net is LayerNorm(Conv(x))
    with torch.no_grad():
        eager = net(x)
        torch.testing.assert_close(eager, net.ln(net.conv(x)), rtol=0, atol=0)
    report = ot.opcheck("TorchFlowOp")
    assert report.ok, str(report)
    torch._dynamo.reset()
    with torch.no_grad():
        compiled = torch.compile(net, fullgraph=True)(x)
    torch.testing.assert_close(compiled, eager, rtol=1e-5, atol=1e-5)
    grad = ot.gradcheck("TorchFlowOp")
    assert grad.passed and grad.dtype == "float64" and grad.source == "backward", str(grad)
    net64 = copy.deepcopy(net).double()
    assert torch.autograd.gradcheck(net64, (x.double().requires_grad_(),))
    paths = _exports(net, x, tmp_path, "TorchFlowOp")
    for path in paths.values():
        _doctor(path, "TorchFlowOp")
        feed = {onnx.load(str(path)).graph.input[0].name: x.numpy()}
        [got] = Session(str(path)).run(None, feed)
        np.testing.assert_allclose(got, eager.numpy(), rtol=1e-5, atol=1e-5)
    served = _serve(paths["dynamo"], tmp_path, triton_server, x.numpy())
    [session] = Session(str(paths["dynamo"])).run(None, {"x": x.numpy()})
    np.testing.assert_array_equal(served, session)


def test_backward_of_an_operator_without_one_names_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _scaffold(tmp_path, monkeypatch, "TorchNoGradOp")
    op = ot.load("TorchNoGradOp")
    assert ot.gradient_source(ot.register("TorchNoGradOp").spec) == "none"
    x = torch.randn(3, 4, requires_grad=True)
    y = op(x)  # the forward works; only backward has nothing to run
    with pytest.raises(SpecError, match=r"TorchNoGradOp: the operator has no backward.*"
                       r"@SPEC.register_function.*@SPEC.register_backward.*opsdk new --backward"):
        y.sum().backward()
    result = ot.gradcheck("TorchNoGradOp")
    assert result.passed is None and "no backward" in str(result)
