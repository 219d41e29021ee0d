"""Numbers that cross into C++ or an allocation are checked against their type's range and
a memory ceiling first, and the error names the attribute or option, the value and the
limit (reliability: values out of range once reached pybind11's "Unable to cast",
``std::bad_alloc``, NumPy's "array is too big", ``MemoryError`` or a bare IndexError)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import opsdk
from opsdk.cli import main
from opsdk.errors import OpsdkError, SpecError
from opsdk.spec import Attr, Input, OpSpec, Output, TensorType


def _spec(*attrs: Attr) -> OpSpec:
    return OpSpec("Ranged", domain="com.example", inputs=[Input("x")], outputs=[Output("y")],
                  attrs=list(attrs), types={"T": ("float32",)})


@pytest.mark.parametrize("attr, message", [
    (Attr("a", "int", 99999999999999999999),
     r"Ranged: default of attribute 'a' \(int\) value 99999999999999999999 is outside the "
     r"int64 range \[-9223372036854775808, 9223372036854775807\] \(int attributes are int64"),
    (Attr("pads", "ints", [0, 2**63]),
     r"attribute 'pads'\[1\] \(int\) value 9223372036854775808 is outside the int64 range"),
    (Attr("alpha", "float", 1e39),
     r"attribute 'alpha' \(float\) value 1e\+39 is outside the float32 range \(\|value\| <= "
     r"3.4028234663852886e\+38\) \(ONNX stores float attributes as float32\)"),
    (Attr("eps", "float", 1e-310),
     r"attribute 'eps' \(float\) value 1e-310 is nonzero but smaller than the smallest "
     r"float32 \(1.401298464324817e-45\), so it rounds to 0"),
    (Attr("scales", "floats", [1.0, 10**400]),
     r"attribute 'scales'\[1\] \(float\) value 1000.* is beyond any double"),
])
def test_a_spec_default_out_of_its_types_range_is_refused(attr: Attr, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        _spec(attr)


@pytest.mark.parametrize("bad", [(-1e400, 1e400), (-1.7e308, 1.7e308), (1.0, -1.0), (0, "x")])
def test_a_spec_case_range_must_be_finite_and_ordered(bad: tuple[object, object]) -> None:
    from opsdk.spec import Case

    with pytest.raises(SpecError, match=r"Ranged: case 'wide': range of input 'x' is .*; "
                       r"expected finite \(lo, hi\) with lo <= hi"):
        OpSpec("Ranged", domain="com.example", inputs=[Input("x")], outputs=[Output("y")],
               types={"T": ("float32",)}, cases=[Case({"x": (2,)}, ranges={"x": bad},
                                                      name="wide")])


def test_a_value_at_call_time_is_checked_as_the_default_is() -> None:
    spec = _spec(Attr("a", "int", 1), Attr("b", "float", 0.5))
    assert spec.resolve_attrs({"a": 2**63 - 1, "b": float("inf")}) == {"a": 2**63 - 1,
                                                                      "b": float("inf")}
    with pytest.raises(SpecError, match=r"Ranged: attribute 'a' \(int\) value -9223372036854775809"
                       r" is outside the int64 range"):
        spec.resolve_attrs({"a": -(2**63) - 1})
    with pytest.raises(SpecError, match=r"attribute 'b' \(float\) value -1e\+300 is outside the "
                       r"float32 range"):
        spec.resolve_attrs({"b": -1e300})


def test_opsdk_new_refuses_an_int_beyond_int64(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """It wrote a spec that OpSpec accepted and `opsdk check` failed in pybind11."""
    assert main(["new", "MyBig", "--attrs", "a:int=99999999999999999999",
                 "--dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("opsdk new: error: MyBig: default of attribute 'a' (int) value "
                          "99999999999999999999 is outside the int64 range") and \
        err.count("\n") == 1
    assert not (tmp_path / "my_big").exists()


@pytest.fixture(scope="module")
def conv() -> opsdk.Operator:
    return opsdk.load("FusedConvBnRelu")


@pytest.mark.parametrize("pad, message", [
    (2**40, r"FusedConvBnRelu: output 'y' \(float32, shape \(1, 4, 2199023255557, "
            r"2199023255557\)\) needs \d+ bytes \(7.7e\+25\), more than the memory ceiling of "
            r"\d+ bytes .*; check the input shapes and the attributes pads=\[1099511627776, "),
    (2**62, r"FusedConvBnRelu: output 'y' \(float32, shape .*\) has dim 9223372036854775813, "
            r"beyond the int64 range a tensor dim must fit .*the attributes pads=\[46116"),
])
def test_an_output_beyond_memory_or_int64_is_refused_before_allocation(
        conv: opsdk.Operator, pad: int, message: str) -> None:
    """Shape inference passed, then a bare std::bad_alloc (2**62: "array is too big")."""
    x, w = np.ones((1, 3, 7, 7), np.float32), np.ones((4, 3, 3, 3), np.float32)
    for call in (lambda: conv(x, w, pads=[pad] * 4), lambda: conv.run([x, w], {"pads": [pad] * 4})):
        with pytest.raises(SpecError, match=message):
            call()
    assert conv(x, w, pads=[1] * 4).shape == (1, 4, 7, 7)  # the operator still works


def test_the_memory_ceiling_can_be_lowered(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _spec()
    spec.check_allocation([TensorType((1024,), "float32")], {})
    monkeypatch.setenv("OPSDK_MEMORY_CEILING", "4095")
    with pytest.raises(SpecError, match=r"Ranged: output 'y' \(float32, shape \(1024,\)\) needs "
                       r"4096 bytes .* memory ceiling of 4095 bytes .*OPSDK_MEMORY_CEILING"):
        spec.check_allocation([TensorType((1024,), "float32")], {})


@pytest.mark.parametrize("argv, message", [
    (["tune", "Gelu", "--sizes", "99999999999999"],
     r"opsdk tune: error: argument --sizes: 99999999999999 is above \d+ \(a number of elements\)"),
    (["triton", "bench", "repo", "--model", "m", "--requests", "-1"],
     r"opsdk triton bench: error: argument --requests: -1 is below 1; pass a whole number from "
     r"1 to 9223372036854775807"),
    (["triton", "bench", "repo", "--model", "m", "--concurrency", "1,99999999999999999999"],
     r"argument --concurrency: item 2 of '1,99999999999999999999': 99999999999999999999 is "
     r"above 9223372036854775807"),
    (["triton", "bench", "repo", "--model", "m", "--shape", "x=3,-2"],
     r"argument --shape/--input-shape: item 2 of '3,-2': -2 is below 0"),
    (["triton", "build", "m.onnx", "-o", "r", "--name", "n", "--max-batch-size", "4294967296"],
     r"argument --max-batch-size: 4294967296 is above 2147483647 \(a Triton max_batch_size\)"),
    (["triton", "build", "m.onnx", "-o", "r", "--name", "n", "--preferred-batch-size", "4,0"],
     r"argument --preferred-batch-size: item 2 of '4,0': 0 is below 1"),
    (["serve", "repo", "--http-port", "99999"],
     r"argument --http-port: 99999 is above 65535 \(a TCP port\)"),
    (["serve", "repo", "--startup-timeout", "nan"],
     r"argument --startup-timeout: expected a positive number of seconds, got 'nan'"),
    (["test", "Gelu", "--timeout", "1e300"],
     r"opsdk test: error: argument --timeout: 1e300 seconds is more than a wait can take"),
    (["test", "Gelu", "--seed", "-1"],
     r"argument --seed: -1 is below 0 \(a NumPy seed\); pass a whole number from 0 to 4294967295"),
    (["check", "Gelu", "--seed", "4294967296"], r"argument --seed: 4294967296 is above 4294967295"),
    (["bench", "Gelu", "--repeat", "0"], r"argument --repeat: 0 is below 1"),
    (["bench", "Gelu", "--settle", "-1"], r"argument --settle: expected 0 or more seconds"),
    (["export", "Gelu", "-o", "g.onnx", "--opset", "99999999999"],
     r"argument --opset: 99999999999 is above 2147483647 \(an opset\)"),
    (["atc", "m.onnx", "--soc-version", "Ascend310P3", "--static-memory-policy", "9"],
     r"argument --static-memory-policy: 9 is above 4 \(a GE static-memory policy\)"),
    (["precision", "m.onnx", "--top", "-3"], r"argument --top: -3 is below 1"),
])
def test_numeric_options_are_checked_by_their_type(argv: list[str], message: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err  # one line: no usage block
    assert err.startswith(f"opsdk {argv[0]}") and f"(see opsdk {argv[0]}" in err
    assert __import__("re").search(message, err), err


def test_tune_refuses_sizes_beyond_the_memory_ceiling(monkeypatch: pytest.MonkeyPatch) -> None:
    """`opsdk tune MyAbs --sizes 99999999999999` was "MemoryError: Unable to allocate 728. TiB"."""
    from opsdk.ascend.ascendc._tune import tune

    monkeypatch.setenv("OPSDK_MEMORY_CEILING", str(2**20))
    with pytest.raises(OpsdkError, match=r"tune Gelu: --sizes 262144 \(2 tensors of float32\) "
                       r"needs 2097152 bytes .* more than the memory ceiling of 1048576 bytes"):
        tune("Gelu", sizes=[1024, 262144], write=False)


def test_the_load_report_refuses_counts_before_starting_a_server() -> None:
    """`opsdk triton bench --requests -1` started tritonserver, then a bare IndexError."""
    from opsdk.triton import TritonConfigError, load_report

    for kw, name in (({"requests": -1}, "requests=-1"), ({"batch": 0}, "batch=0"),
                     ({"concurrency": (1, 0)}, "concurrency=0")):
        with pytest.raises(TritonConfigError, match=rf"load report: {name} must be a whole "
                           r"number >= 1"):
            load_report("no-such-repo", "m", **kw)  # type: ignore[arg-type]


def test_torch_leaves_out_what_it_cannot_register_and_registers_the_rest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A NaN default and a `prim` domain made `import opsdk.torch` raise, so no operator was
    usable; `opsdk new` refuses both (and a denormal default) up front."""
    roots = tmp_path / "ops"
    assert main(["new", "MyPrim", "--domain", "prim", "--dir", str(roots)]) == 1
    assert "MyPrim: domain 'prim' is torch's reserved namespace 'prim'; pick your own domain" \
        in capsys.readouterr().err
    assert main(["new", "MyDen", "--attrs", "a:float=1e-310", "--dir", str(roots)]) == 1
    assert "smaller than the smallest float32" in capsys.readouterr().err
    assert main(["new", "MyNan", "--attrs", "a:float=nan", "--dir", str(roots)]) == 1
    assert "neither the scaffold nor a torch schema can spell" in capsys.readouterr().err
    assert main(["new", "MyPrim", "--dir", str(roots)]) == 0
    assert main(["new", "MyNan", "--attrs", "a:float=0.5", "--dir", str(roots)]) == 0
    prim = roots / "my_prim" / "spec.py"
    prim.write_text(prim.read_text().replace('domain="com.example"', 'domain="prim"'))
    nan = roots / "my_nan" / "spec.py"
    nan.write_text(nan.read_text().replace("0.5", "float('nan')"))
    code = ("import warnings\nwarnings.simplefilter('always')\n"
            "with warnings.catch_warnings(record=True) as w:\n    import opsdk.torch as t\n"
            "print(len(w), w[0].category.__name__)\nprint(w[0].message)\n"
            "print(sorted(r.spec.name for r in t.registered()))\n"
            "try:\n    t.load('MyNan')\nexcept Exception as e:\n    print(type(e).__name__, e)\n")
    env = dict(os.environ, OPSDK_OPERATORS_PATH=str(roots))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=600, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    count, message, names, error = p.stdout.splitlines()[:4]
    assert count == "1 OperatorLeftOut"
    assert "left out 2 operator(s) torch cannot register, and registered the others" in message
    assert "MyPrim: domain 'prim' is torch's reserved namespace" in message
    assert "MyNan: the default nan of attribute 'a' is not finite" in message
    assert "'Gelu'" in names and "'MyNan'" not in names and "'MyPrim'" not in names
    assert error.startswith("SpecError MyNan: the default nan of attribute 'a' is not finite")


