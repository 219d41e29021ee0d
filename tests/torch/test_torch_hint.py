"""Issue 33 item 5: a plain ``torch.onnx.export(model, ..., dynamo=True)`` of a model with
opsdk operators tells the user, in one line naming the operator, that ``opsdk.torch.export``
or ``custom_translation_table=opsdk.torch.onnx_translations()`` is the way; with either, no
hint. Real torch and its exporter; skipped without them.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip(
    "torch", reason="torch is not installed (scripts/setup.d/40-torch-cpu.sh installs it)")
pytest.importorskip("onnxscript", reason="the dynamo ONNX exporter needs onnxscript")

import onnx  # noqa: E402

import opsdk.torch as ot  # noqa: E402

# torch's own deprecations inside torch.export / the ONNX exporter, not opsdk's
pytestmark = [
    pytest.mark.filterwarnings("ignore:.*LeafSpec.*:FutureWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.usefixtures("setuptools_keeps_stdlib_distutils"),
    pytest.mark.filterwarnings("ignore:Reliance on distutils from stdlib:UserWarning"),
]

HINT = ("torch.onnx.export(dynamo=True) has no ONNX translation for the opsdk operator "
        "com_opsdk::Softmax: export with opsdk.torch.export(model, args, path), or pass "
        "custom_translation_table=opsdk.torch.onnx_translations()")


def _net() -> Any:
    class Net(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            return ot.ops.com_opsdk.Softmax(torch.relu(x), axis=-1)

    return Net().eval()


def test_plain_dynamo_export_names_the_op_and_the_way() -> None:
    with pytest.warns(UserWarning) as seen, pytest.raises(Exception, match="Failed to convert"):
        torch.onnx.export(_net(), (torch.randn(4, 8),), dynamo=True)
    hints = [str(w.message) for w in seen if "opsdk" in str(w.message)]
    assert hints == [HINT]  # one line, once
    assert all(w.category is ot.OnnxExportHint for w in seen if "opsdk" in str(w.message))


def _no_hint(call: Any) -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        call()
    assert [str(w.message) for w in seen if issubclass(w.category, ot.OnnxExportHint)] == []


def test_no_hint_with_the_translation_table() -> None:
    def run() -> None:
        program = torch.onnx.export(_net(), (torch.randn(4, 8),), dynamo=True,
                                    custom_translation_table=ot.onnx_translations())
        assert program is not None
        assert [n.op_type for n in program.model_proto.graph.node] == ["Relu", "Softmax"]

    _no_hint(run)


def test_no_hint_through_opsdk_torch_export(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    _no_hint(lambda: ot.export(_net(), (torch.randn(4, 8),), path))
    assert [n.domain for n in onnx.load(str(path)).graph.node] == ["", "com.opsdk"]


def test_no_hint_outside_onnx_export() -> None:
    """torch.export alone (the fake kernel runs too) is not an ONNX export."""
    _no_hint(lambda: torch.export.export(_net(), (torch.randn(4, 8),)))
