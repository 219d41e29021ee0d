"""One grammar on the command line: every command's --help spells and documents its shape
and SoC options the same (``--shape``/``--input-shape NAME=D0,D1,...``, ``--soc SOC`` with
the one default SoC), and the old spellings still parse."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest
from onnx import TensorProto, helper, save

from opsdk.ascend.socs import DEFAULT_SOC, compute_unit
from opsdk.cli import build_parser, main
from opsdk.cli._grammar import SHAPE_HELP, SHAPE_METAVAR, SOC_HELP, named_shapes

#: The commands that take shapes and SoCs (a new one joins these lists and the grammar).
SHAPE_COMMANDS = {"atc", "bench", "doctor", "export", "precision", "rewrite", "triton bench"}
SOC_COMMANDS = {"ascendc run", "atc", "bench", "cann", "package", "precision", "tune"}
#: Options whose names hold "soc" or "shape" but name another thing.
OTHER = {"--soc-as-written", "--shape-gears", "--allow-todo-infershape"}


def _commands() -> dict[str, argparse.ArgumentParser]:
    """Every command and action, by its words (``triton build``)."""
    found: dict[str, argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, words: str) -> None:
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    found[f"{words} {name}".strip()] = sub
                    walk(sub, f"{words} {name}")

    walk(build_parser(), "")
    return found


COMMANDS = _commands()


def _help(words: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        main([*words.split(), "--help"])
    assert exc.value.code == 0
    return capsys.readouterr().out


def _visible(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.help != argparse.SUPPRESS]


@pytest.mark.parametrize("words", sorted(COMMANDS))
def test_every_help_spells_shapes_and_socs_the_same(
        words: str, capsys: pytest.CaptureFixture[str]) -> None:
    parser, text = COMMANDS[words], _help(words, capsys)
    names = {s for a in _visible(parser) for s in a.option_strings} - OTHER
    shape = [a for a in _visible(parser) if {"--shape", "--input-shape"} & set(a.option_strings)]
    soc = [a for a in _visible(parser) if "--soc" in a.option_strings]
    assert not {n for n in names if re.search("soc|shape", n)} - {"--soc", "--shape",
                                                                    "--input-shape"}
    assert bool(shape) == (words in SHAPE_COMMANDS) and bool(soc) == (words in SOC_COMMANDS)
    for a in shape:
        assert a.option_strings == ["--shape", "--input-shape"] and a.dest == "shape"
        assert a.metavar == SHAPE_METAVAR and str(a.help).startswith(SHAPE_HELP)
        assert f"--input-shape {SHAPE_METAVAR}" in text
        assert " ".join(SHAPE_HELP.split()[:4]) in " ".join(text.split())
    for a in soc:
        assert a.option_strings == ["--soc"] and a.metavar == "SOC"
        assert str(a.help).startswith(SOC_HELP) and f"default {DEFAULT_SOC}" in text
        assert a.default in (DEFAULT_SOC, None)  # None: repeatable, the default SoC's unit
        hidden = [h for h in parser._actions if "--soc-version" in h.option_strings]
        assert hidden and hidden[0].dest == "soc" and hidden[0].help == argparse.SUPPRESS
        assert "--soc-version" not in text


def _parse(parser: argparse.ArgumentParser, args: list[str]) -> argparse.Namespace:
    """``args`` with a placeholder for each required argument of the command."""
    needed = []
    for a in parser._actions:
        if not a.option_strings and a.nargs in (None, "+"):
            needed.append("m")
        elif a.option_strings and a.required:
            word = "m" if a.type in (None, str) else "1"  # a number for a numeric option
            needed += [a.option_strings[0], str(next(iter(a.choices or [word])))]
    return parser.parse_args([*needed, *args])


@pytest.mark.parametrize("words", sorted(SHAPE_COMMANDS))
def test_both_spellings_of_a_shape_are_one_option(words: str) -> None:
    parser = COMMANDS[words]
    def norm(value: list[object]) -> list[tuple[str, str]]:  # raw, or parsed by the command
        return [(str(n), ",".join(map(str, d))) for n, d in value] if value and not isinstance(
            value[0], str) else named_shapes(value)  # type: ignore[arg-type]

    got = [norm(_parse(parser, [flag, item]).shape)
           for flag, item in (("--shape", "x=1,3"), ("--input-shape", "x:1,3"),
                              ("--input-shape", "x=1,3"))]
    assert got == [[("x", "1,3")]] * 3


@pytest.mark.parametrize("words", sorted(SOC_COMMANDS))
def test_the_old_soc_spellings_still_parse(words: str) -> None:
    parser = COMMANDS[words]
    for flag in ("--soc", "--soc-version", "--soc_version"):
        soc = _parse(parser, [flag, "Ascend310P3"]).soc
        assert soc in ("Ascend310P3", ["Ascend310P3"])
    assert _parse(parser, []).soc in (DEFAULT_SOC, None)


def test_the_one_default_soc_comes_from_the_soc_table() -> None:
    from opsdk.ascend import DEFAULT_SOCS
    from opsdk.ascend.ascendc.toolkit import DEFAULT_SOC as toolkit_soc
    from opsdk.ascend.model_precision._lists import DEFAULT_SOC as lists_unit

    assert DEFAULT_SOC == "Ascend910B3"
    assert DEFAULT_SOCS == (compute_unit(DEFAULT_SOC),) == (lists_unit,)
    assert toolkit_soc == DEFAULT_SOC


def test_a_shape_without_a_name_says_both_spellings() -> None:
    from opsdk.errors import SpecError

    with pytest.raises(SpecError, match=r"--shape '1,3': expected NAME=VALUE, the VALUE dims D0,D1,"):
        named_shapes(["1,3"])


def test_atc_takes_either_spelling_and_the_default_soc(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 8])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
         str(tmp_path / "m.onnx"))
    lines = []
    for args in (["--soc-version", "Ascend910B3", "--input-shape", "x:2,8"],
                 ["--soc", "Ascend910B3", "--shape", "x=2,8"],
                 ["--shape", "x=2,8"]):
        assert main(["atc", str(tmp_path / "m.onnx"), "--output", str(tmp_path / "m"),
                     "--dry-run", "--json", *args]) == 0
        lines.append(" ".join(json.loads(capsys.readouterr().out)["procedure"]))
    assert lines[0] == lines[1] == lines[2]
    assert "--input_shape=x:2,8" in lines[0] and "--soc_version=Ascend910B3" in lines[0]
