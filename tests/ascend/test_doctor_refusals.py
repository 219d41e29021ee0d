"""What ONNX's checker or ONNX Runtime refuses is a finding of ``opsdk doctor``, and
``opsdk triton build`` writes no repository for it (opsdk.onnx._refusals).

Each model below loads, and the doctor used to say "no problems found" for every one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from opsdk.ascend.atc.doctor import diagnose
from opsdk.cli import main
from opsdk.onnx import export_model
from opsdk.triton import RepositoryOptions, build_repository
from opsdk.triton._errors import TritonConfigError

X = helper.make_tensor_value_info("x", T.FLOAT, [2, 3])
Y = helper.make_tensor_value_info("y", T.FLOAT, [2, 3])


def model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto] | None = None,
          inits: list[onnx.TensorProto] = (), value_info: list[onnx.ValueInfoProto] = (),
          outputs: list[onnx.ValueInfoProto] | None = None) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", [X] if inputs is None else inputs,
                          [Y] if outputs is None else outputs, list(inits),
                          value_info=list(value_info))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)], ir_version=8)


def relu(inp: str, out: str, name: str = "", **attrs: object) -> onnx.NodeProto:
    return helper.make_node("Relu", [inp], [out], name=name, **attrs)


def _branch(nodes: list[onnx.NodeProto], out: str) -> onnx.GraphProto:
    return helper.make_graph(nodes, "b", [], [helper.make_tensor_value_info(out, T.FLOAT, [2, 3])])


def _if(then: list[onnx.NodeProto]) -> onnx.ModelProto:
    return model([helper.make_node("If", ["c"], ["y"], then_branch=_branch(then, "o"),
                                   else_branch=_branch([relu("x", "e")], "e"))],
                 [X, helper.make_tensor_value_info("c", T.BOOL, [])])


def _with_sparse(m: onnx.ModelProto, name: str) -> onnx.ModelProto:
    m.graph.sparse_initializer.append(helper.make_sparse_tensor(
        numpy_helper.from_array(np.ones(1, np.float32), name),
        numpy_helper.from_array(np.zeros(1, np.int64), name + "_i"), [3]))
    return m


ONE = numpy_helper.from_array(np.ones(3, np.float32), "b")
# name -> (model, the error finding's code, words of its reason)
REFUSED = {
    "two nodes of one name": (model([relu("x", "a", "n"), relu("a", "y", "n")]),
                              "invalid-model", "two or more nodes are named 'n'"),
    "two nodes of one name in a subgraph": (_if([relu("x", "t", "k"), relu("t", "o", "k")]),
                                            "invalid-model", "named 'k'"),
    "an initializer with an empty name": (
        model([relu("x", "y")], inits=[numpy_helper.from_array(np.ones(3, np.float32), "")]),
        "invalid-model", "an initializer has an empty name"),
    "two initializers of one name": (
        model([helper.make_node("Add", ["x", "b"], ["y"])], inits=[ONE, ONE]),
        "invalid-model", "'b' is listed twice"),
    "a sparse initializer of a dense one's name": (
        _with_sparse(model([helper.make_node("Add", ["x", "b"], ["y"])], inits=[ONE]), "b"),
        "invalid-model", "'b' is listed twice"),
    "a sparse initializer with an empty name": (_with_sparse(model([relu("x", "y")]), ""),
                                                "invalid-model", "has an empty name"),
    "an attribute the op lacks": (model([relu("x", "y", foo=1)]), "onnxruntime-refuses",
                                  "INVALID_GRAPH"),
    "an input too many": (model([helper.make_node("Relu", ["x", "x"], ["y"])]),
                          "onnxruntime-refuses", "INVALID_GRAPH"),
    "an attribute of the wrong type": (
        model([helper.make_node("Flatten", ["x"], ["y"], axis=1.5)],
              outputs=[helper.make_tensor_value_info("y", T.FLOAT, [2, 3])]),
        "onnxruntime-refuses", "INVALID_GRAPH"),
    "a dtype the op does not take": (
        model([relu("x", "y")], [helper.make_tensor_value_info("x", T.STRING, [2, 3])],
              outputs=[helper.make_tensor_value_info("y", T.STRING, [2, 3])]),
        "onnxruntime-refuses", "tensor(string)"),
    "shapes that do not broadcast": (
        model([helper.make_node("Add", ["x", "b5"], ["y"])],
              inits=[numpy_helper.from_array(np.ones(5, np.float32), "b5")]),
        "onnxruntime-refuses", "Incompatible dimensions"),
    "an attribute the op lacks, in a subgraph": (_if([relu("x", "o", foo=3)]),
                                                 "onnxruntime-refuses", "INVALID_GRAPH"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_what_the_tools_refuse_is_an_error_finding(case: str) -> None:
    m, code, words = REFUSED[case]
    errors = [f for f in diagnose(m, cann="8.1.RC1") if f.severity == "error"]
    assert [f.code for f in errors] == [code], errors
    assert words in errors[0].reason and errors[0].fix
    assert "/tmp/opsdk-ort-" not in errors[0].reason  # no path of the child's copy


def test_what_only_the_checker_refuses_is_a_warning() -> None:
    """ONNX Runtime opens these; tools that run ONNX's checker do not."""
    stale = model([relu("x", "y")], outputs=[helper.make_tensor_value_info("y", T.FLOAT, [7, 7])])
    (f,) = diagnose(stale, cann="8.1.RC1")
    assert (f.code, f.severity) == ("onnx-checker", "warning")
    assert "full checker" in f.reason and "Inferred shape and existing shape differ" in f.reason
    no_ir = model([relu("x", "y")])
    no_ir.ir_version = 0
    (f,) = diagnose(no_ir, cann="8.1.RC1")
    assert (f.code, f.severity) == ("onnx-checker", "warning") and "ir_version" in f.reason


