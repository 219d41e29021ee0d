"""The `opsdk` command: --help everywhere, clear errors, non-zero exit codes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from opsdk.cli import build_parser, main


def subcommands() -> list[str]:
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return sorted(action.choices)  # type: ignore[arg-type]


def test_every_core_command_is_there():
    assert {"new", "build", "list", "test", "check", "export"} <= set(subcommands())


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
