"""Mixed Cube + vector kernels on opsdk's Ascend C model: a block's Cube core (AIC) and two
vector cores (AIV) run concurrently, synchronised by CrossCoreSetFlag/CrossCoreWaitFlag or
SyncAll, through a GM workspace the launch allocates (CANN's system part, then the user part
the host tiling asks for).

The kernel (tests/data/ascendc/mix/matmul_leakyrelu.cpp, written for these tests in the style of
Huawei's basic-API samples): the AIC computes C's tiles with Mmad and writes each to the block's
workspace tile with Fixpipe; the AIVs read it after CrossCoreWaitFlag, apply LeakyRelu and
write C; the AIC waits until both AIVs have read a tile before it overwrites it. It matches
NumPy and passes the checker, through run_kernel_file and through ``opsdk ascendc run``; each
mutant (a flag dropped, a wrong flag id, the flag set before the write or on the wrong pipe, a
workspace too small) is reported, and the correct kernel never is.
"""

from __future__ import annotations

import ctypes
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from opsdk.ascend.ascendc import host_tiling_and_workspace, is_mixed, run_kernel_file
from opsdk.cli import main
from opsdk.errors import KernelError
from tests.conftest import build_model_kernel

MIX = Path(__file__).parents[1] / "data" / "ascendc" / "mix"
KERNEL = MIX / "matmul_leakyrelu.cpp"
HOST = f"{MIX / 'mix_host_tiling.cpp'}:MakeTiling"
BLOCKS, ALPHA = 2, 0.125  # mix_host_tiling.cpp's


def _inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    a = rng.uniform(-1, 1, (BLOCKS * 32, 64)).astype(np.float16)
    b = rng.uniform(-1, 1, (64, 64)).astype(np.float16)
    c = a.astype(np.float32) @ b.astype(np.float32)
    return a, b, np.where(c >= 0, c, c * np.float32(ALPHA))


def _run(path: Path, workspace: int | None = None, seed: int = 0) -> np.ndarray:
    tiling, asked = host_tiling_and_workspace(HOST)
    a, b, _ = _inputs()
    r = run_kernel_file(path, "matmul_leakyrelu", block_dim=BLOCKS, soc="Ascend910B3",
                        inputs={"a": a, "b": b}, outputs={"c": (np.float32, (BLOCKS * 32, 64))},
                        tiling=tiling, workspace_bytes=workspace if workspace is not None else asked or 0,
                        seed=seed)
    return r.outputs["c"]


def test_the_host_tiling_asks_for_the_user_workspace() -> None:
    tiling, asked = host_tiling_and_workspace(HOST)
    assert len(tiling) == 12 and asked == BLOCKS * 32 * 32 * 4
    assert is_mixed(KERNEL.read_text())
    assert not is_mixed("// KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);\n")


@pytest.mark.parametrize("seed", [0, 5])
def test_the_mixed_kernel_matches_numpy(seed: int) -> None:
    # it returns early on a null workspace: it matches NumPy only because the launch gives it one
    assert "if (workspace == nullptr)" in KERNEL.read_text()
    np.testing.assert_allclose(_run(KERNEL, seed=seed), _inputs()[2], rtol=1e-5, atol=1e-5)