def test_a_custom_node_runs_by_its_fallback_and_the_rest_is_still_judged() -> None:
    """ONNX Runtime opens the model with each custom node's fallback function embedded: a
    clean model stays clean, and a refusal elsewhere is still found."""
    m = export_model("ThresholdedRelu", shapes={"x": (2, 4)})
    # the one finding of the clean model: CANN ships a built-in ThresholdedRelu too
    assert [f.code for f in diagnose(m, cann="8.1.RC1")] == ["builtin-clash"]
    out = m.graph.output[0].name
    m.graph.node.append(helper.make_node("Relu", [out], ["z"], foo=1))
    m.graph.output[0].name = "z"
    codes = {f.code: f.severity for f in diagnose(m, cann="9.2")}  # 9.2: no E16005
    assert codes == {"onnx-checker": "warning", "onnxruntime-refuses": "error",
                     "mixed-default-domain": "warning", "builtin-clash": "warning"}


def test_cli_reports_a_refused_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m, _, _ = REFUSED["two nodes of one name"]
    onnx.save(m, tmp_path / "m.onnx")
    assert main(["doctor", str(tmp_path / "m.onnx")]) == 1
    out = capsys.readouterr().out
    assert "no problems found" not in out and "two or more nodes are named 'n'" in out


@pytest.mark.parametrize("case", ["two nodes of one name", "an attribute the op lacks",
                                  "an initializer with an empty name"])
@pytest.mark.parametrize("target", ["cpu", "ascend"])
def test_triton_build_writes_no_repository_for_a_refused_model(
        tmp_path: Path, case: str, target: str) -> None:
    m, _, words = REFUSED[case]
    src = tmp_path / "m.onnx"
    onnx.save(m, src)
    with pytest.raises(TritonConfigError, match="no repository was written.*opsdk doctor"):
        build_repository(src, tmp_path / "repo", RepositoryOptions("m", target=target,
                                                                   operators_path=()))
    assert not (tmp_path / "repo" / "m").exists()


def test_cli_triton_build_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m, _, _ = REFUSED["two nodes of one name"]
    onnx.save(m, tmp_path / "m.onnx")
    argv = ["triton", "build", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "repo"),
            "--name", "m"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "two or more nodes are named 'n'" in err and not (tmp_path / "repo" / "m").exists()


def test_a_refusal_only_at_the_given_sizes_is_a_warning() -> None:
    """ONNX Runtime type-checks both branches of an If at load: with ``x`` fixed to 4, the
    branch reshaping it to [3, -1] fails, though the model as given opens (silero-vad with
    its --input-shape did this). That is a warning naming the sizes, not the model's error."""
    branch = {k: helper.make_graph([helper.make_node("Reshape", ["x", s], [k])], k, [],
                                   [helper.make_tensor_value_info(k, T.FLOAT, None)])
              for k, s in (("then", "s3"), ("else", "s1"))}
    g = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=branch["then"],
                          else_branch=branch["else"])], "g",
        [helper.make_tensor_value_info("x", T.FLOAT, ["n"]),
         helper.make_tensor_value_info("c", T.BOOL, [])],
        [helper.make_tensor_value_info("y", T.FLOAT, None)],
        [numpy_helper.from_array(np.array([3, -1], np.int64), "s3"),
         numpy_helper.from_array(np.array([-1], np.int64), "s1")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)])
    (f,) = diagnose(m, cann="8.1.RC1", input_shapes={"x": [4], "c": []})
    assert (f.code, f.severity) == ("onnxruntime-refuses", "warning")
    assert "with the --input-shape sizes (x=4 c=) fixed" in f.reason
    assert "opens the model as given" in f.reason
    assert diagnose(m, cann="8.1.RC1", input_shapes={"x": [6], "c": []}) == []
