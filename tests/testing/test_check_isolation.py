"""Issue 33 item 2: `opsdk triton check` never crashes.

The check opens the model with ONNX Runtime 1.23.2 (the release npu_ge pins) and with
opsdk's own ONNX Runtime and kernels in child processes: a crash there is a finding naming
the model, the ONNX Runtime version and the signal, and where it can be isolated, the node.

The known case: ONNX Runtime 1.23.2 aborts (a failed std::vector bounds assertion while
inlining the function) on a call of a model-local function that leaves off the function's
trailing outputs, here a com.opsdk::LayerNormalization node whose unused Mean and InvStdDev
are not named. The models are built with onnx.helper; no torch.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from opsdk.triton import RepositoryOptions, build_repository, check_npu_ge_folder

ROOT = Path(__file__).resolve().parents[2]
MISBEHAVE = ROOT / "tests" / "data" / "misbehave"


def _layer_norm_folder(tmp_path: Path) -> Path:
    """An npu_ge folder whose LayerNormalization node names only Y (Mean, InvStdDev left off)."""
    x = helper.make_tensor_value_info("x", T.FLOAT, ["n", 8])
    y = helper.make_tensor_value_info("y", T.FLOAT, ["n", 8])
    inits = [numpy_helper.from_array(np.linspace(0.5, 2, 8).astype(np.float32), "s"),
             numpy_helper.from_array(np.full(8, 0.25, np.float32), "b")]
    relu = helper.make_node("Relu", ["x"], ["r"])
    ln = helper.make_node("LayerNormalization", ["r", "s", "b"], ["y", "mean", "inv"],
                          domain="com.opsdk", axis=-1, epsilon=1e-5)
    g = helper.make_graph([relu, ln], "g", [x], [y], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                                helper.make_opsetid("com.opsdk", 1)])
    src = tmp_path / "ln.onnx"
    onnx.save(model, str(src))
    folder = build_repository(src, tmp_path / "repo", RepositoryOptions("ln", target="ascend"))
    written = onnx.load(str(folder / "1" / "model.onnx"))
    node = next(n for n in written.graph.node if n.op_type == "LayerNormalization")
    del node.output[1:]  # what an optimiser that drops unused outputs writes
    onnx.save(written, str(folder / "1" / "model.onnx"))
    return folder


def test_a_crash_of_onnx_runtime_1232_is_a_finding_naming_model_version_signal_node(
        tmp_path: Path, ort_1232: Path) -> None:
    folder = _layer_norm_folder(tmp_path)
    model = folder / "1" / "model.onnx"
    # the real thing: ONNX Runtime 1.23.2 itself dies on this file
    proc = subprocess.run([str(ort_1232), "-c", "import onnxruntime as o, sys; "
                           "o.InferenceSession(sys.argv[1], providers=['CPUExecutionProvider'])",
                           str(model)], capture_output=True, text=True, timeout=600)
    assert proc.returncode < 0, proc.stderr

    report = check_npu_ge_folder(folder, cann="8.1.RC1", python=ort_1232)
    crash = [p for p in report.problems if "crashed" in p]
    assert len(crash) == 1, report.problems
    assert crash[0].startswith(
        f"ONNX Runtime 1.23.2 (as inside npu_ge) crashed with SIGABRT (signal 6) opening "
        f"{model}: npu_ge would crash loading it too")
    assert ("the crash is node #1 (com.opsdk::LayerNormalization): it leaves off outputs "
            "Mean, InvStdDev of its function; with them named it loads") in crash[0]
    assert "name every output of the node" in crash[0]
    # the rest of the check judged the copy with those outputs named, and said so once
    assert report.notes == [
        "judged a copy of 1/model.onnx whose node #1 (com.opsdk::LayerNormalization) "
        "names its left-off outputs Mean, InvStdDev (unused): the file itself crashes "
        "ONNX Runtime 1.23.2"]
    assert report.onnxruntime == "1.23.2"
    assert report.max_abs_error["y"] < 1e-5


def test_the_same_model_with_its_outputs_named_passes(tmp_path: Path, ort_1232: Path) -> None:
    """What the workaround judged is a model npu_ge loads: with the outputs named, the
    check passes with no note."""
    folder = _layer_norm_folder(tmp_path)
    model = onnx.load(str(folder / "1" / "model.onnx"))
    node = next(n for n in model.graph.node if n.op_type == "LayerNormalization")
    node.output.extend(["mean", "inv"])
    onnx.save(model, str(folder / "1" / "model.onnx"))
    report = check_npu_ge_folder(folder, cann="8.1.RC1", python=ort_1232)
    assert report.ok, report.problems
    assert report.notes == []


def test_a_kernel_crash_inside_the_check_is_a_finding(
        tmp_path: Path, ort_1232: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check's comparison runs the operators' own kernels: one that segfaults ends the
    check's child process, not the check; the finding names the operator."""
    monkeypatch.setenv("OPSDK_OPERATORS_PATH", str(MISBEHAVE.parent))
    folder = _misbehave_folder(tmp_path)
    monkeypatch.setenv("OPSDK_MISBEHAVE", "segv")
    report = check_npu_ge_folder(folder, cann="8.1.RC1", python=ort_1232)
    crash = [p for p in report.problems if "crashed" in p]
    assert crash == [
        f"the check's own run of {folder / '1' / 'model.onnx'} (opsdk's kernels, ONNX Runtime "
        f"{_ort_version()}) crashed with SIGSEGV (signal 11): the kernel of Misbehave crashed with SIGSEGV; "
        "run the operator's tests (opsdk test Misbehave) to find the input that does it"], \
        report.problems