def test_opsdk_ascendc_run_takes_the_workspace_from_the_host_tiling(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b, expect = _inputs()
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    args = ["ascendc", "run", str(KERNEL), "--entry", "matmul_leakyrelu", "--block-dim", str(BLOCKS),
            "--soc", "Ascend910B3", "--input", f"a={tmp_path / 'a.npy'}", "--input", f"b={tmp_path / 'b.npy'}",
            "--output", f"c=float32:{BLOCKS * 32}x64", "--host-tiling", HOST, "--out-dir", str(tmp_path)]
    assert main([*args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["race_checker"] == "clean"
    np.testing.assert_allclose(np.load(tmp_path / "c.npy"), expect, rtol=1e-5, atol=1e-5)
    # --workspace overrides what the host tiling asks for: one tile short is out of bounds
    assert main([*args, "--force", "--workspace", str(32 * 32 * 4)]) == 1
    err = capsys.readouterr().err
    assert "matmul_leakyrelu (block 1 of 2, AIC): Fixpipe: writes" in err
    assert "workspace (user part, 4096 bytes the tiling asks for)" in err and "out of bounds" in err


def _variant(tmp_path: Path, name: str, edits: list[tuple[str, str]]) -> Path:
    """The kernel with each (line, replacement) edit made (each line must be in it)."""
    text = KERNEL.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    folder = tmp_path / name
    folder.mkdir()
    shutil.copy(MIX / "mix_tiling.h", folder)
    (folder / KERNEL.name).write_text(text)
    return folder / KERNEL.name


SET_READY = "            CrossCoreSetFlag<0x2, PIPE_FIX>(TILE_READY);\n"
FIXPIPE = "            Fixpipe(wsGm, c1Buf.Get<float>(), fix);\n"
WAIT_READY = "            CrossCoreWaitFlag(TILE_READY);\n"
WAIT_CONSUMED = "                CrossCoreWaitFlag(TILE_CONSUMED);\n"
SET_CONSUMED = "            CrossCoreSetFlag<0x2, PIPE_MTE2>(TILE_CONSUMED);\n"
RACE = r"race on GM bytes \[\d+, \d+\) of argument 'workspace \(user part.*" \
       r"with no cross-core synchronisation between the two cores.*Fix: CrossCoreSetFlag<0x2, PIPE_"
HANG = r"every core still running waits and none is left to release it \(on the chip the kernel hangs\)"

# (name, edits, what the report must say)
MUTANTS = [
    ("drop the Cube core's set", [(SET_READY, "")], HANG + r".*AIV \d waits in CrossCoreWaitFlag\(3\)"),
    ("drop the vector cores' wait", [(WAIT_READY, "")], RACE),
    ("wait for a wrong flag id", [(WAIT_READY, WAIT_READY.replace("TILE_READY", "TILE_READY + 2"))],
     HANG + r".*waits in CrossCoreWaitFlag\(5\).*flag 3 of block \d's AIV \d was set by CrossCoreSetFlag"),
    ("a flag id out of range", [("TILE_READY = 3;", "TILE_READY = 11;")],
     r"CrossCore(Set|Wait)Flag: flagId is 11; the Atlas A2 cores take 0 to 10"),
    ("the vector cores read before the Cube core's FIX write (set before the Fixpipe)",
     [(SET_READY, ""), (FIXPIPE, SET_READY + FIXPIPE)], RACE),
    ("the set on a pipe that does not wait for the FIX write", [(SET_READY, SET_READY.replace("PIPE_FIX", "PIPE_MTE3"))],
     RACE.replace("PIPE_", "PIPE_FIX")),
    ("the Cube core overwrites the tile before both vector cores read it", [(WAIT_CONSUMED, "")], RACE),
    ("the vector cores never report the tile read", [(SET_CONSUMED, "")],
     HANG + r".*block \d's AIC waits in CrossCoreWaitFlag\(4\)"),
]


@pytest.mark.parametrize("name,edits,report", MUTANTS, ids=[m[0] for m in MUTANTS])
def test_each_mutant_is_reported(tmp_path: Path, name: str, edits: list[tuple[str, str]], report: str) -> None:
    with pytest.raises(KernelError) as caught:
        _run(_variant(tmp_path, name.split()[0], edits))
    assert re.search(report, str(caught.value)), str(caught.value)


def test_a_core_takes_only_its_own_memories(tmp_path: Path) -> None:
    # the epilogue's input queue in L1, which the vector cores do not have
    path = _variant(tmp_path, "l1", [("TQue<TPosition::VECIN, 1> inQueue;", "TQue<TPosition::A1, 1> inQueue;")])
    with pytest.raises(KernelError, match=r"\(block \d of 2, AIV \d\): TPipe::InitBuffer: position A1 is in "
                                          r"the L1, which the vector core \(AIV\) of a mixed kernel "
                                          r"does not have.*run this part under if ASCEND_IS_AIC"):
        _run(path)


def test_a_workspace_too_small_is_reported() -> None:
    with pytest.raises(KernelError, match=r"out of bounds by \d+ bytes"):
        _run(KERNEL, workspace=BLOCKS * 32 * 32 * 4 - 128)


def test_syncall_across_the_cores_orders_the_workspace(tmp_path: Path) -> None:
    # every cross-core flag replaced by the hardware SyncAll<false>() of all cores: correct, and
    # the blocks run at once; SyncAll<true>() (the vector cores only) leaves the Cube core out
    flags = [SET_READY, WAIT_READY, WAIT_CONSUMED, SET_CONSUMED,
             "        CrossCoreWaitFlag(TILE_CONSUMED);\n"]
    path = _variant(tmp_path, "syncall", [(f, f[:len(f) - len(f.lstrip())] + "SyncAll<false>();\n") for f in flags])
    np.testing.assert_allclose(_run(path), _inputs()[2], rtol=1e-5, atol=1e-5)
    aiv_only = path.read_text().replace("SyncAll<false>();", "SyncAll<true>();")
    path.write_text(aiv_only)
    with pytest.raises(KernelError, match=RACE):
        _run(path)


def test_the_one_to_one_type_runs_one_vector_core_a_block(tmp_path: Path) -> None:
    path = _variant(tmp_path, "one_to_one", [("KERNEL_TYPE_MIX_AIC_1_2", "KERNEL_TYPE_MIX_AIC_1_1")])
    np.testing.assert_allclose(_run(path), _inputs()[2], rtol=1e-5, atol=1e-5)


def test_the_launch_gives_every_kernel_a_workspace(tmp_path: Path) -> None:
    # a kernel that returns early on a null workspace does its work (the launch passed nullptr)
    lib = build_model_kernel(tmp_path, (MIX / "copy_via_workspace.cpp").read_text(),
                             (MIX / "copy_via_workspace_driver.cpp").read_text())
    x = np.arange(2 * 512, dtype=np.float32)
    y = np.zeros_like(x)
    gm = (ctypes.c_void_p * 2)(x.ctypes.data, y.ctypes.data)
    sizes = (ctypes.c_uint64 * 2)(x.nbytes, y.nbytes)
    names = (ctypes.c_char_p * 2)(b"x", b"y")
    err = ctypes.create_string_buffer(4096)
    assert lib.launch(gm, sizes, names, err) == 0, err.value.decode()
    np.testing.assert_array_equal(y, x)


IB_WAIT = "    IBWait(syncGm, syncUb, other, 0);\n"
IB_SET = "    IBSet(syncGm, syncUb, me, 0);\n"
SWAP_FORMS = {
    "IBSet/IBWait": [],
    "mode 0 flags": [(IB_SET, "    CrossCoreSetFlag<0x0, PIPE_MTE3>(1);\n"), (IB_WAIT, "    CrossCoreWaitFlag(1);\n")],
    "software SyncAll": [(IB_SET, "    SyncAll(syncGm, syncUb);\n"), (IB_WAIT, "")],
    "IBWait dropped": [(IB_WAIT, "")],
}


@pytest.mark.parametrize("form", list(SWAP_FORMS))
def test_blocks_hand_data_over_through_the_workspace(tmp_path: Path, form: str) -> None:
    text = (MIX / "swap_ib.cpp").read_text()
    for old, new in SWAP_FORMS[form]:
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "swap_ib.cpp"
    path.write_text(text)
    x = np.arange(512, dtype=np.float32)

    def run() -> np.ndarray:
        r = run_kernel_file(path, "swap_ib", block_dim=2, soc="Ascend910B3", inputs={"x": x},
                            outputs={"y": (np.float32, (512,))}, workspace_bytes=64 + 2048)
        return r.outputs["y"]

    if form == "IBWait dropped":
        with pytest.raises(KernelError, match=r"swap_ib \(block \d of 2, AIV 0\): race on GM bytes.*"
                                              r"no cross-core synchronisation.*Fix: CrossCoreSetFlag<0x0, PIPE_MTE[23]>"):
            run()
        return
    np.testing.assert_array_equal(run(), np.concatenate([x[256:], x[:256]]))
