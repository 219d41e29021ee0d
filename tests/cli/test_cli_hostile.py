"""A walk of the CLI with undecodable files, out-of-range numbers and missing inputs across
the commands: every failure is one line on stderr that names the command, the file or
option, and the fix, with no Python exception name (reliability: bare UnicodeDecodeError,
OverflowError, ValueError and IndexError once reached the user, lines lacked the command,
and some mistakes were ignored with exit 0)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import onnx.helper as oh
import pytest
from onnx import numpy_helper

from opsdk.cli import main
from tests._helpers.pipelines import write_pipeline

#: bytes no UTF-8 reader takes (a Latin-1 'é' among them)
UNDECODABLE = b"\xff\xfe caf\xe9 \x00 not utf-8\n"
#: words a fix starts with
FIX = re.compile(r"\b(pass|give|use|write|pick|check|save|remove|drop|add|install|create|"
                 r"declare|make|re-export|lower|choose|fill|put|set|move|rename|keep|shrink|"
                 r"resize|quote|replace|list|name|export|build|fix)\b")
EXCEPTION_NAME = re.compile(r"\b[A-Z]\w*(Error|Exception|Warning)\b|Traceback")

W, H = "{tmp}", "{tmp}/good.onnx"
# (argv with {tmp} for the folder, the file or option the message must name)
CASES: list[tuple[list[str], str]] = [
    # undecodable files
    (["atc", f"{W}/bad.onnx", "--soc-version", "Ascend310P3", "--output", f"{W}/om"], "bad.onnx"),
    (["atc", H, "--soc-version", "Ascend310P3", "--output", f"{W}/om", "--input-shape",
      "image:1,3,32,32", "--aipp", f"{W}/bad.toml"], "bad.toml"),
    (["atc", H, "--soc-version", "Ascend310P3", "--output", f"{W}/om", "--input-shape",
      "image:1,3,32,32", "--precision-mode", "allow_mix_precision", "--keep-dtype",
      f"{W}/bad.txt"], "bad.txt"),
    (["atc", H, "--soc-version", "Ascend310P3", "--output", f"{W}/om", "--input-shape",
      "image:1,3,32,32", "--precision-mode", "allow_mix_precision", "--modify-mixlist",
      f"{W}/bad.json"], "bad.json"),
    (["doctor", f"{W}/bad.onnx"], "bad.onnx"),
    (["cann", "Gelu", "--onnx-model", f"{W}/bad.onnx", "-o", f"{W}/cann"], "bad.onnx"),
    (["precision", f"{W}/bad.onnx", "--precision-mode", "force_fp16"], "bad.onnx"),
    (["precision", H, "--precision-mode", "force_fp16", "--keep-dtype", f"{W}/bad.txt"],
     "bad.txt"),
    (["precision", H, "--precision-mode", "force_fp16", "--input", f"image={W}/bad.npy"],
     "bad.npy"),
    (["rewrite", f"{W}/bad.onnx", "-o", f"{W}/r.onnx", "--fuse", "conv-bn-relu"], "bad.onnx"),
    (["test", "Gelu", "--cases", f"{W}/bad.csv"], "bad.csv"),
    (["test", "Gelu", "--precision-mode", "allow_mix_precision", "--keep-dtype",
      f"{W}/bad.txt"], "bad.txt"),
    (["test", "Gelu", "--precision-mode", "allow_mix_precision", "--modify-mixlist",
      f"{W}/bad.json"], "bad.json"),
    (["triton", "build", f"{W}/bad.onnx", "-o", f"{W}/tr", "--name", "n"], "bad.onnx"),
    (["triton", "pipeline", f"{W}/bad.toml", "-o", f"{W}/pr"], "bad.toml"),
    (["triton", "pipeline", f"{W}/latin/pipeline.toml", "-o", f"{W}/pr"], "steps.py"),
    (["tune", "Gelu", "--costs", f"{W}/bad.json", "--dry-run"], "bad.json"),
    # missing inputs
    (["atc", f"{W}/missing.onnx", "--soc-version", "Ascend310P3", "--output", f"{W}/om"],
     "missing.onnx"),
    (["atc", H, "--soc-version", "Ascend310P3", "--output", f"{W}/om", "--input-shape",
      "image:1,3,32,32", "--aipp", f"{W}/missing.toml"], "missing.toml"),
    (["doctor", f"{W}/missing.onnx"], "missing.onnx"),
    (["cann", "Gelu", "--onnx-model", f"{W}/missing.onnx", "-o", f"{W}/cann"], "missing.onnx"),
    (["precision", f"{W}/missing.onnx", "--precision-mode", "force_fp16"], "missing.onnx"),
    (["rewrite", f"{W}/missing.onnx", "-o", f"{W}/r.onnx", "--fuse", "conv-bn-relu"],
     "missing.onnx"),
    (["test", "Gelu", "--cases", f"{W}/missing.csv"], "missing.csv"),
    (["test", "Gelu", "--keep-dtype", f"{W}/bad.txt"], "--keep-dtype"),
    (["check", "NoSuchOp"], "NoSuchOp"),
    (["build", f"{W}/missing"], "missing"),
    (["package", f"{W}/missing"], "missing"),
    (["serve", f"{W}/missing"], "missing"),
    (["triton", "build", f"{W}/missing.onnx", "-o", f"{W}/tr", "--name", "n"], "missing.onnx"),
    (["triton", "build", H, "-o", f"{W}/tr", "--name", "n", "--operators", f"{W}/missing"],
     "--operators"),
    (["triton", "pipeline", f"{W}/missing.toml", "-o", f"{W}/pr"], "missing.toml"),
    (["triton", "bench", f"{W}/missing", "--model", "m"], "missing"),
    (["triton", "bench", f"{W}/missing", "--model", "m", "--input", f"x={W}/bad.npy"],
     "bad.npy"),
    (["tune", "NoSuchOp"], "NoSuchOp"),
    (["atc", H, "--soc-version", "Ascend310P3"], "--output"),
    (["build", f"{W}/ops/no_kernel"], "NoKernel"),
    (["check", f"{W}/ops/no_kernel"], "kernel.cpp"),
    # numbers out of range
    (["atc", H, "--soc-version", "Ascend310P3", "--output", f"{W}/om", "--input-shape",
      "image:99999999999999999999,3,32,32"], "--input-shape"),
    (["atc", H, "--soc-version", "Ascend310P3", "--output", f"{W}/om",
      "--static-memory-policy", "-1"], "--static-memory-policy"),
    (["bench", "Gelu", "--shape", "99999999999x99999999"], "--shape"),
    (["bench", "Gelu", "--threads", "0"], "--threads"),
    (["check", "Gelu", "--timeout", "inf"], "--timeout"),
    (["doctor", H, "--input-shape", "image=99999999999999999999,3,32,32"], "--input-shape"),
    (["export", "Gelu", "-o", f"{W}/g.onnx", "--shape", "X=99999999999999999999"], "--shape"),
    (["export", "FusedConvBnRelu", "-o", f"{W}/f.onnx", "--attr",
      "pads=[99999999999999999999, 0, 0, 0]"], "pads"),
    (["new", "MyBig", "--attrs", "a:int=99999999999999999999", "--dir", f"{W}/ops"], "'a'"),
    (["new", "MyTiny", "--attrs", "a:float=1e-310", "--dir", f"{W}/ops"], "'a'"),
    (["package", "Gelu", "--opset", "-1"], "--opset"),
    (["precision", H, "--precision-mode", "force_fp16", "--input-shape",
      "image:99999999999999,3,32,32"], "--input-shape"),
    (["rewrite", H, "-o", f"{W}/r.onnx", "--fuse", "conv-bn-relu", "--probe-values",
      "image=1e400"], "--probe-values"),
    (["serve", f"{W}/missing", "--grpc-port", "0"], "--grpc-port"),
    (["test", "Gelu", "--seed", "99999999999999999999"], "--seed"),
    (["triton", "build", H, "-o", f"{W}/tr", "--name", "n", "--instances", "0"], "--instances"),
    (["triton", "build", H, "-o", f"{W}/tr", "--name", "n", "--shape-gears", "1;-2"],
     "--shape-gears"),
    (["triton", "bench", f"{W}/missing", "--model", "m", "--requests", "-1"], "--requests"),
    (["triton", "bench", f"{W}/missing", "--model", "m", "--batch", "99999999999"], "--batch"),
    (["tune", "Gelu", "--sizes", "99999999999999"], "--sizes"),
    (["tune", "Gelu", "--attr", "approximate=1e400", "--dry-run"], "reference.py"),
    (["atc", H, "--soc-version", "Ascend310P3", "--output", f"{W}/om", "--input-shape",
      "image:-1,3,32,32", "--dynamic-dims", "1;99999999999999999999"], "--dynamic-dims"),
]


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    for ext in ("onnx", "toml", "csv", "json", "txt", "npy"):
        (folder / f"bad.{ext}").write_bytes(UNDECODABLE)
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    graph = oh.make_graph(
        [oh.make_node("Conv", ["image", "w"], ["c"], pads=[1, 1, 1, 1]),
         oh.make_node("Relu", ["c"], ["y"])], "net",
        [oh.make_tensor_value_info("image", onnx.TensorProto.FLOAT, ["N", 3, 32, 32])],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], [w])
    onnx.save(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)]), folder / "good.onnx")
    no_kernel = folder / "ops" / "no_kernel"  # spec.py alone: nothing to build
    no_kernel.mkdir(parents=True)
    (no_kernel / "spec.py").write_text(
        "from opsdk.spec import Input, OpSpec, Output\n"
        "SPEC = OpSpec('NoKernel', domain='com.example', inputs=[Input('x', 'float32')],\n"
        "              outputs=[Output('y', 'float32')])\n")
    latin = write_pipeline(folder / "latin")
    steps = latin.parent / "steps.py"
    steps.write_bytes(("# caf\xe9\n" + steps.read_text()).encode("latin-1"))
    return folder


@pytest.mark.parametrize("argv, named", CASES, ids=[" ".join(a[:2]) + f" [{n}]"
                                                     for a, n in CASES])
def test_every_failure_is_one_line_naming_the_command_the_input_and_the_fix(
        tmp: Path, argv: list[str], named: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = [a.replace("{tmp}", str(tmp)) for a in argv]
    try:
        rc = main(args)
    except SystemExit as e:  # argparse refuses an option: exit 2
        rc = e.code  # type: ignore[assignment]
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc not in (0, None), f"exit 0 for {args}: {err}"
    assert lines, f"nothing on stderr for {args}"
    *before, last = lines
    assert not [b for b in before if "error" in b.lower()], err  # progress lines only
    words = [a for a in argv if not a.startswith("-") and "/" not in a][:2]
    command = "opsdk " + " ".join(words if words[0] == "triton" else words[:1])
    assert last.startswith(f"{command}: error: "), last
    assert named in last, f"{named!r} not named: {last}"
    assert not EXCEPTION_NAME.search(err), err
    assert "allow_pickle" not in err, err  # never advise loading a pickle unsafely
    assert FIX.search(last.split(f" (see {command} --help)")[0]), f"no fix: {last}"
