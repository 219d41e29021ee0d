"""The shipped AI Core kernels on Ascend310P3 (__CCE_AICORE__ 200, no DataCopyPad), on opsdk's
Ascend C model. Generated (ThresholdedRelu, Gelu): whole 32-byte blocks only, an unaligned tail
by a window moved back to the range's end, a tensor shorter than one block through the scalar
unit. Hand-written row kernels (Softmax, LayerNormalization): a tile's part block by the scalar
unit, rows shorter than one block and the per-row statistics through a staging buffer. Each
case is compared with the operator's NumPy reference under its precision standard, race-free (a
finding of the race checker, or two blocks writing the same bytes, fails the run)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from opsdk.ascend.aicore_apis import missing_apis
from opsdk.ascend.ascendc import generate
from opsdk.ascend.ascendc._kernels import aicore_kernel
from opsdk.ascend.ascendc._tiling import evaluate
from opsdk.ascend.ascendc.model import AscendcModel
from opsdk.ascend.socs import core_resources
from opsdk.errors import DeviceUnavailable, KernelError
from opsdk.registry import load_spec
from opsdk.testing import compare, reference_outputs, standard_for

OPS = Path(__file__).parents[2] / "operators"
SOC = "Ascend310P3"

#: elements: tiny (below one float32/float16 block), one block, aligned, unaligned with a
#: short last range, multi-core unaligned, and longer than one core's tile.
LENGTHS = [1, 5, 7, 8, 16, 100, 131, 4096, 4099, 65_541, 1_048_579]
ATTRS: dict[str, dict[str, object]] = {"thresholded_relu": {"alpha": 0.5}, "gelu": {}}


@pytest.fixture(scope="module", params=["thresholded_relu", "gelu"])
def model(request: pytest.FixtureRequest) -> AscendcModel:
    return AscendcModel(OPS / request.param, soc=SOC, seed=3)


def _check(model: AscendcModel, x: np.ndarray, attrs: dict[str, object],
           more: tuple[np.ndarray, ...] = ()) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # blocks writing the same bytes is a warning: fail it
        outs = model.run([x, *more], attrs)
    spec = model.spec
    wants = reference_outputs(spec, [x, *more], spec.resolve_attrs(dict(attrs)))
    assert len(outs) == len(wants) == len(spec.outputs)
    for o, y, want in zip(spec.outputs, outs, wants, strict=True):
        dtype = str(y.dtype)
        result = compare(y, want.astype(y.dtype), standard_for(dtype, spec.standard))
        assert result.passed, f"{spec.name} {o.name} {x.shape} {dtype} on {SOC}: {result.reason}"


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_generated_kernel_on_310p(model: AscendcModel, n: int, dtype: type) -> None:
    x: np.ndarray = np.random.default_rng(n).uniform(-4, 4, n).astype(dtype)
    _check(model, x, ATTRS[model.spec.snake_name])


@pytest.mark.parametrize("shape", [(3, 1001), (2, 3, 5)])
def test_generated_kernel_on_310p_nd(model: AscendcModel, shape: tuple[int, ...]) -> None:
    x = np.random.default_rng(7).uniform(-4, 4, shape).astype(np.float16)
    _check(model, x, ATTRS[model.spec.snake_name])


@pytest.mark.parametrize(("n", "regime"), [
    (5, "tiny"), (100, "one short range"), (131, "last range below one block"),
    (4099, "one short range"), (65_541, "window moved back")])
def test_lengths_reach_each_tail_regime(n: int, regime: str) -> None:
    """The lengths above reach every path of the block-copy code on 310P3 (float32)."""
    kernel = generate(load_spec(OPS / "gelu"))
    ub, cores = core_resources(SOC)
    used, td = evaluate(kernel.tiling, {"totalLength": n, "coreNum": cores, "ubBytes": ub,
                                        "lastDim": n, "typeBytes": 4})
    last, tile = td["lastBlockLength"], td["tileLength"]
    found = ("tiny" if n < 8 else "last range below one block" if used > 1 and last < 8
             else "one short range" if last % 8 and last < tile
             else "window moved back" if last % 8 and last > tile else "aligned")
    assert found == regime, (n, used, td)


@pytest.fixture(scope="module", params=["softmax", "layer_normalization"])
def row_model(request: pytest.FixtureRequest) -> AscendcModel:
    return AscendcModel(OPS / request.param, soc=SOC, seed=3)


#: rows: aligned, unaligned, shorter than one block (one core, several cores), a tensor below
#: one block, 13 rows of 64 (LayerNormalization's statistics: 8 rows a core at least), rows of
#: several tiles with an unaligned tail, and a tile's rest below one block (float32: the
#: Unified Buffer's tile of the two kernels plus 3).
ROWS = [(4, 1024), (3, 1001), (5, 3), (100, 3), (1, 5), (1, 1), (13, 64), (2, 100_003),
        (2, 8963), (2, 6979), (0, 4)]


@pytest.mark.parametrize("shape", ROWS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_row_kernels_on_310p(row_model: AscendcModel, shape: tuple[int, int], dtype: type) -> None:
    rng = np.random.default_rng(sum(shape))
    x: np.ndarray = rng.uniform(-3, 3, shape).astype(dtype)
    more: tuple[np.ndarray, ...] = ()
    if row_model.spec.snake_name == "layer_normalization":
        more = (rng.normal(size=shape[-1]).astype(dtype), rng.normal(size=shape[-1]).astype(dtype))
    _check(row_model, x, {"axis": -1}, more)


@pytest.mark.parametrize("op", ["softmax", "layer_normalization"])
def test_row_kernels_keep_datacopypad_on_910b_only(op: str) -> None:
    source = aicore_kernel(load_spec(OPS / op), OPS / op).source  # opsdk_block_copy.h in place
    assert "namespace block_copy" in source
    assert missing_apis(source, SOC, ["float32", "float16"]) == []
    assert missing_apis(source, "Ascend910B3", ["float32", "float16", "bfloat16"]) == []
    assert "DataCopyPad(" in source  # the 220 path copies a tail with DataCopyPad, as before


@pytest.mark.parametrize("op", ["thresholded_relu", "gelu", "softmax", "layer_normalization"])
def test_full_harness_on_310p(op: str) -> None:
    """The operator's generated cases on the model for Ascend310P3; bfloat16 cases skip (no
    bfloat16 Cast there). opsdk.check's test is left out: it counts that skip as a failure."""
    env = {**os.environ, "OPSDK_ASCEND_SOC": SOC}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(OPS / op), "-q", "-p", "no:cacheprovider",
         "--opsdk-device", "ascendc-model", "--opsdk-seed", "5", "-k", "not _check"],
        capture_output=True, text=True, check=False, env=env)
    summary = re.search(r"opsdk: (\d+) cases compared, 0 failed\b", proc.stdout)
    assert proc.returncode == 0, proc.stdout[-3000:]
    # at least the generated cases (ONNX Runtime's conformance vectors add more where
    # OPSDK_CONFORMANCE_DIR or ../shared/conformance has them; a clean clone may not)
    assert summary is not None and int(summary.group(1)) >= 10, proc.stdout[-1000:]


