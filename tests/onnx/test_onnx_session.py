"""The graph executor: partitioning, running against ONNX Runtime, errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from opsdk.errors import KernelError, SpecError
from opsdk.onnx import ModelError, ReferenceKernel, Session, export_model, make_node
from opsdk.spec import Attr, Input, OpSpec, Output

DOMAIN = "com.opsdk.test"
SCALE = OpSpec(
    "Scale",
    domain=DOMAIN,
    inputs=[Input("x", "T")],
    outputs=[Output("y", "T")],
    attrs=[Attr("k", "float", 2.0)],
    types={"T": ("float32", "float16")},
)


class StandIn:
    """An executor with the opsdk interface, computing in NumPy and counting calls."""

    spec = SCALE

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[tuple[tuple[int, ...], dict[str, Any]]] = []
        self.fail = fail

    def run(self, inputs, attrs, outputs=None):
        if self.fail:
            raise KernelError("Scale: kernel exploded")
        (x,) = inputs
        self.calls.append((x.shape, dict(attrs)))
        return [(x * attrs["k"]).astype(x.dtype)]


def vi(name, shape=("N", 4), elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, list(shape) if shape is not None else None)


def model(nodes, inputs, outputs, inits=(), opset=15, functions=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    imports = [helper.make_opsetid("", opset), helper.make_opsetid(DOMAIN, 1)]
    return helper.make_model(g, opset_imports=imports, ir_version=8, functions=list(functions))


def scale(inp, out, k=2.0, name=None):
    return helper.make_node("Scale", [inp], [out], domain=DOMAIN, k=k, name=name)


def ort_run(m, feeds):
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def test_standard_only_model_is_one_onnxruntime_part():
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Exp", ["a"], ["y"])]
    m = model(nodes, [vi("x")], [vi("y")])
    sess = Session(m)
    assert [s.kind for s in sess.steps] == ["onnxruntime"]
    x = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], ort_run(m, {"x": x})[0])


def _spin_stop(sess: Session) -> list[str]:
    """Each ONNX Runtime part's force_spinning_stop setting ("" where it is not set)."""
    out = []
    for step in sess._steps:
        if hasattr(step, "session"):
            opts = step.session.get_session_options()
            try:
                out.append(opts.get_session_config_entry("session.force_spinning_stop"))
            except RuntimeError:  # not set: ONNX Runtime's default
                out.append("")
    return out


def test_onnxruntime_keeps_its_thread_defaults_without_opsdk_nodes():
    """The spin stop is for handing the cores to opsdk kernels; in a model without any it
    only cost time (a whole ResNet-18 1.9x)."""
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Exp", ["a"], ["y"])]
    assert _spin_stop(Session(model(nodes, [vi("x")], [vi("y")]))) == [""]
    mixed = model([helper.make_node("Relu", ["x"], ["a"]), scale("a", "y")], [vi("x")],
                  [vi("y")])
    assert _spin_stop(Session(mixed, kernels={"Scale": StandIn()})) == ["1"]


def diamond():
    """x -> Relu -> Scale -> Add(., b) -> y; x -> Neg -> b (independent of Scale)."""
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="relu"),
        scale("a", "s", k=3.0, name="scale"),
        helper.make_node("Neg", ["x"], ["b"], name="neg"),
        helper.make_node("Add", ["s", "b"], ["y"], name="add"),
        helper.make_node("Sigmoid", ["b"], ["z"], name="sig"),
    ]
    return model(nodes, [vi("x")], [vi("y"), vi("z")])


def test_partition_puts_independent_standard_nodes_in_the_earliest_part():
    kernel = StandIn()
    sess = Session(diamond(), kernels={"Scale": kernel}, inplace=False)
    steps = sess.steps
    assert [s.kind for s in steps] == ["onnxruntime", "opsdk", "onnxruntime"]
    assert steps[0].nodes == ("'relu' (Relu)", "'neg' (Neg)", "'sig' (Sigmoid)")
    assert set(steps[0].outputs) == {"a", "b", "z"}  # z is a graph output, a and b read later
    assert steps[1].nodes == ("'scale' (com.opsdk.test::Scale)",)
    assert steps[2].nodes == ("'add' (Add)",) and set(steps[2].inputs) == {"s", "b"}
    x = np.array([[1.0, -2.0, 3.0, 0.5]], np.float32)
    y, z = sess.run(None, {"x": x})
    np.testing.assert_allclose(y, 3 * np.maximum(x, 0) - x)
    np.testing.assert_allclose(z, 1 / (1 + np.exp(x)), rtol=1e-6)
    assert kernel.calls == [((1, 4), {"k": 3.0})]


