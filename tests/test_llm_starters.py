"""`opsdk new NAME --like llm:PATTERN`: each starter, scaffolded unedited into one project,
passes `opsdk test` and `opsdk check` (real builds, real processes), and its ONNX fallback
runs in ONNX Runtime with the reference's results."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from opsdk._starters import ONNX_OPERATORS, STARTERS
from opsdk.cli import main
from opsdk.registry import load_spec

NAMES = {
    "llm:rms_norm": "LlmRmsNorm",
    "llm:add_rms_norm": "LlmAddRmsNorm",
    "llm:swiglu": "LlmSwiglu",
    "llm:rotary_embedding": "LlmRope",
    "llm:dequant_swiglu_quant": "LlmDequantSwigluQuant",
    "onnx:RMSNormalization": "OnnxRmsNormalization",
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One project holding every starter, scaffolded through the CLI."""
    root = tmp_path_factory.mktemp("llm")
    for starter, name in NAMES.items():
        assert main(["new", name, "--like", starter, "--dir",
                     str(root / "operators"), "--domain", "com.llm"]) == 0
    return root


def _opsdk(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "opsdk", *args], cwd=project,
                          capture_output=True, text=True, timeout=1200)


def _reference(folder: Path) -> Any:
    """The operator's reference.py, as opsdk loaded it beside spec.py."""
    return sys.modules[load_spec(folder).reference.__module__]


def test_every_starter_is_listed():
    assert {k for k in NAMES if k.startswith("llm:")} == {f"llm:{k}" for k in STARTERS}
    assert {k for k in NAMES if k.startswith("onnx:")} == {f"onnx:{k}" for k in ONNX_OPERATORS}


def test_starters_write_a_complete_operator(project):
    for starter, name in NAMES.items():
        folder = project / "operators" / _snake(name)
        spec = load_spec(folder)
        assert spec.op_type == ("com.llm", name, 1)
        assert spec.function is not None, starter
        if starter != "llm:dequant_swiglu_quant":  # int32 in, int8 out
            assert set(spec.types["T"]) == {"bfloat16", "float16", "float32"}
        files = {p.name for p in folder.iterdir()}
        assert {"spec.py", "kernel.cpp", "reference.py", "README.md"} <= files
        assert ("shape.h" in files) == (not spec.elementwise), starter  # non-elementwise: shape.h
        assert f'REGISTER_CUSTOM_OP("{name}")' in (folder / "kernel.cpp").read_text()
        kernel = (folder / "kernel.cpp").read_text()
        assert "opsdk/vec.h" in kernel or "opsdk/rms.h" in kernel, starter
    assert load_spec(project / "operators" / "llm_rms_norm").backward is not None
    assert load_spec(project / "operators" / "llm_swiglu").backward is not None
    assert load_spec(project / "operators" / "llm_rope").backward is not None


def _snake(name: str) -> str:
    from opsdk.naming import snake_case

    return snake_case(name)


@pytest.mark.slow
@pytest.mark.parametrize("starter", sorted(NAMES))
def test_starter_passes_opsdk_test_and_check_unedited(project, starter):
    name = NAMES[starter]
    tested = _opsdk(project, "test", name)
    assert tested.returncode == 0, tested.stdout[-3000:] + tested.stderr[-2000:]
    assert " passed" in tested.stdout and "failed" not in tested.stdout.splitlines()[-1]
    checked = _opsdk(project, "check", name)
    out = checked.stdout + checked.stderr
    assert checked.returncode == 0, out[-3000:]
    assert "opcheck passed" in out, out[-3000:]
    if starter == "llm:dequant_swiglu_quant":  # no float32 sample: its backward is checked below
        assert "gradcheck not run" in out, out[-3000:]
    else:
        assert "gradcheck passed" in out, out[-3000:]


