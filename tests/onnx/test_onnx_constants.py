"""The graph constant resolver, dead-constant removal, and dims as exporters write them."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, TensorShapeProto, helper, numpy_helper

from opsdk.onnx import GraphConstants, constant_node_value, input_dims, remove_dead_constants
from opsdk.onnx._constants import dim_form, read_dim


def const(out, **attr):
    return helper.make_node("Constant", [], [out], **attr)


SPARSE = helper.make_sparse_tensor(
    numpy_helper.from_array(np.float32([5.0, 7.0]), "v"),
    numpy_helper.from_array(np.int64([1, 4]), "i"),
    [2, 3],
)

FORMS = [
    ({"value": numpy_helper.from_array(np.float32([[1, 2], [3, 4]]))}, np.float32([[1, 2], [3, 4]])),
    ({"value_float": 2.5}, np.float32(2.5)),
    ({"value_floats": [1.0, -2.0]}, np.float32([1.0, -2.0])),
    ({"value_int": 7}, np.int64(7)),
    ({"value_ints": [3, 4, 5]}, np.int64([3, 4, 5])),
    ({"value_string": "ab"}, np.array(b"ab", dtype=object)),
    ({"value_strings": ["a", "b"]}, np.array([b"a", b"b"], dtype=object)),
    ({"sparse_value": SPARSE}, np.float32([[0, 5, 0], [0, 7, 0]])),
]


@pytest.mark.parametrize("attr,expected", FORMS, ids=[next(iter(a)) for a, _ in FORMS])
def test_every_constant_attribute_form(attr, expected):
    got = constant_node_value(const("k", **attr))
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert (got == expected).all()


def test_constant_values_agree_with_onnxruntime():
    """Each numeric form evaluates to what ONNX Runtime's Constant kernel produces."""
    import onnxruntime as ort

    for i, (attr, _) in enumerate(FORMS[:5]):  # ORT hands sparse outputs back as SparseTensor
        got = constant_node_value(const("k", **attr))
        dtype = helper.np_dtype_to_tensor_dtype(got.dtype)
        g = helper.make_graph([const("k", **attr)], "g", [], [helper.make_tensor_value_info("k", dtype, None)])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
        (ref,) = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {})
        np.testing.assert_array_equal(got, ref, err_msg=f"form {i}")


def chain_graph():
    nodes = [
        const("c", value_floats=[1.5, 2.5]),
        helper.make_node("Identity", ["c"], ["c_id"]),
        helper.make_node("Cast", ["c_id"], ["c16"], to=TensorProto.FLOAT16),
        helper.make_node("Identity", ["x"], ["x_id"]),
        helper.make_node("Cast", ["init"], ["init64"], to=TensorProto.DOUBLE),
        helper.make_node("Add", ["x_id", "c"], ["y"]),
    ]
    return helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("fed", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        initializer=[numpy_helper.from_array(np.float32([4.0]), "init"),
                     numpy_helper.from_array(np.float32([9.0]), "fed")],
    )


def test_resolves_initializers_constants_and_identity_or_cast_of_them():
    gc = GraphConstants(chain_graph())
    assert gc.value("c16").dtype == np.float16 and list(gc.value("c16")) == [1.5, 2.5]
    assert gc.value("init64").dtype == np.float64 and gc.kind("init64") == "Cast"
    assert gc.kind("init") == "initializer" and gc.kind("c") == "Constant"
    assert [n.op_type for n in gc.nodes_of("c16")] == ["Cast", "Identity", "Constant"]
    # computed values, and an initializer that is also a graph input (it can be fed)
    for name in ("x", "x_id", "y", "fed", "missing"):
        assert gc.value(name) is None and gc.kind(name) == "computed"


def test_remove_dead_constants_keeps_what_is_read():
    g = chain_graph()
    assert remove_dead_constants(g) == 4  # Cast, Identity of c; Cast of init, and init itself
    assert [n.op_type for n in g.node] == ["Constant", "Identity", "Add"]
    assert [t.name for t in g.initializer] == ["fed"]
    g.node.remove(g.node[2])
    g.output[0].name = "c"
    # the Constant is a graph output now; the unread Identity of x is no constant: both stay
    assert remove_dead_constants(g) == 0 and [n.op_type for n in g.node] == ["Constant", "Identity"]


@pytest.mark.parametrize(
    "dim,value,form",
    [
        (TensorShapeProto.Dimension(dim_value=-1), None, "dim_value -1"),
        (TensorShapeProto.Dimension(dim_value=0), None, "dim_value 0"),
        (TensorShapeProto.Dimension(dim_value=3), 3, "dim_value 3"),
        (TensorShapeProto.Dimension(dim_param="N"), "N", "dim_param 'N'"),
        (TensorShapeProto.Dimension(), None, "unset"),
    ],
)
def test_dims_as_exporters_write_them(dim, value, form):
    assert read_dim(dim) == value and dim_form(dim) == form


def test_input_dims_of_unknown_rank_is_none():
    vi = helper.make_tensor_value_info("x", TensorProto.FLOAT, None)
    assert input_dims(vi) is None
    vi = onnx.helper.make_tensor_value_info("x", TensorProto.FLOAT, [-1, 0, 5])
    assert input_dims(vi) == [None, None, 5]
