"""ATC's memory options (issue 31, item 5): `opsdk atc --buffer-optimize/--static-memory-policy`
and `opsdk triton build --target ascend` with the same options; the command lines, the npu_ge
parameters and the doctor's warnings where CANN's documentation says a value does nothing or
conflicts with dynamic shapes, gears or concurrent graphs."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import onnx.helper as oh
import pytest

from opsdk.ascend import CannArgError, plan_atc
from opsdk.ascend.atc._memory import MemoryOptions, memory_findings
from opsdk.cli import main
from opsdk.triton import (
    AscendOptions,
    RepositoryOptions,
    TritonConfigError,
    TritonConfigWarning,
    read_graph_io,
    render_model,
)
from tests._helpers.triton_models import mlp_model, parse_config
from tests._helpers.triton_options import options


def _model(path: Path, shape: list) -> Path:
    x = oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, shape)
    y = oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, shape)
    m = oh.make_model(oh.make_graph([oh.make_node("Relu", ["x"], ["y"])], "g", [x], [y]),
                      opset_imports=[oh.make_opsetid("", 13)])
    onnx.save(m, path)
    return path


KW = {"soc_version": "Ascend910B3", "cann": "8.1.RC1"}


def test_buffer_optimize_is_an_atc_flag(tmp_path: Path) -> None:
    m = _model(tmp_path / "m.onnx", [2, 3])
    plan = plan_atc(m, output=str(tmp_path / "o"), buffer_optimize="off_optimize", **KW)
    assert "--buffer_optimize=off_optimize" in plan.command
    assert plan.procedure[-1].endswith("--buffer_optimize=off_optimize")
    assert not [f for f in plan.findings if "buffer_optimize" in f["message"]]


def test_l1_optimize_is_warned_as_doing_nothing(tmp_path: Path) -> None:
    m = _model(tmp_path / "m.onnx", [2, 3])
    plan = plan_atc(m, output=str(tmp_path / "o"), buffer_optimize="l1_optimize", **KW)
    msgs = [f["message"] for f in plan.findings if f["severity"] == "warning"]
    assert any("l1_optimize has no effect" in s and "fix: use l2_optimize" in s for s in msgs)
    assert not plan.blocking


def test_unknown_values_are_refused_with_the_accepted_ones(tmp_path: Path) -> None:
    m = _model(tmp_path / "m.onnx", [2, 3])
    with pytest.raises(CannArgError, match="'l3_optimize' is not accepted by ATC/GE; use one of "
                       "l2_optimize, l1_optimize, off_optimize"):
        plan_atc(m, output="o", buffer_optimize="l3_optimize", **KW)
    with pytest.raises(CannArgError, match="--static-memory-policy 5 is not a GE static-memory "
                       "policy; use one of 0: allocate"):
        plan_atc(m, output="o", static_memory_policy=5, **KW)


def test_static_memory_policy_is_set_for_the_om_runtime_not_on_the_atc_line(
        tmp_path: Path) -> None:
    m = _model(tmp_path / "m.onnx", [2, 3])
    plan = plan_atc(m, output=str(tmp_path / "o"), static_memory_policy=2, **KW)
    assert not any("memory" in c.split("=")[0] for c in plan.command)
    assert plan.procedure[-1] == "export GE_USE_STATIC_MEMORY=2"
    assert any("not an ATC flag" in n for n in plan.notes)
    assert not plan.findings  # a static-shape model: policy 2 is the documented fit


@pytest.mark.parametrize(("shape", "gears", "policy", "code"), [
    ("x:1~8,3", None, 2, "runs a dynamic-shape graph"),  # 2 is static-only
    ("x:-1,3", "1;4", 3, "one static-shape graph per gear"),  # gears: 3 is dynamic-only
    ("x:2,3", None, 3, "every dim of this model is fixed"),
    ("x:2,3", None, 1, "read as 2"),
])
def test_doctor_warns_where_the_policy_conflicts_with_the_shapes(
        tmp_path: Path, shape: str, gears: str | None, policy: int, code: str) -> None:
    m = _model(tmp_path / "m.onnx", ["n", 3])
    plan = plan_atc(m, output=str(tmp_path / "o"), input_shape=shape, dynamic_dims=gears,
                    static_memory_policy=policy, **KW)
    msgs = [f["message"] for f in plan.findings if f["severity"] == "warning"]
    assert any(f"ge.exec.staticMemoryPolicy={policy}" in s and code in s and "-- fix:" in s
               for s in msgs), msgs


def test_policy_four_with_a_dynamic_shape_is_not_warned(tmp_path: Path) -> None:
    m = _model(tmp_path / "m.onnx", ["n", 3])
    plan = plan_atc(m, output=str(tmp_path / "o"), input_shape="x:1~8,3",
                    static_memory_policy=4, **KW)
    assert not plan.findings


def test_atc_cli_prints_the_flags_and_the_warnings(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = _model(tmp_path / "m.onnx", ["n", 3])
    rc = main(["atc", str(m), "--soc-version", "Ascend910B3", "--output", str(tmp_path / "o"),
               "--input-shape", "x:1~8,3", "--buffer-optimize", "l2_optimize",
               "--static-memory-policy", "2", "--cann", "8.1.RC1", "--dry-run", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert "--buffer_optimize=l2_optimize" in report["command"]
    assert "export GE_USE_STATIC_MEMORY=2" in report["procedure"]
    assert any("dynamic-shape graph" in f["message"] for f in report["findings"])


def _ascend(**kw: object) -> RepositoryOptions:
    return options(name="m", target="ascend", cann="8.1.RC1", **kw)


def _params(opts: RepositoryOptions) -> dict[str, str]:
    config = parse_config(render_model(read_graph_io(mlp_model()), opts)["config.pbtxt"])
    return {k: v.string_value for k, v in config.parameters.items()}  # type: ignore[attr-defined]


def test_triton_build_writes_them_as_session_options() -> None:
    with pytest.warns(TritonConfigWarning, match="expands memory for static-shape graphs only"):
        params = _params(_ascend(buffer_optimize="off_optimize", static_memory_policy=2))
    assert params["session.ge.bufferOptimize"] == "off_optimize"
    assert params["session.ge.exec.staticMemoryPolicy"] == "2"


def test_triton_build_warns_on_concurrent_graphs_and_accepts_a_fitting_policy(
        recwarn: pytest.WarningsRecorder) -> None:
    with pytest.warns(TritonConfigWarning, match=r"m: ge.exec.staticMemoryPolicy=4 is not "
                      r"supported when several graphs execute concurrently, and this model "
                      r"may run 2 at once -- fix: use 0 or 3"):
        _params(_ascend(static_memory_policy=4, instances=2))
    assert _params(_ascend(static_memory_policy=3))["session.ge.exec.staticMemoryPolicy"] == "3"
    assert not [w for w in recwarn.list if issubclass(w.category, TritonConfigWarning)
                and "staticMemoryPolicy=3" in str(w.message)]


def test_triton_build_refuses_bad_values_and_the_cpu_target() -> None:
    with pytest.raises(TritonConfigError, match="--static-memory-policy 7 is not"):
        _params(_ascend(static_memory_policy=7))
    with pytest.raises(TritonConfigError, match="static_memory_policy is an npu_ge option"):
        RepositoryOptions("m", ascend=AscendOptions(static_memory_policy=0)).check()
    with pytest.raises(TritonConfigError, match="buffer_optimize is an npu_ge option"):
        RepositoryOptions("m", ascend=AscendOptions(buffer_optimize="l2_optimize")).check()


def test_the_session_option_and_the_named_option_cannot_both_be_given() -> None:
    with pytest.raises(TritonConfigError, match="'session.ge.bufferOptimize' is given twice"):
        _params(_ascend(buffer_optimize="l2_optimize",
                        session_options=(("ge.bufferOptimize", "off_optimize"),)))


def test_findings_table() -> None:
    codes = [f.code for f in memory_findings(MemoryOptions("l1_optimize", 1, dynamic=True,
                                                           concurrent_graphs=3))]
    assert codes == ["buffer-optimize-l1", "static-memory-1", "static-memory-dynamic-shape",
                     "static-memory-concurrent"]


def test_triton_build_cli_writes_and_warns(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "m.onnx"
    onnx.save(mlp_model(), str(src))
    rc = main(["triton", "build", str(src), "-o", str(tmp_path / "repo"), "--name", "m",
               "--target", "ascend", "--cann", "8.1.RC1", "--shape-gears", "1,1;4,4",
               "--buffer-optimize", "l1_optimize", "--static-memory-policy", "3"])
    assert rc == 0
    params = {k: v.string_value for k, v in parse_config(  # type: ignore[attr-defined]
        (tmp_path / "repo" / "m" / "config.pbtxt").read_text()).parameters.items()}
    assert params["session.ge.bufferOptimize"] == "l1_optimize"
    assert params["session.ge.exec.staticMemoryPolicy"] == "3"
    err = capsys.readouterr().err
    assert "warning: m: --buffer_optimize=l1_optimize has no effect" in err
    assert "warning: m: ge.exec.staticMemoryPolicy=3 expands memory for dynamic-shape graphs " \
           "only, but shape gears compile one static-shape graph per gear -- fix: use 2" in err