def test_chained_custom_nodes_and_custom_graph_outputs():
    nodes = [scale("x", "a", 2.0), scale("a", "b", 5.0), helper.make_node("Abs", ["b"], ["y"])]
    m = model(nodes, [vi("x")], [vi("y"), vi("a")])
    sess = Session(m, kernels={f"{DOMAIN}::Scale": StandIn()})
    assert [s.kind for s in sess.steps] == ["opsdk", "opsdk", "onnxruntime"]
    x = np.array([[-1, 2, -3, 4]], np.float32)
    y, a = sess.run(None, {"x": x})
    np.testing.assert_array_equal(y, np.abs(10 * x))
    np.testing.assert_array_equal(a, 2 * x)
    (only_a,) = sess.run(["a"], {"x": x})
    np.testing.assert_array_equal(only_a, 2 * x)


def test_initializers_feed_custom_nodes_and_onnxruntime_parts():
    w = numpy_helper.from_array(np.arange(4, dtype=np.float32), "w")
    nodes = [scale("w", "sw", 10.0), helper.make_node("Mul", ["x", "sw"], ["y"])]
    m = model(nodes, [vi("x")], [vi("y")], inits=[w])
    sess = Session(m, kernels={"Scale": StandIn()})
    (y,) = sess.run(None, {"x": np.ones((2, 4), np.float32)})
    np.testing.assert_array_equal(y, np.tile(np.arange(4) * 10.0, (2, 1)))


def test_real_kernel_against_onnxruntime_native_op():
    nodes = [
        helper.make_node("Mul", ["x", "two"], ["a"]),
        make_node("ThresholdedRelu", ["a"], ["b"], {"alpha": 0.5}),
        helper.make_node("Add", ["b", "one"], ["y"]),
    ]
    inits = [
        numpy_helper.from_array(np.array(2, np.float32), "two"),
        numpy_helper.from_array(np.array(1, np.float32), "one"),
    ]
    m = model(nodes, [vi("x", ["N"])], [vi("y", ["N"])], inits)
    m.opset_import.append(helper.make_opsetid("com.opsdk", 1))
    native = onnx.ModelProto()
    native.CopyFrom(m)
    native.graph.node[1].CopyFrom(helper.make_node("ThresholdedRelu", ["a"], ["b"], alpha=0.5))
    x = np.random.default_rng(1).normal(size=10_000).astype(np.float32)
    (got,) = Session(m).run(None, {"x": x})
    np.testing.assert_array_equal(got, ort_run(native, {"x": x})[0])


def test_reference_mode_runs_without_kernels():
    m = export_model("GridSample", shapes={"x": (1, 2, 5, 6), "grid": (1, 3, 4, 2)})
    rng = np.random.default_rng(2)
    x = rng.normal(size=(1, 2, 5, 6)).astype(np.float32)
    g = rng.uniform(-1, 1, size=(1, 3, 4, 2)).astype(np.float32)
    sess = Session(m, reference=True)
    assert isinstance(sess._kernel(sess._specs[("com.opsdk", "GridSample")]), ReferenceKernel)
    (y,) = sess.run(None, {"x": x, "grid": g})
    assert y.shape == (1, 2, 3, 4) and y.dtype == np.float32


def test_model_local_function_without_operator_runs_in_onnxruntime():
    body = [helper.make_node("Neg", ["x"], ["y"])]
    f = helper.make_function(DOMAIN, "Flip", ["x"], ["y"], body, [helper.make_opsetid("", 15)])
    nodes = [helper.make_node("Flip", ["x"], ["y"], domain=DOMAIN)]
    sess = Session(model(nodes, [vi("x")], [vi("y")], functions=[f]))
    assert [s.kind for s in sess.steps] == ["onnxruntime"]
    (y,) = sess.run(None, {"x": np.ones((1, 4), np.float32)})
    np.testing.assert_array_equal(y, -np.ones((1, 4)))