def test_a_kernel_ending_the_check_with_status_0_is_a_finding(
        tmp_path: Path, ort_1232: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel that ends the process from code no hook sees (exit_group, as a library may)
    took the whole check down with status 0, a success; now it is a problem, and no node is
    blamed for what was not a crash."""
    monkeypatch.setenv("OPSDK_OPERATORS_PATH", str(MISBEHAVE.parent))
    folder = _misbehave_folder(tmp_path)
    monkeypatch.setenv("OPSDK_MISBEHAVE", "exit_group0")
    report = check_npu_ge_folder(folder, cann="8.1.RC1", python=ort_1232)
    assert not report.ok
    ended = [p for p in report.problems if p.startswith("the check's own run")]
    assert ended == [f"the check's own run of {folder / '1' / 'model.onnx'} (opsdk's kernels, "
                     f"ONNX Runtime {_ort_version()}) ended with exit status 0 before it "
                     "wrote its result (an exit from code outside opsdk?)"], report.problems


def test_the_cli_prints_the_finding_and_exits_1(tmp_path: Path, ort_1232: Path) -> None:
    folder = _layer_norm_folder(tmp_path)
    env = {**os.environ, "OPSDK_ORT_VENV": str(ort_1232.parents[1])}
    proc = subprocess.run([sys.executable, "-m", "opsdk", "triton", "check", str(folder),
                           "--cann", "8.1.RC1"], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert "problem: ONNX Runtime 1.23.2 (as inside npu_ge) crashed with SIGABRT" in proc.stdout
    assert "note: judged a copy of 1/model.onnx" in proc.stdout


def _ort_version() -> str:
    from importlib.metadata import version

    return version("onnxruntime")


def _misbehave_folder(tmp_path: Path) -> Path:
    """An npu_ge folder: float32 -> Cast -> Misbehave (float64; fallback: Identity) -> Cast."""
    x = helper.make_tensor_value_info("x", T.FLOAT, ["n"])
    y = helper.make_tensor_value_info("y", T.FLOAT, ["n"])
    src = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])],
                                                  "g", [x], [y]),
                                opset_imports=[helper.make_opsetid("", 17)]), str(src))
    folder = build_repository(src, tmp_path / "repo", RepositoryOptions("m", target="ascend"))
    fn = helper.make_function("com.opsdk.test", "Misbehave", ["X"], ["Y"],
                              [helper.make_node("Identity", ["X"], ["Y"])],
                              [helper.make_opsetid("", 17)])
    nodes = [helper.make_node("Cast", ["x"], ["x64"], to=T.DOUBLE),
             helper.make_node("Misbehave", ["x64"], ["y64"], domain="com.opsdk.test"),
             helper.make_node("Cast", ["y64"], ["y"], to=T.FLOAT)]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y]), ir_version=10,
                              functions=[fn], opset_imports=[
                                  helper.make_opsetid("", 17),
                                  helper.make_opsetid("com.opsdk.test", 1)])
    onnx.save(model, str(folder / "1" / "model.onnx"))
    return folder


def test_the_build_dim_check_runs_onnx_runtime_in_a_child(tmp_path: Path, ort_1232: Path) -> None:
    """`opsdk triton build --target ascend` proves its dim names with ONNX Runtime in a child
    (here the pinned 1.23.2, on which the model crashes): the crash is an error naming the
    model, the version, the signal and the node, raised once, and the process lives on."""
    from opsdk.triton._ascend_dims import _ChildRunner as ChildRunner
    from opsdk.triton._ort_check import OrtCrash

    folder = _layer_norm_folder(tmp_path)
    model = onnx.load(str(folder / "1" / "model.onnx"))
    with pytest.raises(OrtCrash) as crash:
        ChildRunner(model, "ln", python=ort_1232)
    assert str(crash.value).startswith(
        "ln: checking the output dim names, ONNX Runtime 1.23.2 crashed with SIGABRT "
        "(signal 6) opening the model; the crash is node #1 (com.opsdk::LayerNormalization): "
        "it leaves off outputs Mean, InvStdDev of its function; with them named it loads")
    assert "Assertion '__n < this->size()' failed" in str(crash.value)
    good = onnx.load(str(folder / "1" / "model.onnx"))
    next(n for n in good.graph.node if n.op_type == "LayerNormalization").output.extend(
        ["mean", "inv"])
    runner = ChildRunner(good, "ln", python=ort_1232)
    try:
        assert runner.version == "1.23.2"
        assert runner.shapes({"n": 3}, seed=1) == {"y": (3, 8)}
        assert runner.shapes({"n": 5}) == {"y": (5, 8)}  # the same child, a second probe
    finally:
        runner.close()


def test_runnable_shapes_survives_a_crash_and_says_so(tmp_path: Path, ort_1232: Path) -> None:
    """What `opsdk doctor`, `opsdk atc` and `opsdk rewrite` ask ONNX Runtime for (shapes it
    runs the model on) comes from a child: a crash is no answer and one line, not the end of
    the command."""
    from opsdk.onnx._probe import runnable_shapes

    folder = _layer_norm_folder(tmp_path)
    model = onnx.load(str(folder / "1" / "model.onnx"))
    crashes: list[str] = []
    assert runnable_shapes(model, crashes=crashes, python=str(ort_1232)) is None
    assert len(crashes) == 1 and crashes[0].startswith(
        "ONNX Runtime 1.23.2 crashed with SIGABRT (signal 6) opening the model (Assertion ")
    next(n for n in model.graph.node if n.op_type == "LayerNormalization").output.extend(
        ["mean", "inv"])
    assert runnable_shapes(model, crashes=crashes, python=str(ort_1232)) == {"x": (1, 8)}
    assert len(crashes) == 1


def test_the_doctor_turns_an_onnx_runtime_crash_into_a_finding(tmp_path: Path,
                                                               ort_1232: Path) -> None:
    """`opsdk doctor` opens the model in ONNX Runtime (for example shapes) in a child: the
    crash of ONNX Runtime 1.23.2 on it is a finding naming the model, the version and the
    node, with the fix, and the doctor exits 1 (findings) instead of dying."""
    from opsdk.ascend.atc.doctor import diagnose

    model = _layer_norm_folder(tmp_path) / "1" / "model.onnx"
    found = [f for f in diagnose(str(model), cann="8.1.RC1", python=str(ort_1232))
             if f.code == "onnxruntime-crash"]
    assert len(found) == 1, found
    assert found[0].node == "#1 (com.opsdk::LayerNormalization)"
    assert found[0].reason.startswith(
        f"{model}: ONNX Runtime 1.23.2 crashed with SIGABRT (signal 6) opening the model "
        "(Assertion ")
    assert ("asked for example input shapes; the crash is node #1 "
            "(com.opsdk::LayerNormalization): it leaves off outputs Mean, InvStdDev of its "
            "function; with them named it loads") in found[0].reason
    assert found[0].fix.startswith("name every output of the node")
    proc = subprocess.run([sys.executable, "-m", "opsdk", "doctor", str(model), "--cann",
                           "8.1.RC1", "--ort-python", str(ort_1232)], capture_output=True,
                          text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert "[warning] onnxruntime-crash at #1 (com.opsdk::LayerNormalization)" in proc.stdout
    assert f"reason: {model}: ONNX Runtime 1.23.2 crashed with SIGABRT" in proc.stdout
