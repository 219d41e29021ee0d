"""Name clashes with CANN's built-in operators: `opsdk new`, `opsdk cann` and `opsdk doctor`
warn, naming the built-in and whether its inputs, outputs and attributes match."""

from __future__ import annotations

from pathlib import Path

import pytest

from opsdk.ascend import builtin_clash, builtin_signatures
from opsdk.ascend._builtins import fallback_signatures, parse_op_protos
from opsdk.cli import main

DATA = Path(__file__).resolve().parents[2] / "opsdk" / "ascend" / "data" / "cann_builtin_ops.txt"


@pytest.fixture(autouse=True)
def _no_toolkit(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH"):
        monkeypatch.delenv(var, raising=False)


def test_opsdk_new_rmsnorm_warns_naming_cann_rmsnorm_and_the_match(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["new", "RmsNorm", "--dir", str(tmp_path / "a"), "--inputs", "x:float16,float32",
            "gamma", "--outputs", "y", "rstd", "--attrs", "epsilon:float=1e-6"]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "opsdk new: warning: RmsNorm is also the type of a CANN built-in operator" in err
    assert "REG_OP(RmsNorm) in opsdk's table of CANN 8.1.RC1's built-in operators" in err
    assert ("CANN's RmsNorm against RmsNorm's spec.py: inputs match (x, gamma); outputs match "
            "(y, rstd); attributes match (epsilon:Float); if it computes the same, the model "
            "can use the built-in instead") in err
    assert "opsdk cann --op-type RmsNormCustom" in err
    # the operator: outputs y and the reciprocal rms under another name
    args = ["new", "RmsNorm", "--dir", str(tmp_path / "b"), "--inputs", "x", "gamma",
            "--outputs", "y", "inv_rms", "--attrs", "epsilon:float=1e-5"]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert ("inputs match (x, gamma); outputs differ (CANN's: y, rstd; spec.py's: y, inv_rms); "
            "attributes match (epsilon:Float).") in err


def test_opsdk_new_with_an_unused_name_does_not_warn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", "MyRmsNormVariant", "--dir", str(tmp_path)]) == 0
    assert "warning" not in capsys.readouterr().err


def test_opsdk_cann_warning_says_how_the_signatures_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gelu = str(Path(__file__).resolve().parents[2] / "operators" / "gelu")
    assert main(["cann", gelu, "-o", str(tmp_path / "p")]) == 0
    err = capsys.readouterr().err
    assert "warning: Gelu is also the type of a CANN built-in operator" in err
    assert ("inputs differ (CANN's: x; spec.py's: X); outputs differ (CANN's: y; spec.py's: Y); "
            "attributes differ (CANN's: none; spec.py's: approximate:String)") in err


def test_the_toolkit_op_protos_give_the_signatures_when_installed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    inc = tmp_path / "toolkit" / "opp" / "built-in" / "op_proto" / "inc"
    inc.mkdir(parents=True)
    (inc / "nn_norm_ops.h").write_text(  # written the way the toolkit's op protos are
        "/**\n* @brief A norm. REG_OP(NotThis) in a comment is no declaration.\n*/\n"
        "REG_OP(RmsNorm)\n    .INPUT(x, TensorType({DT_FLOAT}))\n"
        "    .DYNAMIC_INPUT(gamma, TensorType({DT_FLOAT}))\n"
        "    .OUTPUT(y, TensorType({DT_FLOAT}))\n    .REQUIRED_ATTR(eps, Float)\n"
        "    .OP_END_FACTORY_REG(RmsNorm)\n")
    sigs, source = builtin_signatures(tmp_path / "toolkit")
    assert list(sigs) == ["RmsNorm"] and str(inc) in source
    assert sigs["RmsNorm"].line() == "RmsNorm|x,gamma*|y|eps:Float"
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path / "toolkit"))
    assert main(["new", "RmsNorm", "--dir", str(tmp_path / "ops"), "--inputs", "x", "gamma",
                 "--outputs", "y", "rstd", "--attrs", "epsilon:float=1e-6"]) == 0
    err = capsys.readouterr().err
    assert f"REG_OP(RmsNorm) in the toolkit's op protos ({inc})" in err
    assert ("outputs differ (CANN's: y; spec.py's: y, rstd); attributes differ (CANN's: "
            "eps:Float; spec.py's: epsilon:Float)") in err
    assert builtin_clash("Gelu", tmp_path / "toolkit") is None  # not in this toolkit


def test_the_table_says_where_it_comes_from_and_reads_back() -> None:
    text = DATA.read_text()
    head = [line for line in text.splitlines() if line.startswith("#")]
    assert any("text-only dump of that installed toolkit, commit " in line for line in head)
    assert any("opp/built-in/op_proto/inc/*.h" in line for line in head)
    sigs = fallback_signatures()
    rows = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert len(sigs) == len(rows) > 1000
    assert "\n".join(sigs[r.split("|")[0]].line() for r in rows) == "\n".join(rows)
    assert sigs["LayerNorm"].outputs == ("y", "mean", "variance")
    assert "Softmax" not in sigs and "SoftmaxV2" in sigs
    assert parse_op_protos("REG_OP(A)\n.OUTPUT(y, T)\n.OP_END_FACTORY_REG(B)\n") == {}
