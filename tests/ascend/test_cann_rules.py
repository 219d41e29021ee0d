"""One rule set per CANN release, shared by `opsdk doctor`, `opsdk atc` and `opsdk triton
build/check --target ascend` (issue 24 items 3, 4, 5, 9 and the SoC name of 11)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from opsdk.ascend import CannArgError, compute_unit, normalize_default_domain, plan_atc
from opsdk.ascend.atc._atc import write_model_copy
from opsdk.ascend.atc.doctor import blocking_findings, diagnose, rules_for
from opsdk.ascend.atc.rules import model_problems
from opsdk.ascend.versions import parse_cann_version
from opsdk.cli import main
from opsdk.errors import SpecError
from opsdk.triton import TritonConfigError
from tests._helpers.ascend_repo import build as build_ascend
from tests._helpers.ascend_repo import two_op_model

CANN8 = parse_cann_version("8.1.RC1")


@pytest.fixture(autouse=True)
def _no_toolkit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default release is read from an installed toolkit: none here."""
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        monkeypatch.delenv(var, raising=False)


def single_op(op: str, opset: int, inputs: list[tuple[str, list[object]]], **attrs: object
              ) -> onnx.ModelProto:
    ins = [helper.make_tensor_value_info(n, T.FLOAT, s) for n, s in inputs]
    node = helper.make_node(op, [n for n, _ in inputs], ["y"], name="n0", **attrs)
    out = helper.make_tensor_value_info("y", T.FLOAT, None)
    return helper.make_model(helper.make_graph([node], "g", ins, [out]),
                             opset_imports=[helper.make_opsetid("", opset)], ir_version=9)


def grid_sample16() -> onnx.ModelProto:
    return single_op("GridSample", 16, [("x", [1, 3, 8, 8]), ("grid", [1, 4, 4, 2])])


def layer_norm17() -> onnx.ModelProto:
    return single_op("LayerNormalization", 17, [("x", [2, 8]), ("s", [8])])


def codes(findings: list) -> list[str]:
    return [f.code for f in findings]


