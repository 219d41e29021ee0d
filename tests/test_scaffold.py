"""`opsdk new`: name checks, no overwrite, and a fresh operator builds and passes its tests."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from opsdk.cli import main
from opsdk.errors import ScaffoldError
from opsdk.registry import load_spec
from opsdk.scaffold import IoDecl, new_operator, parse_attrs, parse_io


def test_parse_command_line_declarations():
    assert parse_io(["x:float16,float32", "b:float32?"]) == [
        IoDecl("x", ("float16", "float32")), IoDecl("b", ("float32",), True)
    ]
    attrs = parse_attrs(["t:float=0.5", "axes:ints=0,1", "mode:string", "keep:bool=true"])
    assert [(a.name, a.type, a.default) for a in attrs[:2]] == [("t", "float", 0.5), ("axes", "ints", [0, 1])]
    assert attrs[2].required and attrs[3].default is True
    with pytest.raises(ScaffoldError, match=r"attribute 'n': default 'x' is not a valid int"):
        parse_attrs(["n:int=x"])
    with pytest.raises(ScaffoldError, match=r"'x': unknown dtype 'float8'"):
        parse_io(["x:float8"])


def test_new_renders_a_consistent_operator(tmp_path):
    path = new_operator(
        "MyOp", inputs=parse_io(["x:float16,float32", "w:float32", "b:float16,float32?"]),
        outputs=parse_io(["y", "mask:bool"]), attrs=parse_attrs(["threshold:float=0.5", "axes:ints=1", "mode:string"]),
        domain="com.example", root=tmp_path,
    )
    assert path == tmp_path / "my_op"
    assert sorted(p.name for p in path.iterdir()) == ["README.md", "kernel.cpp", "reference.py", "spec.py", "test_my_op.py"]
    spec = load_spec(path)
    assert spec.op_type == ("com.example", "MyOp", 1)
    assert [(i.name, i.type, i.optional) for i in spec.inputs] == [("x", "T", False), ("w", "T1", False), ("b", "T", True)]
    assert spec.attr_map["mode"].required and spec.attr_map["axes"].default == [1]
    kernel = (path / "kernel.cpp").read_text()
    assert kernel.count('REGISTER_CUSTOM_OP("MyOp")') == 1  # one line, a column per dtype
    assert ".Kernels<opsdk::Types<opsdk::half, float>, opsdk::Types<float, float>>(" in kernel
    assert "copy_or_zero<T0, bool>" in kernel and '"b"' not in kernel  # names from spec.py


@pytest.mark.parametrize("name", ["", "myOp", "My Op", "../Evil", "class", "My-Op", "NULL"])
def test_invalid_names_are_refused_and_nothing_is_written(tmp_path, name, capsys):
    assert main(["new", name, "--dir", str(tmp_path)]) == 1
    assert "invalid op name" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_existing_folder_is_never_overwritten(tmp_path, capsys):
    assert main(["new", "MyOp", "--dir", str(tmp_path)]) == 0
    spec = tmp_path / "my_op" / "spec.py"
    spec.write_text("# my edits\n")
    assert main(["new", "MyOp", "--dir", str(tmp_path)]) == 1
    assert "already exists; opsdk never overwrites" in capsys.readouterr().err
    assert spec.read_text() == "# my edits\n"


@pytest.mark.slow
def test_fresh_operator_builds_and_passes_its_generated_tests(tmp_path):
    """The template is a real operator: unedited, it builds and its own tests pass."""
    assert main([
        "new", "FreshOp", "--inputs", "x:float16,float32", "b:float16,float32?", "--outputs", "y",
        "--attrs", "threshold:float=0.5", "axes:ints=0", "--dir", str(tmp_path),
    ]) == 0
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "fresh_op")],
        capture_output=True, text=True, cwd=tmp_path, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = proc.stdout.strip().splitlines()[-1]
    assert re.match(r"^\d+ passed", summary) and "failed" not in summary, summary


def test_backward_flag_writes_the_template_kernels_derivative(tmp_path, capsys):
    """`--backward`: spec.py registers the derivative of what the template kernel does (x
    copied to the outputs of its type, summed back over broadcast axes; none for the rest)."""
    assert main(["new", "GradOp", "--inputs", "x", "w:float32", "--outputs", "y", "mask:bool",
                 "--dir", str(tmp_path), "--backward"]) == 0
    spec = load_spec(tmp_path / "grad_op")
    assert spec.backward is not None
    source = (tmp_path / "grad_op" / "spec.py").read_text()
    assert "grad = grads[0]\n" in source and "[None] * 1" in source
    assert main(["new", "PlainOp", "--dir", str(tmp_path)]) == 0
    assert load_spec(tmp_path / "plain_op").backward is None
    capsys.readouterr()
    assert main(["new", "BothOp", "--dir", str(tmp_path), "--backward",
                 "--decomposition", "Mul(x, x)"]) == 1
    assert "the decomposition already gives opsdk.torch its gradients" in capsys.readouterr().err
    assert not (tmp_path / "both_op").exists()


def test_generated_python_is_lint_clean(tmp_path):
    new_operator("LintOp", inputs=parse_io(["x"]), attrs=parse_attrs(["axes:ints=0,1"]), root=tmp_path)
    new_operator("LintGradOp", inputs=parse_io(["x", "b?"]), root=tmp_path, backward=True)
    ruff = Path(sys.executable).with_name("ruff")
    if not ruff.exists():
        pytest.skip("ruff is not installed in this environment (pip install -e .[dev])")
    proc = subprocess.run([str(ruff), "check", "--no-cache", "--isolated", "--line-length", "100", "--select", "E,F,W,B", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


@pytest.mark.slow
def test_new_like_onnx_gridsample_prefills_from_the_schema(tmp_path):
    """`--like onnx:GridSample` takes inputs, attributes and dtypes from ONNX's schema."""
    assert main(["new", "MyGridSample", "--like", "onnx:GridSample", "--dir", str(tmp_path)]) == 0
    spec = load_spec(tmp_path / "my_grid_sample")
    assert [i.name for i in spec.inputs] == ["x", "grid"]  # snake_case identifiers
    assert {"mode", "padding_mode", "align_corners"} <= set(spec.attr_map)
    assert spec.onnx_op == "GridSample"
    assert "float32" in spec.allowed_dtypes(spec.inputs[0].type)