def test_bfloat16_is_refused_naming_cast() -> None:
    """310P's Ascend C has no bfloat16 Cast (dav_m200): the kernel is refused for bfloat16."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    m = AscendcModel(OPS / "gelu", soc=SOC)
    x = np.zeros(64, dtype=ml_dtypes.bfloat16)
    with pytest.raises(DeviceUnavailable, match=r"Gelu's AI Core kernel cannot build for "
                                                 r"Ascend310P3 \(bfloat16\): Cast of bfloat16_t"):
        m.run([x], {})


@pytest.mark.parametrize("op", ["thresholded_relu", "gelu"])
def test_310p_source_has_no_datacopypad_and_910b_path_is_kept(op: str) -> None:
    source = generate(load_spec(OPS / op)).source
    assert missing_apis(source, SOC, ["float32", "float16"]) == []
    assert missing_apis(source, "Ascend910B3", ["float32", "float16", "bfloat16"]) == []
    # the 220 branch still copies a tail with DataCopyPad (910B kernels unchanged)
    assert "DataCopyPad(dst, src, params, pad);" in source


_SYNC = re.compile(r"^\s*(?:block_copy::|Opsdk)?Sync<HardEvent::\w+>\(\);")
#: operator -> shapes that reach every scalar-unit hand-off of its 310P path: rows of part
#: blocks several to a core, rows of several tiles, short rows staged in and out of whole
#: blocks, a tiny tensor.
MUTATED: dict[str, list[tuple[int, ...]]] = {
    "softmax": [(30, 1001), (2, 100_003), (3, 3), (1000, 3), (1, 5)], "thresholded_relu": [(5,)]}


def _mutant_error(op: str, source: str, where: Path) -> str:
    folder = where / op
    shutil.copytree(OPS / op, folder, ignore=shutil.ignore_patterns("__pycache__", "build"))
    (folder / "op_kernel").mkdir(exist_ok=True)
    (folder / "op_kernel" / f"{op}.cpp").write_text(source)
    if not (folder / "op_kernel" / "tiling.py").is_file():  # a generated kernel, as a hand-written one
        kernel = aicore_kernel(load_spec(OPS / op), OPS / op)
        (folder / "op_kernel" / "tiling.py").write_text(
            "from opsdk.ascend.ascendc import Tiling, TilingField\n"
            f"TILING = {kernel.tiling!r}\n")
    model = AscendcModel(folder, soc=SOC)
    for shape in MUTATED[op]:
        x = np.linspace(-2, 2, int(np.prod(shape)), dtype=np.float32).reshape(shape)
        try:
            model.run([x], {"axis": -1} if op == "softmax" else {"alpha": 0.5})
        except KernelError as e:
            return str(e)
    return ""


@pytest.mark.parametrize("op", sorted(MUTATED))
def test_every_scalar_hand_off_of_the_310p_path_is_needed(op: str, tmp_path: Path) -> None:
    """Each Sync of the block-copy path removed in turn: the race checker reports every one."""
    source = aicore_kernel(load_spec(OPS / op), OPS / op).source
    lines = source.splitlines(keepends=True)
    cut = [i for i, line in enumerate(lines) if _SYNC.match(line)]
    assert len(cut) >= (9 if op == "softmax" else 2)
    mutants = ["".join(x for k, x in enumerate(lines) if k != i) for i in cut]
    with ThreadPoolExecutor(max_workers=2) as pool:
        errors = list(pool.map(lambda m: _mutant_error(op, m[1], tmp_path / str(m[0])),
                               enumerate(mutants)))
    missed = [lines[i].strip() + f" (line {i + 1})" for i, e in zip(cut, errors, strict=True)
              if "race on Unified Buffer" not in e]
    assert not missed, f"{op}: removing these reports no race on {SOC}: {missed}"


@pytest.mark.parametrize(("source", "on_310p", "on_910b"), [
    ("#if __CCE_AICORE__ == 200\nDataCopy(a, b, n);\n#else\nDataCopyPad(a, b, p);\n#endif\n",
     [], []),
    ("#define ONLY_BLOCKS 0\n#if ONLY_BLOCKS\nDataCopy(a, b, n);\n#else\nDataCopyPad(a, b, p);\n"
     "#endif\n", ["DataCopyPad"], []),
    # a condition the check cannot evaluate keeps every branch: refused as before
    ("#ifdef SOME_BUILD_FLAG\nDataCopyPad(a, b, p);\n#endif\n", ["DataCopyPad"], []),
    ("#if defined(__CCE_AICORE__) && __CCE_AICORE__ >= 220\nDataCopyPad(a, b, p);\n#elif 1\n"
     "DataCopy(a, b, n);\n#endif\n", [], []),
])
def test_api_check_reads_the_branches_a_family_compiles(source: str, on_310p: list[str],
                                                         on_910b: list[str]) -> None:
    def apis(soc: str) -> list[str]:
        return [why.split(":")[0] for why in missing_apis(source, soc, ["float32"])]

    assert apis(SOC) == on_310p
    assert apis("Ascend910B3") == on_910b
