"""The validator's own mutation score: mutants of shipped operators and of an RMSNorm-style
operator scaffolded by ``opsdk new`` must each fail ``opsdk test`` or ``opsdk check``,
naming what is wrong; the unmutated operators must pass.

Each operator is copied once into a temporary folder whose kernel.cpp and spec.py carry
run-time switches (tests/_helpers/mutants.py), so it is built once for all its mutants.
The mutants of one operator run in one process (``python -m tests._helpers.mutants``); the
``strides`` mutant, which changes what the kernel declares when its library loads, in a
second one. docs/validation.md records the counts and the run time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._helpers.mutants import mutant_copy
from tests._helpers.rms_norm_op import scaffold_rms_norm

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
M = "OPSDK_MUTANT"


def _attr(name: str, value: str) -> dict[str, str]:
    return {"OPSDK_MUTANT_ATTR": name, "OPSDK_MUTANT_VALUE": value}


#: operator -> [(mutant, class, environment, what its failure must name)]
MUTANTS: dict[str, list[tuple[str, str, dict[str, str], str]]] = {
    "thresholded_relu": [
        ("tail", "off-by-one at the tail", {M: "tail"}, "y ("),
        ("inplace", "input mutated in place", {M: "inplace"}, "modified input 'x' in place"),
        ("strides", "strides ignored", {M: "strides"}, "non-contiguous"),
        ("alpha", "attribute ignored", _attr("alpha", "1.0"), "alpha"),
        ("backward", "backward missing a term",
         {"OPSDK_MUTANT_BACKWARD": "trelu_no_mask"}, "d(y)/d(x) wrong"),
    ],
    "gelu": [
        ("nan0", "NaN mapped to 0", {M: "nan0"}, "NaN"),
        ("tail", "off-by-one at the tail", {M: "tail"}, "Y ("),
        ("inplace", "input mutated in place", {M: "inplace"}, "modified input 'X' in place"),
        ("strides", "strides ignored", {M: "strides"}, "non-contiguous"),
        ("approximate", "attribute ignored", _attr("approximate", "none"), "tanh"),
        ("backward", "backward missing a term",
         {"OPSDK_MUTANT_BACKWARD": "gelu_no_pdf"}, "d(Y)/d(X) wrong"),
    ],
    "softmax": [
        ("nan0", "NaN mapped to 0", {M: "nan0"}, "NaN"),
        ("tail", "off-by-one at the tail", {M: "tail"}, "output ("),
        ("inplace", "input mutated in place", {M: "inplace"}, "modified input 'input'"),
        ("strides", "strides ignored", {M: "strides"}, "non-contiguous"),
        ("axis", "attribute ignored", _attr("axis", "-1"), "axis"),
        ("wide", "output dtype widened", {M: "wide"}, "spec inference says float32"),
        ("backward", "backward missing a term",
         {"OPSDK_MUTANT_BACKWARD": "softmax_no_sum"}, "d(output)/d(input) wrong"),
    ],
    "layer_normalization": [
        ("nan0", "NaN mapped to 0", {M: "nan0"}, "NaN"),
        ("tail", "off-by-one at the tail", {M: "tail"}, "Y ("),
        ("inplace", "input mutated in place", {M: "inplace"}, "modified input 'X'"),
        ("inplace1", "input mutated in place", {M: "inplace1"}, "modified input 'Scale'"),
        ("strides", "strides ignored", {M: "strides"}, "non-contiguous"),
        ("epsilon", "attribute ignored", _attr("epsilon", "1e-5"), "epsilon"),
        ("wide", "output dtype widened", {M: "wide"}, "spec inference says float32"),
        ("backward", "backward missing a term",
         {"OPSDK_MUTANT_BACKWARD": "layer_norm_no_mean"}, "/d(X) wrong"),
    ],
    "grid_sample": [
        ("nan0", "NaN mapped to 0", {M: "nan0"}, "NaN"),
        ("tail", "off-by-one at the tail", {M: "tail"}, "y ("),
        ("inplace", "input mutated in place", {M: "inplace"}, "modified input 'x'"),
        ("inplace1", "input mutated in place", {M: "inplace1"}, "modified input 'grid'"),
        ("strides", "strides ignored", {M: "strides"}, "non-contiguous"),
        ("mode", "attribute ignored", _attr("mode", "linear"), "mode"),
        ("padding_mode", "attribute ignored", _attr("padding_mode", "zeros"), "padding_mode"),
        ("align_corners", "attribute ignored", _attr("align_corners", "0"), "align_corners"),
        ("wide", "output dtype widened", {M: "wide"}, "spec inference says float"),
    ],
    "fused_conv_bn_relu": [
        ("nan0", "NaN mapped to 0", {M: "nan0"}, "NaN"),
        ("tail", "off-by-one at the tail", {M: "tail"}, "y ("),
        ("inplace", "input mutated in place", {M: "inplace"}, "modified input 'x'"),
        ("inplace1", "input mutated in place", {M: "inplace1"}, "modified input 'w'"),
        ("strides", "strides ignored", {M: "strides"}, "non-contiguous"),
        ("group", "attribute ignored", _attr("group", "1"), "group"),
        ("wide", "output dtype widened", {M: "wide"}, "spec inference says float"),
    ],
    "rms_norm_test": [
        ("nan0", "NaN mapped to 0", {M: "nan0"}, "NaN"),
        ("tail", "off-by-one at the tail", {M: "tail"}, "y ("),
        ("inplace", "input mutated in place", {M: "inplace"}, "modified input 'x'"),
        ("inplace1", "input mutated in place", {M: "inplace1"}, "modified input 'gamma'"),
        ("strides", "strides ignored", {M: "strides"}, "non-contiguous"),
        ("epsilon", "attribute ignored", _attr("epsilon", "1e-6"), "epsilon"),
        ("wide", "output dtype widened", {M: "wide"}, "spec inference says float32"),
        ("drop_mean", "backward missing a term", {"RMS_BACKWARD": "drop_mean"},
         "d(y, rstd)/d(x) wrong"),
        ("drop_rstd", "backward missing a term", {"RMS_BACKWARD": "drop_rstd"},
         "d(y, rstd)/d(x) wrong"),
        ("trunc16", "float16/bfloat16 rounding wrong", {"RMS_MUTANT": "trunc16"},
         "truncated instead of rounded"),
        ("twice16", "float16/bfloat16 rounding wrong", {"RMS_MUTANT": "twice16"},
         "rounded twice"),
        ("trunc_bf16", "float16/bfloat16 rounding wrong", {"RMS_MUTANT": "trunc_bf16"},
         "truncated instead of rounded"),
        ("twice_bf16", "float16/bfloat16 rounding wrong", {"RMS_MUTANT": "twice_bf16"},
         "rounded twice"),
    ],
}


#: mutants the validator does not catch, and why: each is still run, and must still pass
#: (when it starts failing, the validator got better: move it to the caught ones)
SURVIVORS = {
    ("thresholded_relu", "alpha"): "no case of spec.py sets alpha, so every case runs at the "
    "default 1.0; opsdk test and opsdk check print a note saying so",
}


def _run(folder: Path, mutants: list[dict[str, str]]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    for k in [k for k in env if k.startswith(("OPSDK_MUTANT", "RMS_"))]:
        del env[k]
    env["OPSDK_DEBUG"] = "1"  # guard regions after every output, as opsdk test's worker
    if any(m.get(M) == "strides" for m in mutants):
        env[M] = "strides"  # read when the library loads
    proc = subprocess.run(
        [sys.executable, "-m", "tests._helpers.mutants", str(folder), json.dumps(mutants)],
        capture_output=True, text=True, timeout=1800, cwd=ROOT, env=env)
    line = [x for x in proc.stdout.splitlines() if x.startswith("MUTANT-RESULTS ")]
    assert line, f"{folder.name}: the mutant run ended with {proc.returncode}:\n{proc.stderr[-3000:]}"
    return dict(json.loads(line[-1].removeprefix("MUTANT-RESULTS ")))


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every operator's unmutated run and mutants' verdicts (one build per operator)."""
    root = tmp_path_factory.mktemp("mutants")
    rms = scaffold_rms_norm(root / "scaffold")
    out: dict[str, dict[str, Any]] = {}
    for op, mutants in MUTANTS.items():
        src = rms if op == "rms_norm_test" else ROOT / "operators" / op
        folder = mutant_copy(src, root / op / src.name)
        plain = [{"name": "none"}] + [{"name": n, **env} for n, _, env, _ in mutants
                                      if env.get(M) != "strides"]
        strided = [{"name": n, **env} for n, _, env, _ in mutants if env.get(M) == "strides"]
        out[op] = _run(folder, plain)
        if strided:
            out[op].update(_run(folder, strided))
    return out