def test_inputs_and_outputs_like_inference_session(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(diamond(), str(path))
    sess = Session(str(path), kernels={"Scale": StandIn()})
    assert [(i.name, i.type, i.shape) for i in sess.get_inputs()] == [
        ("x", "tensor(float)", ["N", 4])
    ]
    assert [(o.name, o.type, o.shape) for o in sess.get_outputs()] == [
        ("y", "tensor(float)", ["N", 4]),
        ("z", "tensor(float)", ["N", 4]),
    ]


def test_for_op_builds_a_session_per_signature():
    sess = Session.for_op("ThresholdedRelu", attrs={"alpha": 0.5}, inputs=[np.zeros((2, 3), np.float16)])
    (y,) = sess.run(None, {"x": np.array([[0.25, 1.0]], np.float16)})
    np.testing.assert_array_equal(y, np.array([[0, 1.0]], np.float16))


# ----------------------------------------------------------------------- errors
def test_feed_errors_list_what_the_model_takes():
    sess = Session(diamond(), kernels={"Scale": StandIn()})
    with pytest.raises(ModelError, match=r"missing input\(s\) \['x'\]; the model takes: x tensor"):
        sess.run(None, {})
    with pytest.raises(ModelError, match=r"unknown input\(s\) \['q'\]"):
        sess.run(None, {"x": np.ones((1, 4), np.float32), "q": 1})
    with pytest.raises(ModelError, match=r"unknown output\(s\) \['s'\]; outputs: \['y', 'z'\]"):
        sess.run(["s"], {"x": np.ones((1, 4), np.float32)})


def test_custom_node_without_operator_is_named():
    nodes = [helper.make_node("Mystery", ["x"], ["y"], domain="com.nowhere", name="m1")]
    m = model(nodes, [vi("x")], [vi("y")])
    m.opset_import.append(helper.make_opsetid("com.nowhere", 1))
    with pytest.raises(SpecError, match=r"node 'm1' \(com.nowhere::Mystery\): no opsdk operator"):
        Session(m)


def test_kernel_errors_name_the_node():
    sess = Session(diamond(), kernels={"Scale": StandIn(fail=True)})
    with pytest.raises(KernelError, match=r"kernel exploded -- while running node 'scale'"):
        sess.run(None, {"x": np.ones((1, 4), np.float32)})


def test_invalid_custom_node_is_rejected_when_the_session_is_built():
    nodes = [helper.make_node("Scale", ["x"], ["y"], domain=DOMAIN, name="bad", k="high")]
    with pytest.raises(SpecError, match=r"node 'bad'.*attribute 'k' is STRING"):
        Session(model(nodes, [vi("x")], [vi("y")]), kernels={"Scale": StandIn()})


def test_custom_node_inside_a_subgraph_is_refused_with_the_fix():
    branch = helper.make_graph([scale("x", "t")], "then", [], [vi("t")])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["e"])], "else", [], [vi("e")])
    nodes = [helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=other, name="if")]
    m = model(nodes, [vi("x"), vi("c", [], TensorProto.BOOL)], [vi("y")])
    with pytest.raises(SpecError, match=r"node 'if' \(If\): its subgraph holds custom node"):
        Session(m, kernels={"Scale": StandIn()})


def test_unreadable_model_path(tmp_path):
    bad = tmp_path / "x.onnx"
    bad.write_bytes(b"\x00\x01garbage" * 10)
    with pytest.raises(ModelError, match=r"x.onnx: .*(not a readable ONNX model|no ONNX graph)"):
        Session(str(bad))


def test_values_cross_between_parts_without_copies():
    """The kernel gets the very array ONNX Runtime returned (backed by ORT's buffer), and
    the caller gets the very array the kernel wrote."""
    seen: list[np.ndarray] = []
    produced: list[np.ndarray] = []

    class Spy(StandIn):
        def run(self, inputs, attrs, outputs=None):
            seen.append(inputs[0])
            produced.extend(super().run(inputs, attrs, outputs))
            return produced[-1:]

    nodes = [helper.make_node("Relu", ["x"], ["a"]), scale("a", "y")]
    sess = Session(model(nodes, [vi("x")], [vi("y")]), kernels={"Scale": Spy()})
    (y,) = sess.run(None, {"x": np.ones((2, 4), np.float32)})
    assert type(seen[-1].base).__name__ == "PyCapsule"  # ORT-owned memory, not a NumPy copy
    assert y is produced[-1]