def test_thread_counts_and_pool_limits_are_checked_before_cpp() -> None:
    """pybind11's "incompatible function arguments" named neither the operator nor the fix."""
    from opsdk.runtime.cpu import set_output_pool_limit

    gelu = opsdk.load("Gelu")
    with pytest.raises(SpecError, match=r"Gelu: set_num_threads\(1099511627776\): the thread "
                       r"count is an int32 in C\+\+ \(at most 2147483647\)"):
        gelu.set_num_threads(2**40)
    with pytest.raises(ValueError, match=r"set_output_pool_limit: nbytes must be 0 to 2\*\*63-1 "
                       r"\(a C\+\+ size\), got 1180591620717411303424"):
        set_output_pool_limit(2**70)


def test_the_graph_executor_refuses_a_custom_nodes_output_beyond_memory() -> None:
    """opsdk.onnx.Session sizes its custom nodes' output buffers from the spec too."""
    import onnx
    import onnx.helper as oh

    from opsdk.onnx import Session

    node = oh.make_node("FusedConvBnRelu", ["x", "w"], ["y"], domain="com.opsdk",
                        pads=[2**40] * 4)
    graph = oh.make_graph(
        [node], "g", [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 7, 7]),
                      oh.make_tensor_value_info("w", onnx.TensorProto.FLOAT, [4, 3, 3, 3])],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17),
                                                oh.make_opsetid("com.opsdk", 1)])
    x, w = np.ones((1, 3, 7, 7), np.float32), np.ones((4, 3, 3, 3), np.float32)
    with pytest.raises(SpecError, match=r"FusedConvBnRelu: output 'y' .* more than the memory "
                       r"ceiling .* pads=\[1099511627776"):
        Session(model).run(None, {"x": x, "w": w})
