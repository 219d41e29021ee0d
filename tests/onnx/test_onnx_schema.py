"""ONNX schemas from specs: registration, strict shape inference, checker, bad nodes."""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

from opsdk.errors import SpecError
from opsdk.onnx import (
    ModelError,
    check_model,
    make_schema,
    register_schema,
    registered_schemas,
    unregister_schema,
)
from opsdk.spec import Attr, Input, OpSpec, Output, TensorType

DOMAIN = "com.opsdk.test"


def make_spec(factor: int = 2) -> OpSpec:
    """Tile-like op: y has dim 0 multiplied by ``repeat``; optional bias input."""
    spec = OpSpec(
        "Stretch",
        domain=DOMAIN,
        inputs=[Input("x", "T", doc="data"), Input("b", "T", optional=True, rank=1)],
        outputs=[Output("y", "T")],
        attrs=[
            Attr("repeat", "int", doc="required"),
            Attr("scale", "float", 1.0),
            Attr("flip", "bool", False),
            Attr("mode", "string", "fast"),
            Attr("axes", "ints", [0]),
        ],
        types={"T": ("float16", "float32")},
    )

    @spec.register_shape
    def _shape(x: TensorType, b: TensorType | None = None, **attrs: object) -> TensorType:
        repeat = attrs["repeat"]
        if not isinstance(repeat, int) or repeat < 1:
            raise SpecError(f"Stretch: attribute 'repeat' must be >= 1, got {repeat}")
        d0 = x.shape[0]
        first = d0 * repeat * factor // 2 if isinstance(d0, int) else None
        return TensorType((first, *x.shape[1:]), x.dtype)

    return spec


@pytest.fixture
def spec():
    s = make_spec()
    register_schema(s)
    yield s
    unregister_schema(s)


def model_with(node: onnx.NodeProto, x_shape=("N", 3), imports=((DOMAIN, 1),), extra_inputs=()):
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape)), *extra_inputs]
    graph = helper.make_graph(
        [node], "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    )
    opsets = [helper.make_opsetid("", 15)] + [helper.make_opsetid(d, v) for d, v in imports]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


def stretch(*inputs: str, name: str = "st", **attrs: object) -> onnx.NodeProto:
    attrs.setdefault("repeat", 3)
    return helper.make_node("Stretch", list(inputs or ["x"]), ["y"], name=name, domain=DOMAIN, **attrs)


def test_schema_mirrors_the_spec(spec):
    s = make_schema(spec)
    assert (s.domain, s.name, s.since_version) == (DOMAIN, "Stretch", 1)
    assert [i.name for i in s.inputs] == ["x", "b"]
    assert s.inputs[1].option == onnx.defs.OpSchema.FormalParameterOption.Optional
    constraints = {t.type_param_str: list(t.allowed_type_strs) for t in s.type_constraints}
    assert constraints == {"T": ["tensor(float16)", "tensor(float)"]}
    attrs = s.attributes
    assert attrs["repeat"].required
    assert not attrs["scale"].required and attrs["scale"].default_value.f == 1.0
    assert attrs["flip"].type == onnx.defs.OpSchema.AttrType.INT  # ONNX has no bool
    assert attrs["mode"].default_value.s == b"fast"
    assert list(attrs["axes"].default_value.ints) == [0]
    assert s.has_type_and_shape_inference_function


def test_registration_is_idempotent_and_reversible(spec):
    assert register_schema(spec).name == "Stretch"
    register_schema(spec)
    assert (DOMAIN, "Stretch", 1) in registered_schemas()
    assert onnx.defs.has("Stretch", DOMAIN)
    assert unregister_schema(spec)
    assert not onnx.defs.has("Stretch", DOMAIN)
    assert not unregister_schema(spec)
    register_schema(spec)
    assert onnx.defs.has("Stretch", DOMAIN)


def test_re_registering_a_changed_spec_replaces_its_inference(spec):
    m = model_with(stretch(repeat=2), x_shape=(4, 3))
    assert check_model(m).graph.output[0].type.tensor_type.shape.dim[0].dim_value == 8
    changed = make_spec(factor=4)
    register_schema(changed)
    try:
        assert check_model(m).graph.output[0].type.tensor_type.shape.dim[0].dim_value == 16
    finally:
        register_schema(spec)


def test_strict_inference_and_full_checker_accept_symbolic_dims(spec):
    m = model_with(stretch(scale=0.5, flip=1, mode="exact", axes=[0, 1]))
    inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    onnx.checker.check_model(inferred, full_check=True)
    dims = inferred.graph.output[0].type.tensor_type.shape.dim
    assert not dims[0].HasField("dim_value") and dims[0].dim_param != "N"  # N * 3: unknown
    assert dims[1].dim_value == 3
    assert inferred.graph.output[0].type.tensor_type.elem_type == TensorProto.FLOAT


def test_inference_through_a_chain_of_custom_nodes(spec):
    first = helper.make_node("Stretch", ["x"], ["t"], name="a", domain=DOMAIN, repeat=2)
    second = helper.make_node("Relu", ["t"], ["u"])
    third = helper.make_node("Stretch", ["u"], ["y"], name="c", domain=DOMAIN, repeat=5)
    nodes = [first, second, third]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2, "C"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)],
    )
    m = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 15), helper.make_opsetid(DOMAIN, 1)]
    )
    out = check_model(m).graph.output[0].type.tensor_type
    assert [d.dim_value or d.dim_param for d in out.shape.dim] == [20, "C"]
    assert out.elem_type == TensorProto.FLOAT16


