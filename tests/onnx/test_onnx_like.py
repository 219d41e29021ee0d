"""``--like onnx:<Op>``: spec outlines read from ONNX's schemas."""

from __future__ import annotations

import pytest

from opsdk.errors import SpecError
from opsdk.onnx import like_onnx
from opsdk.spec import REQUIRED, Attr, Input, OpSpec, Output


def test_grid_sample_outline():
    o = like_onnx("GridSample")
    assert (o["op_type"], o["domain"]) == ("GridSample", "")
    assert o["since_version"] >= 16
    assert [(i["name"], i["type"], i["optional"]) for i in o["inputs"]] == [
        ("x", "T1", False),
        ("grid", "T2", False),
    ]
    assert [(p["name"], p["type"]) for p in o["outputs"]] == [("y", "T1")]
    attrs = {a["name"]: (a["type"], a["default"]) for a in o["attrs"]}
    assert attrs == {
        "align_corners": ("int", 0),
        "mode": ("string", "linear"),
        "padding_mode": ("string", "zeros"),
    }
    assert o["types"]["T2"] == ["float16", "bfloat16", "float32", "float64"]
    assert "float32" in o["types"]["T1"] and "int64" in o["types"]["T1"]
    assert any("dropped" in n and "tensor(string)" in n for n in o["notes"])
    assert "grid" in o["doc"].lower()


def test_optional_inputs_required_attrs_and_fixed_types():
    o = like_onnx("Resize")
    assert [i["optional"] for i in o["inputs"]] == [False, True, True, True]
    axes = next(a for a in o["attrs"] if a["name"] == "axes")
    assert axes["default"] == [] and any("'axes' is optional" in n for n in o["notes"])
    split = like_onnx("Split", version=13)
    assert split["inputs"][1]["type"] == "int64"  # a concrete ONNX type becomes a dtype
    cast = like_onnx("Cast")
    (to,) = [a for a in cast["attrs"] if a["name"] == "to"]
    assert "default" not in to  # required


def test_variadic_inputs_are_flagged():
    o = like_onnx("Concat")
    assert o["inputs"][0]["variadic"] is True
    assert any("variadic" in n for n in o["notes"])


def test_unknown_op_names_the_fix():
    with pytest.raises(SpecError, match=r"onnx:Gridsample: ONNX has no operator 'Gridsample'"):
        like_onnx("Gridsample")


@pytest.mark.parametrize("op", ["GridSample", "LayerNormalization", "ThresholdedRelu", "Resize"])
def test_outline_makes_a_valid_spec(op):
    """What the scaffolder does with the outline: it must give a valid OpSpec."""
    o = like_onnx(op)
    used = {p["type"] for p in o["inputs"] + o["outputs"]}
    spec = OpSpec(
        "My" + op,
        domain="com.example",
        inputs=[Input(i["name"], i["type"], optional=i["optional"]) for i in o["inputs"]],
        outputs=[Output(p["name"], p["type"]) for p in o["outputs"]],
        attrs=[Attr(a["name"], a["type"], a.get("default", REQUIRED)) for a in o["attrs"]],
        types={k: v for k, v in o["types"].items() if k in used},
        onnx_op=op,
    )
    assert spec.resolve_attrs({a.name: a.default for a in spec.attrs if a.required}) is not None
