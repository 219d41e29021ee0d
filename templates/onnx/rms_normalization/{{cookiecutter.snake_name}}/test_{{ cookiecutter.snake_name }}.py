"""Tests of {{ cookiecutter.op_name }}: the ones the opsdk pytest plugin generates from spec.py
(kernel vs reference under the precision standard, shape functions), the reference against
ONNX's reference implementation (onnx.reference), and the kernel against ONNX Runtime's
RMSNormalization at opset 23.

Run: opsdk test {{ cookiecutter.op_name }}   (or: pytest {{ cookiecutter.snake_name }}/)
"""

import sys
from pathlib import Path

import numpy as np
import pytest

import opsdk
from opsdk.registry import load_spec
from opsdk.testing import op_tests

globals().update(op_tests(__file__))

FOLDER = Path(__file__).resolve().parent
# reference.py, as opsdk loaded it beside spec.py
REF = sys.modules[load_spec(FOLDER).reference.__module__]
CASES = [((4, 33), (33,), -1), ((2, 3, 4, 5), (4, 5), 2), ((2, 3, 4, 5), (1, 5), -2),
         ((3, 4, 5), (3, 4, 5), 0), ((6, 1024), (1024,), 1)]


def _model(x_shape, scale_shape, axis, epsilon, elem):  # type: ignore[no-untyped-def]
    from onnx import helper

    node = helper.make_node("RMSNormalization", ["X", "scale"], ["Y"], axis=axis,
                            epsilon=epsilon, stash_type=1)
    graph = helper.make_graph(
        [node], "rms", [helper.make_tensor_value_info("X", elem, x_shape),
                        helper.make_tensor_value_info("scale", elem, scale_shape)],
        [helper.make_tensor_value_info("Y", elem, x_shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return model


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape,scale_shape,axis", CASES)
def test_reference_is_onnxs(x_shape, scale_shape, axis, dtype) -> None:  # type: ignore[no-untyped-def]
    """reference.py reproduces onnx.reference's RMSNormalization (float32 and float64)."""
    from onnx import TensorProto
    from onnx.reference import ReferenceEvaluator

    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_shape).astype(dtype)
    scale = rng.uniform(0.5, 2.0, scale_shape).astype(dtype)
    (want,) = ReferenceEvaluator(_model(x_shape, scale_shape, axis, 1e-4, elem)).run(
        None, {"X": x, "scale": scale})
    got = REF.reference(x, scale, axis=axis, epsilon=1e-4)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-13)


@pytest.mark.parametrize("x_shape,scale_shape,axis", CASES)
def test_kernel_matches_onnxruntime(x_shape, scale_shape, axis) -> None:  # type: ignore[no-untyped-def]
    """The kernel against ONNX Runtime's RMSNormalization (opset 23), float32."""
    import onnxruntime as ort
    from onnx import TensorProto

    rng = np.random.default_rng(1)
    x = rng.standard_normal(x_shape).astype(np.float32)
    scale = rng.uniform(0.5, 2.0, scale_shape).astype(np.float32)
    model = _model(x_shape, scale_shape, axis, 1e-5, TensorProto.FLOAT)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, {"X": x, "scale": scale})
    got = opsdk.load(str(FOLDER))(x, scale, axis=axis, epsilon=1e-5)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)