def test_there_are_enough_mutants_over_enough_operators() -> None:
    assert sum(len(v) for v in MUTANTS.values()) >= 50
    assert len(MUTANTS) >= 5
    classes = {c for v in MUTANTS.values() for _, c, _, _ in v}
    assert len(classes) == 8, classes


@pytest.mark.slow
@pytest.mark.parametrize("op", list(MUTANTS))
def test_the_unmutated_operator_passes(op: str, results: dict[str, dict[str, Any]]) -> None:
    assert results[op]["none"] is None, results[op]["none"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("op", "name", "what"),
    [(op, n, w) for op, v in MUTANTS.items() for n, _, _, w in v],
)
def test_the_mutant_fails_naming_what_is_wrong(
    op: str, name: str, what: str, results: dict[str, dict[str, Any]]
) -> None:
    failure = results[op][name]
    if (op, name) in SURVIVORS:
        assert failure is None, f"{op}: mutant {name} is caught now: {failure[:2000]}"
        return
    assert failure is not None, f"{op}: mutant {name} passed opsdk test and opsdk check"
    assert what in failure, failure[:3000]


def test_the_mutation_score_is_at_least_95_percent() -> None:
    total = sum(len(v) for v in MUTANTS.values())
    assert (total - len(SURVIVORS)) / total >= 0.95
    caught = {c for op, v in MUTANTS.items() for n, c, _, _ in v if (op, n) not in SURVIVORS}
    assert caught == {c for v in MUTANTS.values() for _, c, _, _ in v}


