"""`opsdk triton pipeline`: a pipeline description -> an ensemble repository, its wiring
check and the same steps run in one process (no server here: see
test_triton_ensemble_server.py). Goldens live in tests/golden/triton/pipeline_*/;
regenerate them with OPSDK_UPDATE_GOLDEN=1."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from opsdk.cli import main
from opsdk.triton import (
    PipelineError,
    build_pipeline,
    check_ensemble,
    load_pipeline,
    pipeline_from_dict,
    run_pipeline,
)
from tests._helpers.golden import check_golden
from tests._helpers.pipelines import PIPELINE_TOML, write_pipeline


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_pipeline(tmp_path_factory.mktemp("pipeline")).parent


@pytest.fixture(scope="module")
def cpu_repo(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("repo")
    build_pipeline(load_pipeline(folder / "pipeline.toml"), repo, operators_path=())
    return repo


def _feeds(batch: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"raw": rng.standard_normal((batch, 16), dtype=np.float32),
            "z": rng.standard_normal((batch, 8), dtype=np.float32)}


def test_cpu_ensemble_config_and_step_models_golden(cpu_repo: Path) -> None:
    assert sorted(p.name for p in cpu_repo.iterdir()) == ["mlp", "scale", "scaled_mlp", "top"]
    check_golden("triton/pipeline_cpu/scaled_mlp/config.pbtxt",
                 (cpu_repo / "scaled_mlp" / "config.pbtxt").read_text())
    check_golden("triton/pipeline_cpu/top/config.pbtxt",
                 (cpu_repo / "top" / "config.pbtxt").read_text())
    check_golden("triton/pipeline_cpu/top/1/model.py",
                 (cpu_repo / "top" / "1" / "model.py").read_text())
    assert (cpu_repo / "scaled_mlp" / "1").is_dir()  # the version folder Triton wants
    assert (cpu_repo / "top" / "1" / "steps.py").read_text().startswith("import numpy")
    assert 'backend: "python"' in (cpu_repo / "mlp" / "config.pbtxt").read_text()


def test_wiring_check_passes_the_written_ensemble(cpu_repo: Path) -> None:
    report = check_ensemble(cpu_repo / "scaled_mlp")
    assert report.ok, report.problems
    assert report.steps == ["scale", "mlp", "top"]
    edges = {(e.tensor, e.producer, e.consumer) for e in report.edges}
    assert ("x", "output 'x' of step 'scale'", "input 'x' of step 'mlp'") in edges
    assert ("label", "output 'label' of step 'top'",
            "output 'label' of ensemble 'scaled_mlp'") in edges
    assert len(report.edges) == 6


def test_check_json_lists_every_edge(cpu_repo: Path, capsys: pytest.CaptureFixture[str]
                                     ) -> None:
    import json

    assert main(["triton", "check", str(cpu_repo / "scaled_mlp"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["problems"] == [] and report["models"] == {}
    assert [e["tensor"] for e in report["edges"]] == ["raw", "x", "z", "y", "label", "score"]
    assert report["edges"][1]["dims"] == [-1, 16]


def _retype(folder: str, old: str, new: str) -> Callable[[Path], None]:
    def edit(repo: Path) -> None:
        path = repo / folder / "config.pbtxt"
        text = path.read_text()
        assert old in text, f"{old!r} not in {path}"
        path.write_text(text.replace(old, new, 1))
    return edit


MISWIRED = {
    "dtype": (_retype("mlp", "TYPE_FP32", "TYPE_FP16"),
              r"ensemble tensor 'x': output 'x' of step 'scale' is TYPE_FP32, input 'x' of "
              r"step 'mlp' expects TYPE_FP16; make both the same type"),
    "dims": (_retype("top", "dims: [ 8 ]", "dims: [ 9 ]"),
             r"ensemble tensor 'y': output 'y' of step 'mlp' has dims \[-1, 8\], input 'y' "
             r"of step 'top' expects \[-1, 9\]"),
    "batch": (_retype("scale", "max_batch_size: 8", "max_batch_size: 4"),
              r"step 'scale' allows max_batch_size 4, the ensemble 'scaled_mlp' 8: .*raise "
              r"the step's max_batch_size to 8"),
    "unmapped": (_retype("scaled_mlp", 'input_map { key: "z" value: "z" }', ""),
                 r"input 'z' of step 'mlp' is not mapped to any ensemble tensor; add input_map"),
    "renamed": (_retype("scaled_mlp", 'input_map { key: "y" value: "y" }',
                        'input_map { key: "y" value: "why" }'),
                r"input 'y' of step 'top' reads ensemble tensor 'why', which nothing before "
                r"it writes"),
    "missing step": (lambda repo: shutil.rmtree(repo / "mlp"),
                     r"step 'mlp': no model folder .* beside the ensemble"),
}


@pytest.mark.parametrize("case", sorted(MISWIRED))
def test_a_miswired_copy_is_refused_naming_the_edge(
    case: str, cpu_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit, message = MISWIRED[case]
    repo = tmp_path / "repo"
    shutil.copytree(cpu_repo, repo, symlinks=True)
    edit(repo)
    report = check_ensemble(repo / "scaled_mlp")
    assert not report.ok
    assert any(re.search(message, p) for p in report.problems), report.problems
    assert main(["triton", "check", str(repo / "scaled_mlp")]) == 1
    assert re.search(message, capsys.readouterr().out)


def test_run_pipeline_equals_the_steps_composed_by_hand(folder: Path) -> None:
    from tests._helpers.triton_models import graph_session

    feeds = _feeds(3)
    got = run_pipeline(load_pipeline(folder / "pipeline.toml"), feeds)
    x = feeds["raw"] * np.float32(0.5) + np.float32(1.0)
    (y,) = graph_session(folder / "mlp.onnx").run(None, {"x": x, "z": feeds["z"]})
    np.testing.assert_array_equal(got["label"][:, 0], np.argmax(y, axis=-1))
    np.testing.assert_array_equal(got["score"][:, 0], np.max(y, axis=-1))
    assert got["label"].dtype == np.int64 and got["score"].shape == (3, 1)


def test_ascend_ensemble_with_an_operator_step_is_generated_and_checked(tmp_path: Path) -> None:
    """The wiring here; the npu_ge steps under ONNX Runtime 1.23.2 in test_triton_ocr.py
    (check_ensemble(models=True) on the OCR ensemble's det and rec)."""
    pipe = load_pipeline(write_pipeline(tmp_path / "src", operator=True))
    folder = build_pipeline(pipe, tmp_path / "repo", target="ascend")
    check_golden("triton/pipeline_ascend/scaled_mlp/config.pbtxt",
                 (folder / "config.pbtxt").read_text())
    for step in ("mlp", "gate"):
        assert 'backend: "npu_ge"' in (tmp_path / "repo" / step / "config.pbtxt").read_text()
    assert 'backend: "python"' in (tmp_path / "repo" / "top" / "config.pbtxt").read_text()
    report = check_ensemble(folder)
    assert report.ok, report.problems
    assert report.steps == ["scale", "mlp", "gate", "top"] and report.models == {}
    assert 'model_name: "gate"' in (folder / "config.pbtxt").read_text()
    feeds = _feeds(2)
    out = run_pipeline(pipe, feeds)  # the operator step runs its opsdk kernel in-process
    assert out["score"].shape == (2, 1) and (out["score"] >= 0).all()


PIPELINE_ERRORS = {
    "unknown key": ({"stepz": []}, r"unknown key 'stepz'; allowed: "),
    "no steps": ({"steps": []}, r"no steps; add at least one \[\[steps\]\] table"),
    "bad dtype": ({"inputs": {"raw": {"dtype": "float", "dims": [16]}}},
                  r"inputs.raw: dtype 'float' is not one of bool, uint8"),
    "bad dims": ({"inputs": {"raw": {"dtype": "float32", "dims": [0]}}},
                 r"dims must be a non-empty list of sizes \(-1 for a variable dim\)"),
    "two kinds": ({"steps": [{"name": "s", "python": "steps.py:scale", "onnx": "mlp.onnx"}]},
                  r"step 's': give exactly one of python"),
    "no function": ({"steps": [{"name": "s", "python": "steps.py:nope"}]},
                    r"steps.py defines no top-level function 'nope'; it has scale, top"),
    "untyped output": ({"steps": [{"name": "s", "python": "steps.py:scale",
                                   "inputs": {"raw": "raw"}, "outputs": {"x": "x"}}]},
                       r"step 's': output 'x' needs a dtype and dims"),
    "unknown tensor": ({"steps": [{"name": "s", "onnx": "mlp.onnx",
                                   "inputs": {"x": "nothing"}}]},
                       r"input 'x' reads tensor 'nothing', which no earlier step produces"),
    "missing model": ({"steps": [{"name": "s", "onnx": "gone.onnx"}]},
                      r"ONNX model .*gone.onnx does not exist"),
    "step named like pipeline": ({"steps": [{"name": "scaled_mlp", "onnx": "mlp.onnx"}]},
                                 r"step 'scaled_mlp': the name is taken"),
    "step named like pipeline but for case": (
        {"steps": [{"name": "Scaled_MLP", "onnx": "mlp.onnx"}]},
        r"step 'Scaled_MLP': the name differs from the pipeline's name 'scaled_mlp' only by "
        r"case; their model folders would be one folder on a case-insensitive file system"),
    "steps named alike but for case": (
        {"steps": [{"name": "mlp", "onnx": "mlp.onnx"}, {"name": "MLP", "onnx": "mlp.onnx"}]},
        r"step 'MLP': the name differs from step 'mlp' only by case"),
    "output not produced": ({"outputs": ["nope"]}, r"output 'nope' is not produced by any"),
    "file in a folder": ({"steps": [{"name": "s", "python": "steps.py:scale",
                                     "files": ["../keys.txt"]}]},
                         r"files entry '../keys.txt' must be the name of a file beside steps.py"),
    "missing file": ({"steps": [{"name": "s", "python": "steps.py:scale",
                                 "files": ["keys.txt"]}]}, r"keys.txt does not exist; files name"),
    "target table key": ({"steps": [{"name": "s", "onnx": "mlp.onnx",
                                     "ascend": {"batch": 0}}]},
                         r"step 's', ascend: unknown key 'batch'; allowed: dynamic_batching, "
                         r"instances, max_batch_size"),
    "missing declaration": ({"steps": [{"name": "s", "preprocess": "gone.toml",
                                        "inputs": {"image": "raw"}, "outputs": {"x": "x"}}]},
                            r"step 's': preprocessing declaration .*gone.toml does not exist"),
    "typed preprocess output": (
        {"steps": [{"name": "s", "preprocess": "steps.py", "inputs": {"image": "raw"},
                    "outputs": {"x": {"dtype": "float32", "dims": [1]}}}]},
        r"outputs.x: a preprocess step's output takes its dtype and dims from the declaration"),
    "soc on a model": ({"steps": [{"name": "s", "onnx": "mlp.onnx", "soc": "Ascend310P3"}]},
                       r"step 's': soc belongs to preprocess steps"),
}


@pytest.mark.parametrize("case", sorted(PIPELINE_ERRORS))
def test_a_wrong_description_is_refused_with_the_fix(case: str, folder: Path) -> None:
    import tomllib

    data = tomllib.loads(PIPELINE_TOML % {"extra": "", "top_input": "y"})
    change, message = PIPELINE_ERRORS[case]
    data.update(change)
    with pytest.raises(PipelineError, match=message):
        pipeline_from_dict(data, folder, source="pipeline.toml")


def test_a_target_table_overrides_the_step_for_that_target(folder: Path) -> None:
    import tomllib

    data = tomllib.loads(PIPELINE_TOML % {"extra": "", "top_input": "y"})
    data["steps"][1]["ascend"] = {"max_batch_size": 0}
    data["max_batch_size"] = 0
    step = pipeline_from_dict(data, folder).steps[1]
    assert step.for_target("ascend").max_batch_size == 0
    assert step.for_target("cpu") is step and step.max_batch_size is None


def test_model_input_unknown_to_the_onnx_file_is_refused(folder: Path, tmp_path: Path) -> None:
    text = (folder / "pipeline.toml").read_text().replace("z = \"z\" }", "w = \"z\" }")
    (tmp_path / "p.toml").write_text(text)
    for name in ("steps.py", "mlp.onnx"):
        shutil.copy(folder / name, tmp_path / name)
    with pytest.raises(PipelineError, match=r"step 'mlp': the model has no input 'w'; its "
                                            r"inputs are x, z"):
        build_pipeline(load_pipeline(tmp_path / "p.toml"), tmp_path / "repo")
    assert not (tmp_path / "repo").exists()  # nothing written before every step planned


@pytest.mark.parametrize("declared, message", [
    ('x = { dtype = "float64", dims = [16] }', r"tensor 'x' from 'scale' into input 'x' of step "
     r"'mlp': it is TYPE_FP64, the step takes TYPE_FP32; cast it"),
    ('x = { dtype = "float32", dims = [15] }', r"tensor 'x' from 'scale' into input 'x' of step "
     r"'mlp': it has dims \[-1, 15\], the step takes \[-1, 16\]"),
])
def test_an_edge_that_cannot_wire_is_refused_before_writing(
    declared: str, message: str, folder: Path, tmp_path: Path
) -> None:
    text = (folder / "pipeline.toml").read_text()
    text = text.replace('x = { dtype = "float32", dims = [16] }', declared)
    (tmp_path / "p.toml").write_text(text)
    for name in ("steps.py", "mlp.onnx"):
        shutil.copy(folder / name, tmp_path / name)
    with pytest.raises(PipelineError, match=message):
        build_pipeline(load_pipeline(tmp_path / "p.toml"), tmp_path / "repo")
    assert not (tmp_path / "repo").exists()


def test_a_function_object_is_a_step(folder: Path) -> None:
    from opsdk.triton._steps import load_function

    fn = load_function(folder / "steps.py", "scale", "opsdk_test_steps")
    import tomllib

    data = tomllib.loads(PIPELINE_TOML % {"extra": "", "top_input": "y"})
    data["steps"][0]["python"] = fn
    pipe = pipeline_from_dict(data, folder)
    assert pipe.steps[0].function == ((folder / "steps.py").resolve(), "scale")
    data["steps"][0]["python"] = lambda raw: raw
    with pytest.raises(PipelineError, match="must be a top-level function of a .py file"):
        pipeline_from_dict(data, folder)


def test_rebuild_needs_force_and_keeps_foreign_folders(folder: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    repo = tmp_path / "repo"
    args = ["triton", "pipeline", str(folder / "pipeline.toml"), "-o", str(repo),
            "--operators", str(tmp_path / "none")]
    assert main(args) == 0
    assert "wrote ensemble" in capsys.readouterr().out
    assert main(args) != 0
    assert re.search(r"scaled_mlp already exists; pass --force", capsys.readouterr().err)
    (repo / "top" / "notes.txt").write_text("mine")
    assert main([*args, "--force"]) != 0
    assert re.search(r"top holds files opsdk did not write \(notes.txt\)",
                     capsys.readouterr().err)
    assert (repo / "scale" / "1" / "model.py").is_file()  # refused before any folder went
    assert (repo / "top" / "notes.txt").read_text() == "mine"
    (repo / "top" / "notes.txt").unlink()
    cache = repo / "top" / "1" / "__pycache__"  # what a server's Python compiles there
    cache.mkdir()
    (cache / "model.cpython-311.pyc").write_bytes(b"")
    (cache / "steps.cpython-311.pyc").write_bytes(b"")
    assert main([*args, "--force"]) == 0
    assert not cache.exists()


def test_a_step_function_failure_names_the_step() -> None:
    from opsdk.triton._steps import call_step

    f32 = np.dtype(np.float32)
    with pytest.raises(TypeError, match=r"step 'top': output 'y' has dtype float64, the "
                                        r"pipeline declares float32; cast it"):
        call_step("top", lambda x: {"y": x * 2.0}, {"x": np.ones(2)}, [("y", f32)])
    with pytest.raises(ValueError, match=r"step 'top': the function returned \['z'\], not the "
                                         r"declared output 'y'"):
        call_step("top", lambda x: {"z": x}, {"x": np.ones(2, np.float32)}, [("y", f32)])


def test_bench_arguments_parse() -> None:
    import argparse

    from opsdk.cli import cmd_triton_pipeline

    parser = argparse.ArgumentParser()
    cmd_triton_pipeline.register(parser.add_subparsers())
    args = parser.parse_args(["bench", "repo", "--model", "m", "--concurrency", "1,4",
                              "--shape", "image=32,48,3", "--json"])
    assert args.concurrency == (1, 4) and args.shape == [("image", (32, 48, 3))]
    with pytest.raises(SystemExit):
        parser.parse_args(["bench", "repo", "--model", "m", "--concurrency", "0"])


def test_bench_input_is_an_array_or_a_files_bytes(tmp_path: Path) -> None:
    from opsdk.cli.cmd_triton_pipeline import _read_input
    from opsdk.errors import OpsdkError

    np.save(tmp_path / "x.npy", np.arange(3, dtype=np.uint8))
    (tmp_path / "img.png").write_bytes(b"\x89PNG...")
    assert _read_input("x", str(tmp_path / "x.npy")).tolist() == [0, 1, 2]
    sent = _read_input("image", str(tmp_path / "img.png"))  # one TYPE_STRING element
    assert sent.dtype == object and sent.tolist() == [b"\x89PNG..."]
    with pytest.raises(OpsdkError, match=r"--input image=.*nothing.png: .*or INPUT=FILE"):
        _read_input("image", str(tmp_path / "nothing.png"))


def _placed(text: str, root: Path) -> str:
    return text.replace(str(root.resolve()), "<repo>")


def test_ascend_folds_the_preprocess_step_into_the_model_as_aipp(tmp_path: Path) -> None:
    from opsdk.preprocess import load_preprocess, preprocess_cpu
    from tests._helpers.pipelines import write_aipp_pipeline

    pipe = load_pipeline(write_aipp_pipeline(tmp_path / "src"))
    notes: list[str] = []
    repo = tmp_path / "repo"
    folder = build_pipeline(pipe, repo, target="ascend", report=notes.append)
    assert sorted(p.name for p in repo.iterdir()) == ["pool", "pooled"]  # no step 'pre'
    assert any(n.startswith("pre: folded into pool as AIPP on Ascend310P3") for n in notes)
    check_golden("triton/pipeline_aipp/pooled/config.pbtxt", (folder / "config.pbtxt").read_text())
    check_golden("triton/pipeline_aipp/pool/config.pbtxt",
                 _placed((repo / "pool" / "config.pbtxt").read_text(), repo))
    check_golden("triton/pipeline_aipp/pool/1/insert_op.cfg",
                 _placed((repo / "pool" / "1" / "insert_op.cfg").read_text(), tmp_path))
    report = check_ensemble(folder)
    assert report.ok, report.problems
    image = next(e for e in report.edges if e.tensor == "image")  # the new edge: the image
    assert (image.consumer, image.data_type, image.dims) == (
        "input 'x' of step 'pool'", "TYPE_UINT8", (1, 16, 24, 3))
    import onnx

    x = onnx.load(str(repo / "pool" / "1" / "model.onnx")).graph.input[0]
    assert [d.dim_value for d in x.type.tensor_type.shape.dim] == [1, 3, 16, 24]  # static
    # the cpu target keeps the step; the in-process run is the declaration's CPU step
    pixels = np.random.default_rng(0).integers(0, 256, (1, 16, 24, 3), dtype=np.uint8)
    want = preprocess_cpu(load_preprocess(tmp_path / "src" / "pre.toml"), pixels[0])
    np.testing.assert_allclose(run_pipeline(pipe, {"image": pixels})["mean"],
                               want.mean(axis=(2, 3)), rtol=1e-5)


def test_a_declaration_aipp_refuses_keeps_its_cpu_step(tmp_path: Path) -> None:
    from tests._helpers.pipelines import write_aipp_pipeline

    pipe = load_pipeline(write_aipp_pipeline(tmp_path / "src", "resize.toml"))
    notes: list[str] = []
    folder = build_pipeline(pipe, tmp_path / "repo", target="ascend", report=notes.append)
    said = [n for n in notes if n.startswith("pre: AIPP not folded, the CPU step stays: ")]
    assert len(said) == 1 and "resize" in said[0], notes
    assert check_ensemble(folder).steps == ["pre", "pool"]
    step = tmp_path / "repo" / "pre"
    assert 'backend: "python"' in (step / "config.pbtxt").read_text()
    assert (step / "1" / "preprocess.toml").read_text() == (tmp_path / "src" /
                                                             "resize.toml").read_text()


def test_a_moved_aipp_folder_is_refused_naming_the_option(tmp_path: Path) -> None:
    from opsdk.triton._aipp_fold import folder_aipp
    from opsdk.triton._onnx_io import read_graph_io
    from tests._helpers.pipelines import write_aipp_pipeline

    build_pipeline(load_pipeline(write_aipp_pipeline(tmp_path / "src")), tmp_path / "repo",
                   target="ascend")
    moved = tmp_path / "moved" / "pool"
    shutil.copytree(tmp_path / "repo" / "pool", moved)
    io = read_graph_io(moved / "1" / "model.onnx")
    written = str((tmp_path / "repo" / "pool" / "1" / "insert_op.cfg").resolve())
    aipp, problems = folder_aipp(moved, {"session.ge.insertOpFile": written}, io)
    assert aipp is not None and aipp.input == "x"
    assert len(problems) == 1 and re.search(
        r"parameter session.ge.insertOpFile is .*repo/pool/1/insert_op.cfg, but this folder's "
        r"AIPP config is .*moved/pool/1/insert_op.cfg .*the repository was moved", problems[0])
    (moved / "1" / "preprocess.toml").unlink()
    assert "preprocess.toml is missing" in folder_aipp(
        moved, {"session.ge.insertOpFile": written}, io)[1][-1]
