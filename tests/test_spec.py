"""OpSpec validates itself and infers shapes; bad specs name the op, the field and the fix."""

from __future__ import annotations

import pytest

from opsdk.errors import ScaffoldError, SpecError
from opsdk.naming import check_op_name, snake_case, spellings
from opsdk.spec import REQUIRED, Attr, Input, OpSpec, Output, TensorType, broadcast_shapes


def make(**kw):
    args = dict(
        domain="com.example",
        inputs=[Input("x", "T")],
        outputs=[Output("y", "T")],
        attrs=[Attr("alpha", "float", 1.0)],
        types={"T": ("float16", "float32")},
    )
    args.update(kw)
    return OpSpec(kw.pop("name", "MyOp") if "name" in kw else "MyOp", **{k: v for k, v in args.items() if k != "name"})


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"name": "myOp"}, r"'myOp': op name must be UpperCamelCase"),
        ({"domain": "Com.Example"}, r"MyOp: domain 'Com.Example' must be a dotted lowercase"),
        ({"domain": "ai.onnx"}, r"MyOp: domain 'ai.onnx' is reserved by ONNX"),
        ({"version": 0}, r"MyOp: version must be an int >= 1"),
        ({"outputs": []}, r"MyOp: outputs is empty"),
        ({"types": {"T": ("float17",)}}, r"type variable 'T' lists unknown dtype 'float17'"),
        ({"inputs": [Input("x", "U")]}, r"input 'x' has type 'U', which is neither a type variable"),
        ({"inputs": [Input("x"), Input("x")]}, r"input name 'x' is used twice"),
        ({"inputs": [Input("class")]}, r"input name 'class' is not a valid Python and C\+\+ identifier"),
        ({"inputs": [Input("x", optional=True), Input("z")]}, r"required input 'z' follows an optional"),
        ({"attrs": [Attr("a", "double")]}, r"attribute 'a' has type 'double'; expected one of int, float"),
        ({"attrs": [Attr("a", "int", 1.5)]}, r"default of attribute 'a' expects int, got float 1.5"),
        ({"attrs": [Attr("x", "int", 1)]}, r"attribute name 'x' is used twice"),
        ({"outputs": [Output("y", "U")], "types": {"T": ("float32",), "U": ("float16", "float32")}},
         r"output 'y' has type 'U' that no input binds"),
    ],
)
def test_broken_specs_are_rejected(kw, match):
    with pytest.raises(SpecError, match=match):
        make(**kw)


def test_op_type_and_spellings():
    s = make()
    assert s.op_type == ("com.example", "MyOp", 1)
    assert s.snake_name == "my_op"
    assert spellings("FusedConvBnRelu") == ("FusedConvBnRelu", "fused_conv_bn_relu", "FUSED_CONV_BN_RELU")
    assert snake_case("GridSample2D") == "grid_sample2_d"


@pytest.mark.parametrize(
    ("name", "match"),
    [
        ("", "it is empty"),
        ("myOp", "must start with an uppercase letter"),
        ("../X", "must start with an uppercase letter"),
        ("My Op", "only letters and digits"),
        ("My_Op", "only letters and digits"),
        ("NULL", "C\\+\\+ keyword"),
    ],
)
def test_invalid_op_names(name, match):
    with pytest.raises(ScaffoldError, match=match):
        check_op_name(name)


def test_attrs_defaults_coercion_and_errors():
    s = make(attrs=[Attr("alpha", "float", 1.0), Attr("axes", "ints", [0]), Attr("mode", "string", REQUIRED)])
    assert s.resolve_attrs({"mode": "a", "alpha": 2}) == {"alpha": 2.0, "axes": [0], "mode": "a"}
    with pytest.raises(SpecError, match=r"MyOp: attribute 'mode' \(string\) is required; pass mode=..."):
        s.resolve_attrs({})
    with pytest.raises(SpecError, match=r"MyOp: attribute 'axes' expects ints, got str"):
        s.resolve_attrs({"mode": "a", "axes": "01"})
    with pytest.raises(SpecError, match=r"MyOp: attribute 'alpha' expects float, got bool True"):
        s.resolve_attrs({"mode": "a", "alpha": True})


def test_type_binding_and_combinations():
    s = make(
        inputs=[Input("x", "T"), Input("idx", "I"), Input("b", "T", optional=True)],
        outputs=[Output("y", "T"), Output("n", "int64")],
        types={"T": ("float16", "float32"), "I": ("int32", "int64")},
    )
    assert s.dtype_combinations() == [
        ("float16", "int32", "float16"), ("float16", "int64", "float16"),
        ("float32", "int32", "float32"), ("float32", "int64", "float32"),
    ]
    assert s.bind_types(["float32", "int64", None]) == {"T": "float32", "I": "int64"}
    with pytest.raises(SpecError, match=r"input 'b' has dtype float16 but 'x' has float32"):
        s.bind_types(["float32", "int64", "float16"])
    with pytest.raises(SpecError, match=r"input 'idx' has dtype int8, expected one of int32, int64"):
        s.bind_types(["float32", "int8"])


def test_default_inference_broadcasts_and_checks_rank():
    s = make(inputs=[Input("x", "T"), Input("z", "T", rank=2)])
    out = s.infer([TensorType((4, 1, 3), "float16"), TensorType((5, 3), "float16")], {})
    assert out == [TensorType((4, 5, 3), "float16")]
    with pytest.raises(SpecError, match=r"MyOp: input 'z' has rank 1 \(shape \(3,\)\), expected rank 2"):
        s.infer([TensorType((3,), "float16"), TensorType((3,), "float16")], {})
    with pytest.raises(SpecError, match=r"do not broadcast"):
        s.infer([TensorType((4,), "float16"), TensorType((2, 3), "float16")], {})


def test_registered_shape_function_errors_are_wrapped():
    s = make()

    @s.register_shape
    def _shape(x, alpha):
        raise ValueError("needs rank 4")

    with pytest.raises(SpecError, match=r"MyOp: shape inference failed: needs rank 4"):
        s.infer([TensorType((2,), "float32")], {"alpha": 1.0})


def test_symbolic_broadcast():
    assert broadcast_shapes(("N", 1), (1, 8)) == ("N", 8)
    assert broadcast_shapes(("N",), ("M",)) == (None,)