def _opsdk(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OPSDK_MUTANT", "RMS_"))}
    return subprocess.run([sys.executable, "-m", "opsdk", *args], capture_output=True,
                          text=True, timeout=1800, cwd=cwd, env={**full, **env})


@pytest.mark.slow
def test_scaffolded_rms_norm_is_held_to_its_gradient_and_to_nan(tmp_path: Path) -> None:
    """The RMSNorm-style operator of a new user: `opsdk check` fails a backward without the
    mean term, `opsdk test` fails a kernel mapping NaN to 0 although spec.py's cases hold
    no NaN, and the operator as written passes both."""
    folder = scaffold_rms_norm(tmp_path)
    assert "nan" not in (folder / "spec.py").read_text().lower().replace("nan_", "")
    good = _opsdk(tmp_path, "check", str(folder))
    assert good.returncode == 0, good.stdout + good.stderr
    assert "RmsNormTest: gradcheck passed (backward gradient, float64" in good.stdout
    assert "d(y, rstd)/d(x), 6x5 entries" in good.stdout
    bad = _opsdk(tmp_path, "check", str(folder), RMS_BACKWARD="drop_mean")
    assert bad.returncode == 1
    assert "gradcheck FAILED" in bad.stdout and "d(y, rstd)/d(x) wrong" in bad.stdout
    passed = _opsdk(tmp_path, "test", str(folder), "-q")
    assert passed.returncode == 0, passed.stdout[-3000:]
    nan = _opsdk(tmp_path, "test", str(folder), "-q", "-x", RMS_MUTANT="nan0")
    assert nan.returncode != 0
    assert "-edge" in nan.stdout and "expected nan, actual 0.0" in nan.stdout, nan.stdout[-3000:]