def _fallback_cases() -> list[tuple[str, dict[str, tuple[int, ...]], dict[str, Any]]]:
    return [
        ("llm:rms_norm", {"x": (3, 5, 64), "gamma": (64,)}, {"epsilon": 1e-5}),
        ("llm:add_rms_norm", {"x1": (4, 48), "x2": (4, 48), "gamma": (48,)}, {}),
        ("llm:swiglu", {"gate": (2, 7, 40), "up": (2, 7, 40)}, {}),
        ("llm:rotary_embedding", {"x": (2, 3, 5, 24), "cos": (2, 1, 5, 16), "sin": (2, 1, 5, 16)},
         {"interleaved": 0}),
        ("llm:rotary_embedding", {"x": (2, 3, 5, 24), "cos": (1, 1, 5, 16), "sin": (1, 1, 5, 16)},
         {"interleaved": 1}),
        ("llm:dequant_swiglu_quant", {"x": (6, 64), "weight_scale": (64,), "activation_scale": (6,)},
         {}),
        ("onnx:RMSNormalization", {"x": (2, 3, 4, 5), "scale": (4, 5)}, {"axis": 2}),
    ]


@pytest.mark.parametrize("opset", [15, 21, 23])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("starter,shapes,attrs", _fallback_cases())
def test_fallback_runs_in_onnxruntime(project, starter, shapes, attrs, dtype, opset):
    """The model opsdk export writes with the fallback function gives ONNX Runtime the
    reference's results, at an opset before and after ReduceMean took its axes as an input."""
    import onnxruntime as ort

    from opsdk.dtypes import to_numpy
    from opsdk.onnx import export_model

    folder = project / "operators" / _snake(NAMES[starter])
    spec = load_spec(folder)
    if opset < 23 and spec.onnx_op == "RMSNormalization":
        pytest.skip("ONNX RMSNormalization needs opset 23")
    if dtype != "float32" and not spec.types:
        pytest.skip(f"{spec.name} has fixed dtypes")
    dtypes = {i.name: dtype if i.type in spec.types else i.type for i in spec.inputs}
    model = export_model(spec, shapes=shapes, dtype=dtypes, attrs=attrs, opset=opset,
                         with_function=True)
    rng = np.random.default_rng(1)
    feeds = {k: (rng.integers(-5000, 5000, s) if dtypes[k] == "int32"
                 else rng.uniform(0.001, 1, s)).astype(to_numpy(dtypes[k]))
             for k, s in shapes.items()}
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = sess.run(None, feeds)
    want = _reference(folder).reference(*(feeds[i.name].astype(np.float64) for i in spec.inputs),
                                        **attrs)
    want = [want] if isinstance(want, np.ndarray) else list(want)
    tol = 1e-5 if dtype == "float32" else 2e-3
    assert len(got) == len(want) == len(spec.outputs)
    for g, w, out in zip(got, want, spec.outputs):
        assert g.shape == w.shape, out.name
        if out.type == "int8":  # round(act / scale): one step apart on a last-bit difference
            assert np.abs(g.astype(np.int64) - w).max() <= 1, out.name
            continue
        np.testing.assert_allclose(g.astype(np.float64), w, rtol=tol, atol=tol, err_msg=out.name)


def test_dequant_swiglu_quant_backward_is_autograds(project):
    """The starter's backward (the scales' gradients through the float output) equals
    torch autograd through the same math written in torch."""
    import torch

    spec = load_spec(project / "operators" / "llm_dequant_swiglu_quant")
    rng = np.random.default_rng(3)
    x = torch.tensor(rng.integers(-3000, 3000, (5, 32)), dtype=torch.int32)
    ws = torch.tensor(rng.uniform(1e-3, 2e-3, 32), dtype=torch.float64, requires_grad=True)
    ts = torch.tensor(rng.uniform(0.5, 2.0, 5), dtype=torch.float64, requires_grad=True)
    v = x.double() * ws * ts[:, None]
    act = torch.nn.functional.silu(v[:, :16]) * v[:, 16:]
    scale = act.abs().amax(-1) / 127
    dscale = torch.tensor(rng.uniform(-1, 1, 5), dtype=torch.float64)
    want = torch.autograd.grad(scale, (ws, ts), dscale)
    got = spec.backward([x, ws.detach(), ts.detach()], [], [dscale, None])
    assert got[0] is None
    torch.testing.assert_close(got[1], want[0])
    torch.testing.assert_close(got[2], want[1])


