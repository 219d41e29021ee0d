"""Fallback functions: the builder contract, and ONNX Runtime's result equal to the kernel's."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import opsdk
from opsdk.errors import SpecError
from opsdk.onnx import attach_function, build_function, export_model
from opsdk.spec import Attr, Input, OpSpec, Output


def run_ort(model, **feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("alpha", [1.0, 0.1, -0.7, 0.33333])
def test_onnxruntime_with_the_function_equals_the_kernel(dtype, alpha):
    op = opsdk.load("ThresholdedRelu")
    rng = np.random.default_rng(7)
    x = rng.normal(size=(3, 257)).astype(dtype)
    a16 = np.array(alpha, dtype)  # alpha as the input dtype rounds it, and values around it
    x[0, :5] = [a16, np.nextafter(a16, np.inf), np.nextafter(a16, -np.inf), 0, -0.0]
    x[1, :3] = [np.inf, -np.inf, np.nan]
    model = export_model(
        "ThresholdedRelu", shapes={"x": ("N", 257)}, dtype=dtype, attrs={"alpha": alpha},
        with_function=True,
    )
    (y,) = run_ort(model, x=x)
    expected = op(x, alpha=alpha)
    assert y.dtype == expected.dtype
    np.testing.assert_array_equal(y, expected)


def test_function_defaults_apply_when_the_node_omits_the_attribute():
    model = export_model("ThresholdedRelu", shapes={"x": (3,)}, with_function=True)
    del model.graph.node[0].attribute[:]
    (y,) = run_ort(model, x=np.array([0.5, 1.0, 2.0], np.float32))
    np.testing.assert_array_equal(y, [0, 0, 2.0])


def spec_with(fn=None, outputs=("y",)) -> OpSpec:
    spec = OpSpec(
        "Twice",
        domain="com.opsdk.test",
        inputs=[Input("x", "T")],
        outputs=[Output(o, "T") for o in outputs],
        attrs=[Attr("k", "float", 2.0), Attr("n", "int")],
        types={"T": ("float32",)},
    )
    if fn is not None:
        spec.register_function(fn)
    return spec


def test_function_proto_references_attributes_and_imports_the_opset():
    def fn(fb):
        k = fb.op("Constant", value_float=fb.attr("k"))
        return fb.op("Mul", fb.input("x"), k)

    f = build_function(spec_with(fn), 17)
    assert (f.domain, f.name, list(f.input), list(f.output)) == ("com.opsdk.test", "Twice", ["x"], ["y"])
    assert [(o.domain, o.version) for o in f.opset_import] == [("", 17)]
    assert f.node[0].attribute[0].ref_attr_name == "k"
    assert list(f.attribute) == ["n"]  # required: no default
    assert [(a.name, a.f) for a in f.attribute_proto] == [("k", 2.0)]
    assert f.node[-1].output[0] == "y"


def test_outputs_that_are_inputs_or_repeated_become_identities():
    f = build_function(spec_with(lambda fb: (fb.input("x"), fb.input("x")), ("y", "z")), 15)
    assert [(n.op_type, list(n.input), list(n.output)) for n in f.node] == [
        ("Identity", ["x"], ["y"]),
        ("Identity", ["x"], ["z"]),
    ]


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (lambda fb: fb.op("Relu", fb.input("q")), r"reads input 'q'; inputs are \['x'\]"),
        (lambda fb: fb.op("Mul", "x", fb.attr("zz")), r"refers to attribute 'zz'; declared: k, n"),
        (lambda fb: fb.op("NoSuchOp", "x"), r"uses NoSuchOp, which is not an ONNX operator"),
        (lambda fb: ("x", "x"), r"returned 2 values, the spec declares 1 outputs"),
        (lambda fb: 1 / 0, r"the fallback function failed: ZeroDivisionError"),
        (lambda fb: fb.op("Op", "x", domain="com.x"), r"in domain 'com.x' needs version="),
    ],
)
def test_builder_errors_name_the_operator_and_the_fix(fn, message):
    with pytest.raises(SpecError, match=message):
        build_function(spec_with(fn), 15)


def test_missing_function_is_a_clear_error():
    with pytest.raises(SpecError, match=r"Twice has no fallback function.*register_function"):
        build_function(spec_with(None), 15)


def test_attach_function_is_idempotent_and_uses_the_model_opset():
    model = export_model("ThresholdedRelu", shapes={"x": (2,)}, opset=17)
    spec = opsdk.registry.find_operator("ThresholdedRelu").spec
    first = attach_function(model, spec)
    attach_function(model, spec)
    assert len(model.functions) == 1
    assert [(o.domain, o.version) for o in first.opset_import] == [("", 17)]
    (y,) = run_ort(model, x=np.array([2.0, 0.5], np.float32))
    np.testing.assert_array_equal(y, [2.0, 0.0])


@pytest.mark.parametrize(
    "op_type, attrs, opset",
    [("GridSample", {"mode": "cubic", "padding_mode": "border", "align_corners": 0}, 20),
     ("GridSample", {"mode": "bilinear", "padding_mode": "reflection", "align_corners": 1}, 16),
     ("LayerNormalization", {"axis": -1, "epsilon": 1e-5}, 17)],
)
def test_standard_op_fallback_functions_equal_the_kernel(op_type, attrs, opset):
    """GridSample and LayerNormalization fall back to the ONNX op itself (what ONNX Runtime
    inside the npu_ge backend runs); on finite inputs that equals the kernel."""
    op = opsdk.load(op_type)
    rng = np.random.default_rng(3)
    if op_type == "GridSample":
        feeds = {"x": rng.standard_normal((1, 2, 5, 6)).astype(np.float32),
                 "grid": rng.uniform(-1.3, 1.3, (1, 4, 3, 2)).astype(np.float32)}
        shapes = {k: v.shape for k, v in feeds.items()}
    else:
        feeds = {"X": rng.standard_normal((3, 8)).astype(np.float32),
                 "Scale": rng.standard_normal(8).astype(np.float32),
                 "B": rng.standard_normal(8).astype(np.float32)}
        shapes = {k: v.shape for k, v in feeds.items()}
    model = export_model(op_type, shapes=shapes, attrs=attrs, opset=opset, with_function=True)
    got = run_ort(model, **feeds)
    want = op(*feeds.values(), **attrs)
    want = want if isinstance(want, (list, tuple)) else [want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=2e-5)
