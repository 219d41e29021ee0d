"""`opsdk triton check` on a cpu ensemble judges each ONNX step's model, not only the
wiring of the configs (issue 33, item 3): the step's model.onnx is read, opened with
opsdk's Session in a child process (as the step's model.py opens it) and its inputs and
outputs compared with the step's config.pbtxt. A garbage file, a model whose tensors are
not the config's, or one the Session refuses, is a problem naming the step, the tensor,
the config's value and the model's, and the fix."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from onnx import TensorProto as T
from onnx import helper

from opsdk.cli import main
from opsdk.triton import check_ensemble
from tests._helpers.pipelines import build_cpu_repo


@pytest.fixture(scope="module")
def cpu_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_cpu_repo(tmp_path_factory)


def _model(x: tuple[str, int, list[object]], z: tuple[str, int, list[object]],
           op: str = "Add") -> bytes:
    """y = op(x[:, :8], z), the I/O given as (name, dtype, dims)."""
    starts = helper.make_tensor("s", T.INT64, [1], [0])
    ends = helper.make_tensor("e", T.INT64, [1], [8])
    axes = helper.make_tensor("a", T.INT64, [1], [1])
    nodes = [helper.make_node("Slice", [x[0], "s", "e", "a"], ["xs"]),
             helper.make_node(op, ["xs", z[0]], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(*x),
                                           helper.make_tensor_value_info(*z)],
                              [helper.make_tensor_value_info("y", z[1], ["n", 8])],
                              [starts, ends, axes])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]
                             ).SerializeToString()


X, Z = ("x", T.FLOAT, ["n", 16]), ("z", T.FLOAT, ["n", 8])
BROKEN: dict[str, tuple[Callable[[], bytes], list[str]]] = {
    "random bytes": (lambda: bytes(range(256)) * 12, [
        "step 'mlp': 1/model.onnx is not a readable ONNX model (DecodeError: "]),
    "an input of another name": (lambda: _model(X, ("w", T.FLOAT, ["n", 8])), [
        "step 'mlp': config input 'z' is not an input of the model (w, x); rebuild the step "
        "with opsdk triton pipeline (or correct the step's config.pbtxt)",
        "step 'mlp': config lists no input 'w' of the model; rebuild the step"]),
    "another dtype": (lambda: _model(("x", T.DOUBLE, ["n", 16]), ("z", T.DOUBLE, ["n", 8])), [
        "step 'mlp': config input 'x' has data_type TYPE_FP32 but the model's is TYPE_FP64; "
        "rebuild the step with opsdk triton pipeline",
        "step 'mlp': config output 'y' has data_type TYPE_FP32 but the model's is TYPE_FP64"]),
    "other dims": (lambda: _model(("x", T.FLOAT, ["n", 12]), Z), [
        "step 'mlp': config input 'x' dim 0 is 16 but the model's is 12"]),
    "an op the Session refuses": (lambda: _model(X, Z, op="NoSuchOp"), [
        "step 'mlp': 1/model.onnx does not open with opsdk.onnx.Session, as the step's "
        "model.py opens it ("]),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_bad_step_model_is_a_problem_naming_step_tensor_and_fix(
        case: str, cpu_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write, wanted = BROKEN[case]
    repo = tmp_path / "repo"
    shutil.copytree(cpu_repo, repo, symlinks=True)
    model = repo / "mlp" / "1" / "model.onnx"
    model.unlink()
    model.write_bytes(write())
    assert check_ensemble(repo / "scaled_mlp").ok  # the wiring alone: the configs agree
    report = check_ensemble(repo / "scaled_mlp", models=True)
    assert report.onnx_steps == ["mlp"]
    for want in wanted:
        assert any(p.startswith(want) for p in report.problems), (want, report.problems)
    assert main(["triton", "check", str(repo / "scaled_mlp")]) == 1
    out = capsys.readouterr().out
    assert f"problem: {wanted[0]}" in out


def test_the_written_steps_pass_and_are_said_to_be_judged(
        cpu_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = check_ensemble(cpu_repo / "scaled_mlp", models=True)
    assert report.ok, report.problems
    assert report.onnx_steps == ["mlp"]  # the Python steps run no model
    assert main(["triton", "check", str(cpu_repo / "scaled_mlp")]) == 0
    assert ("step 'mlp': its model.onnx read, opened with opsdk.onnx.Session"
            in capsys.readouterr().out)


def test_a_crash_opening_a_step_model_is_a_problem(
        cpu_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The step's model is opened in a child: a crash there is a problem naming the step,
    the model and the signal, and the check lives on."""
    repo = tmp_path / "repo"
    shutil.copytree(cpu_repo, repo, symlinks=True)
    boom = tmp_path / "boom"
    boom.mkdir()
    (boom / "sitecustomize.py").write_text(
        "import os, signal, sys\n"
        "if sys.argv[-1].endswith('job.json') and 'opsdk-step-' in sys.argv[-1]:\n"
        "    import opsdk.onnx\n"
        "    class _Boom:\n"
        "        def __init__(self, *a, **k):\n"
        "            os.kill(os.getpid(), signal.SIGSEGV)\n"
        "    opsdk.onnx.Session = _Boom\n")
    monkeypatch.setenv("PYTHONPATH", str(boom))
    report = check_ensemble(repo / "scaled_mlp", models=True)
    crash = [p for p in report.problems if "crashed" in p]
    assert len(crash) == 1 and crash[0].startswith(
        f"step 'mlp': the check's own run of {repo / 'mlp' / '1' / 'model.onnx'} (opsdk's "
        "kernels, ONNX Runtime "), report.problems
    assert "crashed with SIGSEGV (signal 11) opening it with opsdk.onnx.Session" in crash[0]