# ------------------------------------------------------------------ item 5: doctor --cann
def test_cann_alone_applies_only_that_releases_rules(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Item 5: `opsdk doctor --cann 8.1.RC1` without --target reported CANN 5-7's opset
    limit (9-15) next to a CANN 8.1 rule."""
    assert diagnose(grid_sample16(), cann="8.1.RC1") == []
    assert codes(diagnose(grid_sample16(), cann="7.0")) == ["opset-range", "unsupported-op"]
    path = tmp_path / "gs.onnx"
    onnx.save(grid_sample16(), str(path))
    assert main(["doctor", str(path), "--cann", "8.1.RC1"]) == 0
    assert "ascend-cann8 (CANN 8.1.RC1)" in capsys.readouterr().out
    assert main(["doctor", str(path), "--cann", "7.0"]) == 1
    assert "9-15" in capsys.readouterr().out


def test_default_rules_are_cann8_without_a_toolkit_and_target_must_agree() -> None:
    """Item 3/5: no --target and no --cann means the default release (8.x), not CANN 5-7."""
    profile, version = rules_for()
    assert (profile.name, str(version)) == ("ascend-cann8", "8.1.RC1")
    assert diagnose(grid_sample16()) == []
    with pytest.raises(SpecError, match="--target ascend applies ATC of CANN 5-7.*give --cann"):
        rules_for("ascend", "8.1.RC1")
    assert rules_for("ascend-cann8", "9.2")[0].opset_max == 18


def test_toolkit_release_sets_the_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "compiler").mkdir()
    (tmp_path / "compiler" / "version.info").write_text("Version=7.0.0\nversion_dir=7.0.0\n")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path))
    assert codes(diagnose(grid_sample16())) == ["opset-range", "unsupported-op"]


# ------------------------------------------------------------------ item 9: opset advice
def test_opset_fix_puts_reexport_first_when_the_converter_has_no_adapter() -> None:
    """Item 9: the converter has no adapter for LayerNormalization (or GridSample, Gelu ...)
    across the versions ATC needs; the advice said to convert anyway."""
    (opset, *_) = diagnose(layer_norm17(), cann="7.0")
    assert opset.code == "opset-range"
    assert opset.fix.startswith("re-export at opset 15: torch.onnx.export(..., opset_version=15)")
    assert "No Previous Version of LayerNormalization exists" in opset.fix
    assert "convert_version" not in opset.fix
    assert "opsdk rewrite model.onnx -o model_opset15.onnx --opset 15" in opset.fix
    gelu = single_op("Gelu", 20, [("x", [2, 8])])
    (opset, *_) = diagnose(gelu, cann="8.1.RC1")
    assert opset.fix.startswith("re-export at opset 18") and "Gelu" in opset.fix
    assert "--opset 18 (onnx.version_converter alone cannot" in opset.fix
    relu = single_op("Relu", 20, [("x", [2, 8])])
    (opset,) = diagnose(relu, cann="8.1.RC1")
    assert opset.fix.startswith("re-export at opset 18")
    assert "onnx.version_converter.convert_version(model, 18)" in opset.fix  # it can convert


# -------------------------------------------------------- item 3: triton build/check agree
def gelu20_model() -> onnx.ModelProto:
    """An opset-20 export with a Gelu node, as torch writes at opset >= 20."""
    x = helper.make_tensor_value_info("x", T.FLOAT, ["N", 8])
    y = helper.make_tensor_value_info("y", T.FLOAT, ["N", 8])
    nodes = [helper.make_node("Gelu", ["x"], ["g"], name="gelu"),
             helper.make_node("Relu", ["g"], ["y"], name="relu")]
    return helper.make_model(helper.make_graph(nodes, "g", [x], [y]),
                             opset_imports=[helper.make_opsetid("", 20)], ir_version=9)


def test_triton_build_refuses_what_the_doctor_refuses(tmp_path: Path) -> None:
    """Item 3: the ascend build applied only the parser's domain and key rules, so an
    opset-20 model with Gelu (newer than CANN 8's opset 18) was written and checked ok."""
    assert codes(blocking_findings(gelu20_model(), CANN8)) == ["opset-range", "unsupported-op"]
    with pytest.raises(TritonConfigError, match="opset 20.*accepts 9-18.*Gelu exists since "
                       "ai.onnx opset 20"):
        build_ascend(tmp_path / "a", gelu20_model())


def test_a_model_the_check_passes_passes_the_doctor(tmp_path: Path) -> None:
    """Item 3: what the build writes and the check's rules accept, the doctor accepts for the
    same release; and a folder model the doctor rejects fails the check's rules."""
    folder = build_ascend(tmp_path / "b", two_op_model(), max_batch_size=8)
    written = onnx.load(str(folder / "1" / "model.onnx"))
    assert model_problems(written, CANN8) == []
    assert [f for f in diagnose(written, cann="8.1.RC1") if f.severity == "error"] == []
    newer = onnx.ModelProto()
    newer.CopyFrom(written)
    for o in newer.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = 20
    problems = model_problems(newer, CANN8)
    assert any("opset 20" in p and "9-18" in p for p in problems)
    assert codes(blocking_findings(newer, CANN8)) == ["opset-range"]


# ------------------------------------------------------------------ item 4: opsdk atc
def _save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.save(model, str(path))
    return path


def test_atc_applies_cann8_rules_and_its_input_shape(tmp_path: Path) -> None:
    """Item 4: atc knew only CANN 5-7's rules (every opset >= 16 export blocked) and its
    doctor ignored the --input-shape it was given."""
    kw = {"soc_version": "Ascend910B3", "output": str(tmp_path / "out")}
    ln = _save(layer_norm17(), tmp_path / "ln.onnx")
    plan = plan_atc(ln, cann="8.1.RC1", **kw)
    assert plan.blocking == [] and plan.cann == "8.1.RC1"
    assert plan_atc(ln, **kw).blocking == []  # default: CANN 8 rules without a toolkit
    old = plan_atc(ln, cann="7.0", **kw)
    assert any("accepts 9-15" in b for b in old.blocking)
    dyn = single_op("Relu", 17, [("x", ["N", 3])])
    plan = plan_atc(_save(dyn, tmp_path / "dyn.onnx"), input_shape="x:4,3", **kw)
    assert not any("dynamic-shape" in f["message"] or "dynamic shape" in f["message"]
                   for f in plan.findings)


def rewritten_model() -> onnx.ModelProto:
    """A model as `opsdk rewrite --replace` leaves it: standard nodes in the default domain
    next to a com.opsdk node."""
    x = helper.make_tensor_value_info("x", T.FLOAT, [2, 8])
    y = helper.make_tensor_value_info("y", T.FLOAT, [2, 8])
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Softmax", ["r"], ["s"], name="sm", domain="com.opsdk", axis=-1),
             helper.make_node("Mul", ["s", "two"], ["y"], name="mul")]
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    return helper.make_model(helper.make_graph(nodes, "g", [x], [y], [two]), opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.opsdk", 1)], ir_version=9)


def test_atc_normalises_domains_of_a_rewritten_model(tmp_path: Path) -> None:
    """Item 4: a rewritten model was blocked, even with --skip-doctor, by one E16005 line per
    standard node; atc now converts the domain-normalised copy the ascend build writes."""
    src = _save(rewritten_model(), tmp_path / "m.onnx")
    kw = {"soc_version": "Ascend910B3", "output": str(tmp_path / "out"), "cann": "8.1.RC1"}
    for skip in (True, False):
        plan = plan_atc(src, skip_doctor=skip, **kw)
        assert plan.blocking == [], plan.blocking
    assert f"--model={tmp_path / 'm.atc.onnx'}" in plan.command
    written = write_model_copy(plan)
    assert written == tmp_path / "m.atc.onnx"
    copy = onnx.load(str(written))
    assert copy == normalize_default_domain(rewritten_model())
    assert model_problems(copy, CANN8) == []
    written.write_bytes(b"something else")
    with pytest.raises(CannArgError, match="exists and is not the copy.*--force"):
        write_model_copy(plan)
    assert write_model_copy(plan, force=True) == written
    later = plan_atc(src, **{**kw, "cann": "9.2"})  # parsers after 9.1 resolve it themselves
    assert later.model_copy is None and f"--model={src}" in later.command


def test_atc_prints_the_complete_host_procedure(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Item 4: the printed command never mentioned the custom operator package."""
    src = _save(rewritten_model(), tmp_path / "m.onnx")
    args = ["atc", str(src), "--soc-version", "Ascend910B3", "--output", str(tmp_path / "o"),
            "--cann", "8.1.RC1", "--dry-run"]
    assert main(args) == 0
    out = capsys.readouterr().out
    lines = [ln.strip() for ln in out.splitlines()]
    env = lines.index("source /usr/local/Ascend/ascend-toolkit/set_env.sh")
    build = next(i for i, ln in enumerate(lines) if ln.startswith("opsdk cann Softmax -o "
                                                                   "build/cann/softmax"))
    install = next(i for i, ln in enumerate(lines) if "custom_opp_*.run" in ln)
    assert "--install-path=$HOME/opp" in lines[install]
    source = next(i for i, ln in enumerate(lines) if "/vendors/*/bin/set_env.bash" in ln)
    atc = next(i for i, ln in enumerate(lines) if ln.startswith("atc --framework=5"))
    assert env < build < install < source < atc
    assert f"--model={tmp_path / 'm.atc.onnx'}" in lines[atc]
    assert (tmp_path / "m.atc.onnx").is_file()


def test_atc_shape_gears(tmp_path: Path) -> None:
    """Item 4: dynamic dims with gears reach the atc line (--dynamic_dims, --input_format=ND)."""
    dyn = _save(single_op("Relu", 17, [("x", ["N", 3, "H"])]), tmp_path / "d.onnx")
    kw = {"soc_version": "Ascend910B3", "output": str(tmp_path / "o"), "cann": "8.1.RC1"}
    plan = plan_atc(dyn, input_shape="x:-1,3,-1", dynamic_dims="1,32;8,64", **kw)
    assert plan.command[-2:] == ["--dynamic_dims=1,32;8,64", "--input_format=ND"]
    assert plan.procedure[-1].endswith("'--dynamic_dims=1,32;8,64' --input_format=ND")
    with pytest.raises(CannArgError, match="needs 2 positive int"):
        plan_atc(dyn, input_shape="x:-1,3,-1", dynamic_dims="1;8", **kw)
    with pytest.raises(CannArgError, match="which has none"):
        plan_atc(dyn, input_shape="x:1,3,32", dynamic_dims="1,2;3,4", **kw)


# -------------------------------------------------------------- item 11: the SoC name
def test_ascend910b_is_refused_as_ambiguous(tmp_path: Path) -> None:
    """Item 11: --soc-version Ascend910B silently meant the first-generation 910."""
    src = _save(single_op("Relu", 17, [("x", [2, 3])]), tmp_path / "m.onnx")
    kw = {"output": str(tmp_path / "o"), "cann": "8.1.RC1"}
    with pytest.raises(CannArgError, match="Ascend910B is ambiguous.*first-generation Ascend "
                       "910.*Ascend910B1, Ascend910B2, Ascend910B2C, Ascend910B3, Ascend910B4"):
        plan_atc(src, soc_version="Ascend910B", **kw)
    plan = plan_atc(src, soc_version="Ascend910B", soc_as_written=True, **kw)
    assert "--soc_version=Ascend910B" in plan.command
    with pytest.raises(CannArgError, match="ambiguous"):
        compute_unit("Ascend910B")
    assert compute_unit("ascend910b") == "ascend910b"
    assert compute_unit("Ascend910B3") == "ascend910b"


def test_toolkit_release_is_version_dir_not_the_component_version(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default release comes from the installed toolkit: CANN 8.1.RC1's component files
    say Version=7.7.0.1.238 (the component's number) and version_dir=8.1.RC1 (the release);
    reading the former gave CANN 5-7's rules on a CANN 8.1 host. The lines below are those of
    the 8.1.RC1 toolkit's compiler/version.info and aarch64-linux/ascend_toolkit_install.info."""
    (tmp_path / "compiler").mkdir()
    (tmp_path / "compiler" / "version.info").write_text(
        "Version=7.7.0.1.238\nversion_dir=8.1.RC1\ntimestamp=20250428_203017761\n")
    (tmp_path / "aarch64-linux").mkdir()
    (tmp_path / "aarch64-linux" / "ascend_toolkit_install.info").write_text(
        "package_name=Ascend-cann-toolkit\nversion=8.1.RC1\narch=aarch64\nos=linux\n")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path))
    assert str(rules_for()[1]) == "8.1.RC1"
    assert diagnose(grid_sample16()) == []
    (tmp_path / "compiler" / "version.info").unlink()  # the install info alone, another arch
    assert str(rules_for()[1]) == "8.1.RC1"
