"""The `opsdk` command: --help everywhere, clear errors, non-zero exit codes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from opsdk.cli import build_parser, main


def subcommands() -> list[str]:
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return sorted(action.choices)  # type: ignore[arg-type]


def test_every_core_command_is_there():
    assert {"new", "build", "list", "test", "check", "export"} <= set(subcommands())


def test_action_modules_are_not_top_level_commands():
    """cmd_triton_pipeline holds `opsdk triton pipeline/bench`: registered once, by triton."""
    names = set(subcommands())
    assert not names & {"pipeline", "triton_pipeline"}
    triton = build_parser("triton")._actions[-1].choices["triton"]  # type: ignore[index]
    actions = next(a for a in triton._actions if a.dest == "triton_command").choices
    assert {"build", "check", "pipeline", "bench"} <= set(actions)


@pytest.mark.parametrize("command", subcommands())
def test_help_on_every_subcommand(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    assert f"usage: opsdk {command}" in capsys.readouterr().out


def test_console_script_entry_and_exit_codes():
    run = [sys.executable, "-m", "opsdk"]
    assert subprocess.run([*run, "--version"], capture_output=True).returncode == 0
    no_args = subprocess.run(run, capture_output=True, text=True)
    assert no_args.returncode == 2 and "COMMAND" in no_args.stdout
    missing = subprocess.run([*run, "build", "NoSuchOp"], capture_output=True, text=True)
    assert missing.returncode == 1
    assert "operator 'NoSuchOp' not found" in missing.stderr and "opsdk new NoSuchOp" in missing.stderr


def test_list_shows_the_shipped_operator(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "ThresholdedRelu" in out and "com.opsdk" in out


def test_list_json(capsys):
    import json

    assert main(["list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    relu = next(r for r in rows if r["name"] == "ThresholdedRelu")
    assert relu["dtypes"] == {"x": ["float16", "float32"]} and relu["domain"] == "com.opsdk"


def test_one_command_imports_only_its_own_module():
    """`opsdk build` must not pay for importing ONNX or the test harness."""
    code = (
        "import sys; from opsdk.cli import build_parser; build_parser('build'); "
        "print(sorted(m for m in sys.modules if m.startswith('opsdk.cli.cmd_')), "
        "'onnx' in sys.modules, 'opsdk.testing' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['opsdk.cli.cmd_build'] False False"


def opsdk(*args: str, cwd: object = None, env: dict[str, str] | None = None,
          **kw: object) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run([sys.executable, "-m", "opsdk", *args], capture_output=True,
                          text=True, cwd=cwd, env={**os.environ, **(env or {})}, timeout=600,
                          **kw)  # type: ignore[call-overload]


def one_line_error(p: subprocess.CompletedProcess[str], command: str, *needles: str) -> None:
    assert p.returncode == 1, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert "Traceback" not in p.stderr
    line = next(ln for ln in lines if ln.startswith(f"opsdk {command}: error: "))
    for n in needles:
        assert n in line, (n, line)


def test_unusable_output_paths_are_one_line_errors(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("")
    model = tmp_path / "m.onnx"
    assert opsdk("export", "ThresholdedRelu", "-o", str(model), "--shape", "x=4").returncode == 0
    (tmp_path / "t.onnx").write_bytes(model.read_bytes()[:60])
    cases = [
        (["export", "ThresholdedRelu", "-o", "d", "--force", "--shape", "x=2"], "export",
         ["-o d: it is a folder; pass a file path"]),
        (["export", "ThresholdedRelu", "-o", "f/x.onnx", "--shape", "x=2"], "export",
         ["-o f/x.onnx: its folder f: it is a file, not a folder"]),
        (["rewrite", str(model), "-o", "d", "--replace", "Relu"], "rewrite",
         ["-o d: it is a folder"]),
        (["triton", "build", str(model), "-o", "f", "--name", "m"], "triton build",
         ["-o f: it is a file, not a folder"]),
        (["package", "ThresholdedRelu", "-o", "f"], "package",
         ["-o f: it is a file, not a folder"]),
        (["test", "ThresholdedRelu", "--report", "r.txt"], "test",
         ["--report r.txt: use a file name ending in .json or .html"]),
        (["new", "A" * 301], "new", ["it is 301 characters long, at most 64"]),
        (["cann", "ThresholdedRelu", "--onnx-model", "t.onnx", "-o", "out"], "cann",
         ["t.onnx: not a readable ONNX model", "re-export it"]),
        (["export", "ThresholdedRelu", "-o", "y.onnx", "--shape", "x=99999999999999999999999"],
         "export", ["integer dims are 0 to 2**63-1"]),
        (["export", "ThresholdedRelu", "-o", "y.onnx", "--shape", "x=1.5,2"], "export",
         ["dim '1.5' is neither an integer nor a symbolic name"]),
        (["export", "ThresholdedRelu", "-o", "y.onnx", "--shape", "x=2", "--opset", "0"],
         "export", ["--opset 0: ai.onnx opsets run from 1 to"]),
    ]
    for argv, command, needles in cases:
        one_line_error(opsdk(*argv, cwd=tmp_path), command, *needles)
    assert (tmp_path / "f").read_text() == "" and not (tmp_path / "y.onnx").exists()


@pytest.mark.parametrize("make", ["file", "too_long", "uncreatable"])
def test_an_unusable_cache_dir_is_named_with_the_fix(tmp_path, make):
    where = {"file": tmp_path / "f", "too_long": tmp_path / ("a" * 300),
             "uncreatable": Path("/proc/opsdk-cache")}[make]
    if make == "file":
        where.write_text("")
    p = opsdk("build", "ThresholdedRelu", env={"OPSDK_CACHE_DIR": str(where)})
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert f"OPSDK_CACHE_DIR={str(where)!r} cannot be used" in p.stderr
    assert "point OPSDK_CACHE_DIR at a folder you can write" in p.stderr


def test_a_closed_pipe_ends_quietly():
    proc = subprocess.Popen([sys.executable, "-m", "opsdk", "list"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # like `opsdk list | head -0`: the reader is gone before we write
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 141 and err == "", err


def test_unexpected_errors_are_one_line_and_debug_shows_the_traceback(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    p = opsdk("cann", "ThresholdedRelu", "--onnx-model", str(bad), "-o", str(tmp_path / "o"))
    one_line_error(p, "cann", "not a readable ONNX model")
    p = opsdk("--debug", "cann", "ThresholdedRelu", "--onnx-model", str(bad),
              "-o", str(tmp_path / "o"))
    assert p.returncode == 1 and "Traceback (most recent call last)" in p.stderr


def test_a_broken_spec_is_listed_and_does_not_hide_the_others(tmp_path):
    ops = tmp_path / "ops"
    (ops / "exits").mkdir(parents=True)
    (ops / "exits" / "spec.py").write_text("import sys\nsys.exit(0)\n")
    (ops / "typo").mkdir()
    (ops / "typo" / "spec.py").write_text("SPEC = OpSpecc('Typo')\n")
    env = {"OPSDK_OPERATORS_PATH": str(ops)}
    p = opsdk("list", env=env, cwd=tmp_path)
    assert p.returncode == 1 and "ThresholdedRelu" in p.stdout, p.stderr
    assert "exits: BROKEN, left out: " in p.stderr and "SystemExit: 0" in p.stderr
    assert "typo: BROKEN" in p.stderr and "NameError: name 'OpSpecc' is not defined" in p.stderr
    assert opsdk("export", "ThresholdedRelu", "-o", "t.onnx", "--shape", "x=2", env=env,
                 cwd=tmp_path).returncode == 0
    one_line_error(opsdk("build", "exits", env=env, cwd=tmp_path), "build",
                   "exits/spec.py: importing spec.py failed: SystemExit: 0")
    one_line_error(opsdk("build", str(ops / "exits"), env=env, cwd=tmp_path), "build",
                   "SystemExit: 0")


def test_a_broken_copy_of_a_shipped_operator_is_not_replaced_by_it(tmp_path, monkeypatch):
    """The user's own thresholded_relu/ with a typo in spec.py: building, loading or testing
    ThresholdedRelu must say so, not silently take the shipped one (stale numerics)."""
    from opsdk.errors import SpecError
    from opsdk.registry import find_operator

    mine = tmp_path / "ops" / "thresholded_relu"
    mine.mkdir(parents=True)
    (mine / "spec.py").write_text("SPEC = OpSpec(\n// a C++ comment\n")
    monkeypatch.setenv("OPSDK_OPERATORS_PATH", str(tmp_path / "ops"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError, match=r"SyntaxError.* -- .*thresholded_relu would shadow the "
                       r"shipped com.opsdk::ThresholdedRelu .*fix it, or remove or rename"):
        find_operator("ThresholdedRelu")
    assert find_operator("Gelu").origin == "shipped"  # the others are still there


def test_bad_values_are_refused_not_silently_accepted(tmp_path):
    cases = [
        (["new", "NanOp", "--attrs", "a:float=nan"], "new",
         ["attribute 'a': default nan is not a finite number"]),
        (["new", "InfOp", "--attrs", "w:floats=1,inf"], "new", ["default inf is not a finite"]),
        (["new", "OptOut", "--outputs", "y?"], "new",
         ["--outputs 'y?': outputs cannot be optional", "write --outputs y"]),
        (["new", "NoDtype", "--inputs", "x:"], "new", ["--inputs 'x:': no dtype after ':'"]),
        (["cann", "ThresholdedRelu", "-o", "prj", "--vendor", "bad vendor/.."], "cann",
         ["--vendor 'bad vendor/..': use letters, digits and '_'"]),
        (["package", "ThresholdedRelu", "-o", "dist", "--cpu-baseline", "pentium9"], "package",
         ["--cpu-baseline 'pentium9' is not a CPU level opsdk knows; pick one of x86-64"]),
    ]
    for argv, command, needles in cases:
        one_line_error(opsdk(*argv, cwd=tmp_path), command, *needles)
    assert not (tmp_path / "operators").exists() and not (tmp_path / "prj").exists()
    assert not list((tmp_path / "dist").glob("*.whl"))


def test_a_bad_report_path_is_refused_before_the_suite_runs(tmp_path, repo_root):
    p = subprocess.run([sys.executable, "-m", "pytest", str(repo_root / "operators" / "gelu"),
                        "-q", "-p", "no:cacheprovider", "--opsdk-report=/proc/x/r.json"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 4 and "passed" not in p.stdout, p.stdout
    assert "--report /proc/x/r.json: cannot write in /proc/x" in p.stderr
    one_line_error(opsdk("test", "Gelu", "--report", "/proc/x/r.json"), "test",
                   "cannot write in /proc/x")