def test_dead_parts_are_skipped_and_constant_outputs_returned():
    c = numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "c")
    nodes = [scale("x", "y"), helper.make_node("Exp", ["x"], ["unused"])]
    m = model(nodes, [vi("x")], [vi("y"), helper.make_tensor_value_info("c", TensorProto.FLOAT, [2])], inits=[c])
    sess = Session(m, kernels={"Scale": StandIn()})
    assert [s.kind for s in sess.steps] == ["opsdk"]
    y, const = sess.run(None, {"x": np.ones((1, 4), np.float32)})
    np.testing.assert_array_equal(const, [1.0, 2.0])


class Writer(StandIn):
    """Honours destination passing and records the buffers it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.given: list[Any] = []

    def run(self, inputs, attrs, outputs=None):
        self.given.append((inputs[0], outputs))
        result = inputs[0] * attrs["k"]
        if outputs is None:
            return [result]
        outputs[0][...] = result
        return outputs


def test_elementwise_node_writes_over_an_intermediate_nobody_else_reads():
    kernel = Writer()
    nodes = [helper.make_node("Relu", ["x"], ["a"]), scale("a", "s", 3.0), helper.make_node("Neg", ["s"], ["y"])]
    sess = Session(model(nodes, [vi("x")], [vi("y")]), kernels={"Scale": kernel})
    x = np.array([[1.0, -2.0, 3.0, 0.5]], np.float32)
    (y,) = sess.run(None, {"x": x})
    np.testing.assert_array_equal(y, -3 * np.maximum(x, 0))
    (inp, outs) = kernel.given[-1]  # the calls before it checked in place == out of place
    assert outs is not None and outs[0] is inp  # in place over ORT's buffer of 'a'
    (y2,) = Session(model(nodes, [vi("x")], [vi("y")]), kernels={"Scale": kernel}, inplace=False).run(None, {"x": x})
    inp, outs = kernel.given[-1]
    assert outs is not None and not np.shares_memory(outs[0], inp)  # a separate buffer
    np.testing.assert_array_equal(y2, y)


def test_never_in_place_over_user_inputs_shared_values_or_graph_outputs():
    kernel = Writer()
    x = np.array([[1.0, -2.0, 3.0, 0.5]], np.float32)
    keep = x.copy()
    direct = Session(model([scale("x", "y")], [vi("x")], [vi("y")]), kernels={"Scale": kernel})
    direct.run(None, {"x": x})
    np.testing.assert_array_equal(x, keep)  # the caller's array is untouched
    shared = [helper.make_node("Relu", ["x"], ["a"]), scale("a", "s"), helper.make_node("Add", ["s", "a"], ["y"])]
    (y,) = Session(model(shared, [vi("x")], [vi("y")]), kernels={"Scale": kernel}).run(None, {"x": x})
    np.testing.assert_array_equal(y, 3 * np.maximum(x, 0))
    exposed = [helper.make_node("Relu", ["x"], ["a"]), scale("a", "y")]
    a, y = Session(model(exposed, [vi("x")], [vi("a"), vi("y")]), kernels={"Scale": kernel}).run(None, {"x": x})
    np.testing.assert_array_equal(a, np.maximum(x, 0))
    assert all(not np.shares_memory(outs[0], inp) for inp, outs in kernel.given)


class Shifter(Writer):
    """Elementwise by shape, but y[i] = x[i-1]: wrong if run over its own input."""

    def run(self, inputs, attrs, outputs=None):
        self.given.append((inputs[0], outputs))
        x = inputs[0].reshape(-1)
        y = np.empty_like(x) if outputs is None else outputs[0].reshape(-1)
        y[0] = 0
        for i in range(1, x.size):  # reads x[i-1] after y[i-1] (same memory in place) was written
            y[i] = x[i - 1]
        return [y.reshape(inputs[0].shape)] if outputs is None else outputs


def test_kernels_that_break_in_place_are_detected_and_run_out_of_place():
    kernel = Shifter()
    nodes = [helper.make_node("Relu", ["x"], ["a"]), scale("a", "y")]
    sess = Session(model(nodes, [vi("x")], [vi("y")]), kernels={"Scale": kernel})
    x = np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)
    for _ in range(2):
        (y,) = sess.run(None, {"x": x})
        np.testing.assert_array_equal(y, [[0, 1, 2, 3]])
    inp, outs = kernel.given[-1]
    assert not np.shares_memory(outs[0], inp)


class Dest(StandIn):
    """Writes into the buffers it is given and keeps no reference to them."""

    def run(self, inputs, attrs, outputs=None):
        outputs[0][...] = inputs[0] * attrs["k"]
        return outputs


def test_output_buffers_are_reused_only_once_the_caller_lets_go():
    kernel = Dest()
    sess = Session(model([scale("x", "y", 2.0)], [vi("x")], [vi("y")]), kernels={"Scale": kernel})
    x = np.ones((1, 4), np.float32)
    (kept,) = sess.run(None, {"x": x})
    (second,) = sess.run(None, {"x": 2 * x})
    assert second is not kept  # kept is still referenced: never overwritten
    np.testing.assert_array_equal(kept, 2 * x)
    view = second[:, :2]
    del second
    (third,) = sess.run(None, {"x": 3 * x})
    np.testing.assert_array_equal(view, [[4, 4]])  # a view keeps its base alive too
    ident = id(third)
    del third
    (fourth,) = sess.run(None, {"x": 4 * x})
    assert id(fourth) == ident  # released: reused, no new allocation
    np.testing.assert_array_equal(fourth, 8 * x)
    np.testing.assert_array_equal(kept, 2 * x)


def test_buffer_pool_bounds_and_threads():
    import threading

    from opsdk.onnx._buffers import BufferPool

    pool = BufferPool(per_key=2)
    held = [pool.take((8,), np.dtype("float32")) for _ in range(5)]
    assert len({id(b) for b in held}) == 5
    del held
    seen: list[int] = []

    def worker():
        for _ in range(200):
            buf = pool.take((8,), np.dtype("float32"))
            buf[...] = threading.get_ident()
            assert (buf == threading.get_ident()).all()  # nobody else wrote into it
            seen.append(id(buf))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 800


@pytest.mark.parametrize("code", [">f4", ">f2"])
def test_non_native_byte_order_feeds_are_converted(code):
    elem = TensorProto.FLOAT if code == ">f4" else TensorProto.FLOAT16
    nodes = [make_node("ThresholdedRelu", ["x"], ["a"], {"alpha": 1.0}),
             helper.make_node("Neg", ["a"], ["y"])]
    m = model(nodes, [vi("x", ["N"], elem)], [vi("y", ["N"], elem)])
    m.opset_import.append(helper.make_opsetid("com.opsdk", 1))
    x = np.array([0.5, 1.5, 2, 3], code)
    (got,) = Session(m).run(None, {"x": x})
    np.testing.assert_array_equal(got, [0, -1.5, -2, -3])
    assert got.dtype.isnative


def test_constant_node_weights_of_custom_nodes_are_resolved_once():
    """paddle2onnx-style weights (Constant nodes, Identity/Cast of them) that only custom
    nodes read are handed to the kernel, not computed by ONNX Runtime on every run."""
    rng = np.random.default_rng(4)
    scale = rng.standard_normal(8).astype(np.float32)
    bias = rng.standard_normal(8).astype(np.float64)
    nodes = [
        helper.make_node("Constant", [], ["scale"], value=numpy_helper.from_array(scale)),
        helper.make_node("Constant", [], ["bias64"], value=numpy_helper.from_array(bias)),
        helper.make_node("Cast", ["bias64"], ["bias"], to=TensorProto.FLOAT),
        helper.make_node("Identity", ["scale"], ["scale_id"]),
        make_node("LayerNormalization", ["x", "scale_id", "bias"], ["y", "mean", "inv"]),
        helper.make_node("Relu", ["y"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["N", 8])])
    model = helper.make_model(graph, ir_version=8, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.opsdk", 1)])
    sess = Session(model)
    assert [s.kind for s in sess.steps] == ["opsdk", "onnxruntime"]  # no part for the weights
    x = rng.standard_normal((3, 8)).astype(np.float32)
    (got,) = sess.run(None, {"x": x})
    mean = x.mean(-1, keepdims=True)
    want = np.maximum((x - mean) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * scale
                      + bias.astype(np.float32), 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], got)  # constants untouched


def test_constant_weights_of_later_parts_are_their_initializers():
    """A Constant-node weight that a standard node after a custom node reads is written into
    that ONNX Runtime part as an initializer (so ONNX Runtime can prepack it and fold
    BatchNormalization), not computed by the first part and fed: no part for the weights,
    no weight among the part's feeds, and the result equal to ONNX Runtime's on the same
    model with the custom node replaced by the standard op it equals on these inputs."""
    rng = np.random.default_rng(5)
    w = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)
    bn = [rng.uniform(0.5, 1.5, 4).astype(np.float32) for _ in range(4)]

    def build(first: onnx.NodeProto, domains: list[onnx.OperatorSetIdProto]) -> onnx.ModelProto:
        nodes = [
            first,
            helper.make_node("Constant", [], ["w"], value=numpy_helper.from_array(w)),
            helper.make_node("Identity", ["w"], ["w_id"]),
            *[helper.make_node("Constant", [], [n], value=numpy_helper.from_array(v))
              for n, v in zip(["s", "b", "m", "v"], bn, strict=True)],
            helper.make_node("Conv", ["a", "w_id"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["y"]),
        ]
        graph = helper.make_graph(
            nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])])
        return helper.make_model(graph, ir_version=8, opset_imports=domains)

    std = helper.make_opsetid("", 17)
    sess = Session(build(make_node("ThresholdedRelu", ["x"], ["a"], {"alpha": 0.1}),
                         [std, helper.make_opsetid("com.opsdk", 1)]))
    assert [s.kind for s in sess.steps] == ["opsdk", "onnxruntime"]
    assert sess.steps[1].inputs == ("a",)  # the weights and statistics are initializers
    plain = ort.InferenceSession(build(helper.make_node("Relu", ["x"], ["a"]), [std])
                                 .SerializeToString(), providers=["CPUExecutionProvider"])
    x = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    x[np.abs(x) <= 0.1] = 0.5  # no value in (0, 0.1], where ThresholdedRelu and Relu differ
    (got,) = sess.run(None, {"x": x})
    (want,) = plain.run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_scalar_constant_stays_a_scalar_in_a_part():
    """A 0-d Constant (a Gather index, as TorchScript exports write them) written into a
    part as an initializer keeps rank 0: a 1-d index would give Gather a rank more and break
    every shape after it (Concat of shape pieces: 'All inputs to Concat must have same
    rank')."""
    nodes = [
        make_node("ThresholdedRelu", ["x"], ["a"], {"alpha": 0.0}),
        helper.make_node("Constant", [], ["i"],
                         value=numpy_helper.from_array(np.array(1, np.int64))),
        helper.make_node("Gather", ["a", "i"], ["y"], axis=0),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, ir_version=8, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.opsdk", 1)])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (got,) = Session(model).run(None, {"x": x})
    np.testing.assert_array_equal(got, x[1])  # shape (3,), not (1, 3)


def test_compiled_kernel_outputs_kept_by_the_caller_are_never_reused():
    """A compiled kernel's outputs come from the process-wide output pool (the fast call
    path): a block returns to the pool only when the array and its views are gone."""
    x = np.linspace(-2, 2, 1 << 18, dtype=np.float32)  # 1 MiB: a pooled output
    sess = Session.for_op("ThresholdedRelu", attrs={"alpha": 0.5}, inputs=[x])
    (first,) = sess.run(None, {"x": x})
    (second,) = sess.run(None, {"x": 2 * x})
    assert not np.shares_memory(first, second)
    view = second[:10]
    del second
    (third,) = sess.run(None, {"x": 3 * x})
    assert not np.shares_memory(third, view) and not np.shares_memory(third, first)
    np.testing.assert_array_equal(first, np.where(x > 0.5, x, 0))
    np.testing.assert_array_equal(view, np.where(2 * x[:10] > 0.5, 2 * x[:10], 0))
    np.testing.assert_array_equal(third, np.where(3 * x > 0.5, 3 * x, 0))
