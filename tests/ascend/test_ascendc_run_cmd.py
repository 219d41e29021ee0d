"""``opsdk ascendc run``: a kernel-launch file as Huawei's samples write it, run end to end on
opsdk's Ascend C model through the command (real compiler, real model), outputs against NumPy;
a racy kernel reported in one line naming the kernel, the API, the source line and the fix;
bad arguments refused before anything is compiled.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from opsdk.ascend.ascendc import KernelFileError, entry_params, run_kernel_file
from opsdk.cli import main

FILES = Path(__file__).parents[1] / "data" / "ascendc_files"
ADD = FILES / "add_tiled.cpp"


def _inputs(tmp_path: Path, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    return x, y


def _tiling(tmp_path: Path, block: int, tile: int, scale: float) -> Path:
    path = tmp_path / "tiling.bin"
    path.write_bytes(struct.pack("<IIf", block, tile, scale))
    return path


def _add_args(tmp_path: Path, n: int = 4 * 512, blocks: int = 4) -> list[str]:
    return ["ascendc", "run", str(ADD), "--entry", "add_tiled", "--block-dim", str(blocks),
            "--soc", "Ascend910B3", "--input", f"x={tmp_path / 'x.npy'}",
            "--input", f"y={tmp_path / 'y.npy'}", "--output", f"z=float32:{n}",
            "--tiling", str(_tiling(tmp_path, n // blocks, 128, 0.5)), "--out-dir", str(tmp_path / "out")]


def test_a_sample_style_kernel_runs_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    x, y = _inputs(tmp_path, 2048)
    assert main([*_add_args(tmp_path), "--swimlane", str(tmp_path / "lanes.png"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (tmp_path / "lanes.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    z = np.load(tmp_path / "out" / "z.npy")
    np.testing.assert_allclose(z, x * np.float32(0.5) + y, rtol=1e-6)
    assert report["race_checker"] == "clean" and report["block_dim"] == 4
    est = report["estimate"]
    assert est["bound"] in ("MTE2-bound", "MTE3-bound", "vector-bound", "scalar-bound")
    assert est["cycles"] > 0 and est["block_dim"] == 4
    # an existing output is never overwritten silently
    assert main(_add_args(tmp_path)) == 1
    assert "z.npy exists (z); remove it, pick another --out-dir, or pass --force" in capsys.readouterr().err


def test_the_tiling_struct_must_match_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _inputs(tmp_path, 2048)
    args = _add_args(tmp_path)
    (tmp_path / "tiling.bin").write_bytes(b"\0" * 8)
    args[args.index("--tiling") + 1] = str(tmp_path / "tiling.bin")
    assert main(args) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    assert "add_tiled: takes a tiling struct by value of 12 bytes; the tiling has 8 bytes" in err, err


def test_a_race_is_one_line_naming_kernel_api_line_and_fix(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "x.npy", np.linspace(-1, 1, 256, dtype=np.float32))
    argv = ["ascendc", "run", str(FILES / "racy.cpp"), "--entry", "racy_abs", "--block-dim", "1",
            "--input", f"x={tmp_path / 'x.npy'}", "--output", "z=float32:256", "--out-dir", str(tmp_path)]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    assert err.startswith("opsdk ascendc: error: ascendc-model: racy_abs (block 0 of 1): race on"), err
    assert "Abs (racy.cpp:16) on pipe V reads what DataCopy (racy.cpp:15) on pipe MTE2 wrote" in err, err
    assert "Fix: SetFlag<HardEvent::MTE2_V>" in err, err
    assert not (tmp_path / "z.npy").exists()
    with pytest.raises(Exception, match="race on"):  # --debug: the traceback, not one line
        main(["ascendc", "run", "--debug", *argv[2:]])


@pytest.mark.parametrize(("change", "message"), [
    (("--entry", "add"), "no __global__ entry 'add'; its entries are add_tiled: pass one with --entry"),
    (("--output", "w=float32:16"), "GM parameter 'z' is neither an input nor an output"),
    (("--output", "z=float33:16"), "--output z=float33:16: unknown dtype 'float33'"),
    (("--output", "z=float32:0"), "the shape must be positive dimensions"),
    (("--input", "q=x.npy"), "--input q=x.npy: cannot read a .npy file"),
])
def test_bad_arguments_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   change: tuple[str, str], message: str) -> None:
    _inputs(tmp_path, 2048)
    args = _add_args(tmp_path)
    flag, value = change
    if flag == "--input":
        args += [flag, value]
    else:
        args[args.index(flag) + 1] = value
    assert main(args) == 1
    err = capsys.readouterr().err
    assert message in err, err
    assert not (tmp_path / "out" / "z.npy").exists()


def test_a_parameter_without_an_argument_and_an_unknown_name(tmp_path: Path) -> None:
    x, y = _inputs(tmp_path, 64)
    with pytest.raises(KernelFileError, match="has no GM parameter 'q'; its GM parameters are x, z"):
        run_kernel_file(FILES / "racy.cpp", "racy_abs", block_dim=1, soc="Ascend910B3",
                        inputs={"x": x, "q": y}, outputs={"z": (np.float32, (256,))})
    params = entry_params(ADD.read_text(), "add_tiled")
    assert [(p.name, p.pointer) for p in params] == [
        ("x", True), ("y", True), ("z", True), ("workspace", True), ("tiling", False)]


def test_a_broken_limit_names_the_source_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "x.npy", np.ones(7, np.float32))
    argv = ["ascendc", "run", str(FILES / "short_copy.cpp"), "--entry", "short_copy", "--block-dim", "1",
            "--input", f"x={tmp_path / 'x.npy'}", "--output", "z=float32:8", "--out-dir", str(tmp_path)]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    assert "short_copy (block 0 of 1): DataCopy: calCount is 7 float elements = 28 bytes" in err, err
    assert "use DataCopyPad for a tail" in err and err.endswith("[at short_copy.cpp:13]"), err


@pytest.mark.parametrize(("func", "scale"), [("MakeTiling", 0.5), ("FillTiling", -2.0)])
def test_host_tiling_makes_the_tiling(tmp_path: Path, func: str, scale: float) -> None:
    x, y = _inputs(tmp_path, 2048)
    args = _add_args(tmp_path)
    at = args.index("--tiling")
    args[at:at + 2] = ["--host-tiling", f"{FILES / 'add_tiling.cpp'}:{func}"]
    assert main(args) == 0
    np.testing.assert_allclose(np.load(tmp_path / "out" / "z.npy"), x * np.float32(scale) + y,
                               rtol=1e-6)


def test_host_tiling_of_another_form_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _inputs(tmp_path, 2048)
    args = _add_args(tmp_path)
    at = args.index("--tiling")
    args[at:at + 2] = ["--host-tiling", f"{FILES / 'add_tiling.cpp'}:NotATiling"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "does not compile as the host tiling function (void NotATiling(S* tiling), S " \
           "NotATiling() or void NotATiling(const char* socVersion, uint8_t* tilingBuf); plain C++ " \
           "or the model's tiling/tiling_api.h)" in err, err
    args[at + 1] = "add_tiling.cpp"
    assert main(args) == 1
    assert "expected FILE.cpp:FUNC, e.g. add_tiling.cpp:MakeTiling" in capsys.readouterr().err


def test_an_api_the_model_lacks_is_one_line_naming_it(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    kernel = tmp_path / "uses_missing.cpp"
    kernel.write_text('#include "kernel_operator.h"\n'
                      'extern "C" __global__ __aicore__ void uses_missing(GM_ADDR z)\n{\n'
                      '    AscendC::NoSuchApi<float>(z);\n}\n')
    argv = ["ascendc", "run", str(kernel), "--entry", "uses_missing", "--block-dim", "1",
            "--output", "z=float32:8", "--out-dir", str(tmp_path)]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    assert "uses_missing (uses_missing.cpp): does not compile against opsdk's Ascend C model with " in err
    assert "uses_missing.cpp:4:" in err and "NoSuchApi" in err, err


def test_a_block_dim_below_one_is_refused_by_the_parser(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    _inputs(tmp_path, 2048)
    args = _add_args(tmp_path)
    args[args.index("--block-dim") + 1] = "0"
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--block-dim: 0 is below 1" in err and "(see opsdk ascendc run --help)" in err
    assert not (tmp_path / "out" / "z.npy").exists()


def test_cxx_picks_the_compiler_and_is_in_the_cache_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """--cxx g++ and --cxx clang++ build the same file into two cache entries (the compiler is in
    the key), with the same outputs; a --cxx that names no compiler is refused naming it."""
    from tests._helpers.compilers import NO_CLANG, compiler_path

    if compiler_path("clang++") is None:
        pytest.skip(NO_CLANG)
    monkeypatch.setenv("OPSDK_CACHE_DIR", str(tmp_path / "cache"))
    x, y = _inputs(tmp_path, 2048)
    for cxx in ("g++", "clang++"):
        args = _add_args(tmp_path)
        args[args.index("--out-dir") + 1] = str(tmp_path / cxx)
        assert main([*args, "--cxx", cxx]) == 0, capsys.readouterr().err
        np.testing.assert_allclose(np.load(tmp_path / cxx / "z.npy"), x * np.float32(0.5) + y, rtol=1e-6)
    assert len(list((tmp_path / "cache" / "ascendc-file").iterdir())) == 2
    capsys.readouterr()
    assert main([*_add_args(tmp_path), "--cxx", "no-such-c++"]) == 1
    err = capsys.readouterr().err
    assert "--cxx 'no-such-c++': no such C++ compiler on PATH" in err and "--cxx clang++" in err, err