def test_optional_input_given_and_absent(spec):
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [3])
    check_model(model_with(stretch("x", "b"), extra_inputs=[b]))
    check_model(model_with(stretch("x", "")))


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        ({"scale": "big"}, r"node 'st' \(com.opsdk.test::Stretch\): attribute 'scale' is STRING"),
        ({"repeat": 1.5}, r"attribute 'repeat' is FLOAT \(1.5\), Stretch expects INT"),
        ({"colour": 1}, r"node 'st'.*unknown attribute 'colour'; Stretch declares: repeat"),
        ({"flip": 2}, r"attribute 'flip' is a bool, expected 0 or 1, got 2"),
    ],
)
def test_attributes_violating_the_schema_name_the_node(spec, attrs, message):
    with pytest.raises(SpecError, match=message):
        check_model(model_with(stretch(**attrs)))


def test_missing_required_attribute_names_the_node(spec):
    node = helper.make_node("Stretch", ["x"], ["y"], name="st", domain=DOMAIN)
    with pytest.raises(SpecError, match=r"node 'st'.*'repeat' \(int\) is required"):
        check_model(model_with(node))


def test_wrong_input_count_names_the_node(spec):
    node = helper.make_node("Stretch", ["x", "x", "x"], ["y"], name="st", domain=DOMAIN, repeat=1)
    with pytest.raises(SpecError, match=r"node 'st'.*has 3 inputs.*takes 1 to 2 \(x, b\?\)"):
        check_model(model_with(node))


def test_wrong_output_count_names_the_node(spec):
    node = helper.make_node("Stretch", ["x"], ["y", "z"], name="st", domain=DOMAIN, repeat=1)
    with pytest.raises(SpecError, match=r"node 'st'.*has 2 outputs, Stretch produces 1"):
        check_model(model_with(node))


def test_missing_opset_import_names_the_domain(spec):
    with pytest.raises(SpecError, match=r"no opset import for domain 'com.opsdk.test'"):
        check_model(model_with(stretch(), imports=()))


def test_shape_function_errors_name_the_node(spec):
    with pytest.raises(SpecError, match=r"Stretch.*\(st\).*'repeat' must be >= 1, got 0"):
        check_model(model_with(stretch(repeat=0)))


def test_unknown_custom_op_is_named(spec):
    node = helper.make_node("Nope", ["x"], ["y"], name="n", domain=DOMAIN)
    with pytest.raises(SpecError, match=r"node 'n' \(com.opsdk.test::Nope\): no opsdk operator"):
        check_model(model_with(node))


def test_onnx_errors_are_wrapped_with_context():
    graph = helper.make_graph(
        [helper.make_node("Relu", ["nowhere"], ["y"], name="r")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    with pytest.raises(ModelError, match=r"node 'r' \(Relu\) reads 'nowhere', which no node"):
        check_model(m)


def test_onnx_inference_errors_are_wrapped_with_context():
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["y"], name="add")],
        "g",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [3]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    with pytest.raises(ModelError, match=r"ONNX shape inference failed: .*add"):
        check_model(m)


def test_shipped_operator_schema_infers_conv_shapes():
    from opsdk.registry import find_operator

    spec = find_operator("FusedConvBnRelu").spec
    register_schema(spec)
    node = helper.make_node(
        "FusedConvBnRelu", ["x", "w"], ["y"], domain="com.opsdk", pads=[1, 1, 1, 1], strides=[2, 2]
    )
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 32, 32]),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, [8, 3, 3, 3]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    m = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 15), helper.make_opsetid("com.opsdk", 1)]
    )
    dims = check_model(m).graph.output[0].type.tensor_type.shape.dim
    assert [d.dim_value or d.dim_param for d in dims] == ["N", 8, 16, 16]


def test_a_schema_named_like_a_standard_op_leaves_onnx_reference_importable() -> None:
    """onnx.reference (which onnxscript and torch's dynamo exporter import) builds a name ->
    schema table on first import and refuses one name in two domains: a user who exports a
    model with opsdk's Gelu and then imports it got NotImplementedError. Checked in a fresh
    interpreter, where nothing imported onnx.reference before."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(__import__("pathlib").Path(__file__).parent)!r})
        from test_onnx_schema import make_spec
        from opsdk.onnx import register_schema
        spec = make_spec()
        spec.name = "Gelu"
        register_schema(spec)
        import onnx.reference
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
