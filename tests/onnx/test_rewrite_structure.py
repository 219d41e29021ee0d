"""`opsdk rewrite` refuses a broken graph before rewriting it (issue 33, item 4): a node
reading a tensor nothing makes, a value made twice, a graph output nothing makes, a
domain without an opset import, a cycle. Before, it wrote a copy with '0 rewrite(s)'.
And `--opset N` above the model's opset says so on the last line, not only in --report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper

from opsdk.cli import main
from opsdk.onnx import ModelError, rewrite
from opsdk.onnx._structure import structure_problems


def _model(nodes: list[onnx.NodeProto], outputs: tuple[str, ...] = ("y",),
           opsets: tuple[tuple[str, int], ...] = (("", 17),)) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", T.FLOAT, [1, 4])
    outs = [helper.make_tensor_value_info(o, T.FLOAT, [1, 4]) for o in outputs]
    return helper.make_model(helper.make_graph(nodes, "g", [x], outs),
                             opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])


def _relu(i: str, o: str) -> onnx.NodeProto:
    return helper.make_node("Relu", [i], [o])


BROKEN: dict[str, tuple[Callable[[], onnx.ModelProto], str]] = {
    "dangling tensor": (lambda: _model([helper.make_node("Add", ["x", "ghost"], ["y"])]),
                        "node #0 (Add) reads 'ghost', which no node, initializer or graph "
                        "input makes (a dangling tensor); add what makes 'ghost' or read an "
                        "existing value; fix the model where it is written"),
    "made twice": (lambda: _model([_relu("x", "y"), _relu("x", "y")]),
                   "value 'y' is made twice: by node #0 (Relu) and by node #1 (Relu); give "
                   "one of them another name"),
    "overwrites an input": (lambda: _model([_relu("x", "x"), _relu("x", "y")]),
                            "value 'x' is made twice: by graph input 'x' and by node #0 (Relu)"),
    "output nothing makes": (lambda: _model([_relu("x", "y")], outputs=("y", "z")),
                             "graph output 'z' is made by no node, initializer or graph input; "
                             "drop it from graph.output or name the value that computes it"),
    "no opset import": (lambda: _model([_relu("x", "y")], opsets=(("com.x", 1),)),
                        "node #0 (Relu) is of domain ai.onnx (the default domain), which the "
                        "model's opset_import does not list; add "
                        "onnx.helper.make_opsetid('', VERSION) to model.opset_import"),
    "cycle": (lambda: _model([helper.make_node("Add", ["x", "b"], ["a"]), _relu("a", "b"),
                              _relu("a", "y")]), "cycle"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_graph_is_refused_naming_node_tensor_and_fix(
        case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build, message = BROKEN[case]
    model = build()
    assert any(message in p for p in structure_problems(model)), structure_problems(model)
    with pytest.raises(ModelError, match=r"^the model's graph is broken \(rewrite changed "
                       r"nothing\): "):
        rewrite(model, fuse=["conv-bn-relu"])
    src, dst = tmp_path / "in.onnx", tmp_path / "out.onnx"
    onnx.save(model, str(src))
    for extra in (["--fuse", "conv-bn-relu"], ["--opset", "16"]):
        assert main(["rewrite", str(src), "-o", str(dst), *extra]) == 1
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err
        assert not dst.exists()


def test_a_sound_graph_has_no_structure_problem() -> None:
    model = _model([_relu("x", "a"), helper.make_node("Add", ["a", "x"], ["y"])])
    assert structure_problems(model) == []
    assert rewrite(model, fuse=["conv-bn-relu"]).changed == 0


def test_opset_above_the_models_is_said_on_the_last_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, dst = tmp_path / "in.onnx", tmp_path / "out.onnx"
    onnx.save(_model([_relu("x", "y")], opsets=(("", 20),)), str(src))
    note = ("the model imports ai.onnx opset 20, not above 21: left at opset 20 (--opset only "
            "takes a model down)")
    for extra in ([], ["--report"]):
        assert main(["rewrite", str(src), "-o", str(dst), "--opset", "21", "--force",
                     *extra]) == 0
        lines = capsys.readouterr().out.strip().splitlines()
        assert lines[-1] == f"wrote {dst}: 0 rewrite(s), {note}", lines
        assert sum("not above 21" in ln for ln in lines) == (2 if extra else 1), lines


@pytest.mark.parametrize("name", ["dangling tensor", "made twice"])
def test_the_doctor_reads_the_same_scan(name: str) -> None:
    """`opsdk doctor` words the same structural scan (onnx/_structure.py) in its own terms:
    each broken graph the rewrite refuses is an invalid-model finding there too, naming the
    same value."""
    from opsdk.ascend.atc.doctor import structure_errors

    model = BROKEN[name][0]()
    found = [f for f in structure_errors(model) if f.code == "invalid-model"]
    value = "ghost" if name == "dangling tensor" else "y"
    assert found and all(repr(value) in f.reason for f in found), found


def test_order_matters_to_the_doctor_not_to_the_rewrite() -> None:
    """Nodes out of topological order: ONNX's checker (and the doctor) refuse them; a
    rewrite, which sorts the nodes itself, accepts them."""
    from opsdk.ascend.atc.doctor import structure_errors

    model = _model([_relu("t", "y"), _relu("x", "t")])
    assert structure_problems(model) == []
    [finding] = [f for f in structure_errors(model) if f.code == "invalid-model"]
    assert finding.reason == ("input 't' is used before the node that defines it (nodes out "
                              "of order, or a cycle)")