def test_starter_refusals(tmp_path, capsys):
    assert main(["new", "Bad", "--like", "llm:layer_norm", "--dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "no such starter" in err and "llm:rms_norm" in err
    assert main(["new", "Mine", "--like", "llm:swiglu", "--inputs", "a", "--dir",
                 str(tmp_path)]) == 1
    assert "drop --inputs" in capsys.readouterr().err
    assert main(["new", "Mine", "--like", "llm:swiglu", "--dir", str(tmp_path)]) == 0
    (tmp_path / "mine" / "spec.py").write_text("# edited\n")
    assert main(["new", "Mine", "--like", "llm:rms_norm", "--dir", str(tmp_path)]) == 1
    assert "already exists; opsdk never overwrites" in capsys.readouterr().err
    assert (tmp_path / "mine" / "spec.py").read_text() == "# edited\n"
    assert main(["new", "lower", "--like", "llm:swiglu", "--dir", str(tmp_path)]) == 1
    assert "op name must be UpperCamelCase" in capsys.readouterr().err


@pytest.mark.parametrize("starter,shapes,attrs", [
    ("llm:rms_norm", {"x": (4, 6, 64), "gamma": (64,)}, {"epsilon": 1e-6}),
    ("llm:add_rms_norm", {"x1": (4, 64), "x2": (4, 64), "gamma": (64,)}, {"epsilon": 1e-6}),
    ("onnx:RMSNormalization", {"x": (3, 4, 40), "scale": (40,)},
     {"axis": -1, "epsilon": 1e-5, "stash_type": 1}),
    ("llm:swiglu", {"gate": (4, 96), "up": (4, 96)}, {}),
    ("llm:rotary_embedding", {"x": (2, 3, 5, 24), "cos": (1, 1, 5, 16), "sin": (1, 1, 5, 16)},
     {"interleaved": 1}),
])
def test_onnxruntime_equivalent_for_bench(project, starter, shapes, attrs):
    """`opsdk bench`'s ONNX Runtime column: the starters register ONNX Runtime's
    SimplifiedLayerNormalization / SkipSimplifiedLayerNormalization (com.microsoft), the
    opset-23 operator gets its RMSNormalization node at opset 23, and SwiGLU and rotary
    embedding their ONNX fallback (the decomposition); each runs in ONNX Runtime with the
    reference's results."""
    from opsdk.bench import OrtRunner, ort_equivalent

    folder = project / "operators" / _snake(NAMES[starter])
    spec = load_spec(folder)
    rng = np.random.default_rng(2)
    inputs = [rng.standard_normal(shapes[i.name]).astype(np.float32) for i in spec.inputs]
    want = _reference(folder).reference(*inputs, **attrs)
    want = [want] if isinstance(want, np.ndarray) else list(want)
    outputs = [np.empty(w.shape, np.float32) for w in want]
    graph = ort_equivalent(spec, inputs, attrs, outputs)
    assert graph is not None
    if starter in ("llm:swiglu", "llm:rotary_embedding"):
        assert graph.note == "the operator's ONNX fallback (decomposition)"
        assert {f.name for f in graph.model.functions} == {spec.name}
    OrtRunner(graph, inputs, outputs, threads=1)()
    for got, w in zip(outputs, want):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-5)


def test_single_node_refuses_miswired_outputs(project):
    from opsdk.bench import single_node
    from opsdk.errors import OpsdkError

    spec = load_spec(project / "operators" / "llm_add_rms_norm")
    x = np.zeros((2, 8), np.float32)
    with pytest.raises(OpsdkError, match=r"node_outputs \['y', '', 'rstd'\] must name each "
                       r"output of the spec \(y, rstd, x\) once"):
        single_node("SkipSimplifiedLayerNormalization", spec, [x, x, x[0]], {}, [x, x, x],
                    domain="com.microsoft", node_outputs=["y", "", "rstd"])


def test_starters_python_is_lint_clean(project):
    ruff = Path(sys.executable).with_name("ruff")
    if not ruff.exists():
        pytest.skip("ruff is not installed in this environment (pip install -e .[dev])")
    proc = subprocess.run([str(ruff), "check", "--no-cache", "--isolated", "--line-length", "100",
                           "--select", "E,F,W,B", str(project / "operators")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout
