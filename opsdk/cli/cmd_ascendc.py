"""``opsdk ascendc run``: any Ascend C kernel file on opsdk's model of the AI Core.

Example:
    opsdk ascendc run add_custom.cpp --entry add_custom --block-dim 8 --soc Ascend910B3 \\
        --input x=x.npy --input y=y.npy --output z=float16:8x2048 --estimate
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import OpsdkError
from ._grammar import add_soc_option
from ._numbers import byte_count, count32

EPILOG = """\
The kernel file is a kernel-launch file as Huawei's samples write it: an
extern "C" __global__ __aicore__ entry whose GM parameters are named by --input and --output
(a parameter named like 'workspace' gets the launch's GM workspace: CANN's 16 MiB system
part, then the --workspace bytes of user part, zeroed; one named like 'tiling' the --tiling
bytes; a tiling struct passed by value is filled from them). A kernel that declares a kernel
type with a Cube core (KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2)) is compiled once
per core type and runs each block's Cube and vector cores, with the cross-core checks. It is
compiled against opsdk's model of the Ascend C API (ASCENDC_CPU_DEBUG defined) and run with
the race checker and the SoC's limits, by the runner of 'opsdk bench --device ascendc-model'.
Outputs are written as NAME.npy into --out-dir. A model run is not an NPU run; --estimate is
an estimate from the model, not an NPU time.

examples:
  opsdk ascendc run add_custom.cpp --entry add_custom --block-dim 8 --soc Ascend910B3 \\
      --input x=x.npy --input y=y.npy --output z=float16:8x2048
  opsdk ascendc run rms.cpp --entry rms_norm --block-dim 40 --soc Ascend910B3 \\
      --input x=x.npy --output y=float32:64x4096 --tiling tiling.bin --estimate --swimlane rms.png
  opsdk ascendc run add.cpp --entry add --block-dim 4 --input x=x.npy --input y=y.npy \\
      --output z=float32:2048 --host-tiling add_tiling.cpp:MakeTiling
  opsdk ascendc run gemm.cpp --entry gemm --block-dim 2 --cxx clang++ \\
      --input a=a.npy --input b=b.npy --output c=float32:64x32
"""


def register(sub: Any) -> None:
    p = sub.add_parser("ascendc", help="run an Ascend C kernel file on opsdk's model")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    r = actions.add_parser(
        "run", help="compile a kernel file against the model, run, check and time it",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("kernel", help="the kernel file (.cpp)")
    r.add_argument("--entry", required=True, help="the __global__ entry to run")
    r.add_argument("--block-dim", type=count32, required=True, help="blocks to launch")
    add_soc_option(r, " (whose limits apply)")
    r.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="a GM input by parameter name, from a .npy file")
    r.add_argument("--output", action="append", default=[], metavar="NAME=DTYPE:SHAPE",
                   help="a GM output by parameter name, e.g. z=float32:1024 or z=float16:8x2048")
    tiling = r.add_mutually_exclusive_group()
    tiling.add_argument("--tiling", metavar="FILE", default=None,
                        help="the tiling bytes (a tiling struct by value, or the 'tiling' GM "
                        "parameter)")
    tiling.add_argument("--host-tiling", metavar="FILE.cpp:FUNC", default=None,
                        help="make the tiling bytes with a host function: void FUNC(S* tiling), "
                        "void FUNC(S* tiling, uint64_t* workspace), S FUNC() or void "
                        "FUNC(const char* socVersion, uint8_t* tilingBuf); it may use the model's "
                        "tiling/tiling_api.h (MultiCoreMatmulTiling, SoftMaxTilingFunc, ...) for "
                        "--soc")
    r.add_argument("--workspace", type=byte_count, default=None, metavar="BYTES",
                   help="bytes of user workspace the tiling asks for (GetUserWorkspace); the "
                   "launch adds CANN's system part. Default: what --host-tiling's function sets "
                   "through its uint64_t* workspace parameter, else 0")
    r.add_argument("--cxx", metavar="COMPILER", default=None,
                   help="the host compiler that builds the kernel against the model: g++ or "
                   "clang++ (a name on PATH or a path; default $CXX, else c++ or g++); "
                   "template-library kernels in catlass's style need clang++")
    r.add_argument("--out-dir", default=".", help="where NAME.npy are written (default .)")
    r.add_argument("--force", action="store_true", help="overwrite existing NAME.npy files")
    r.add_argument("--estimate", action="store_true", help="estimate the time and the bound")
    r.add_argument("--swimlane", metavar="PNG", default=None,
                   help="draw the estimate's pipes of the busiest core (implies --estimate)")
    r.add_argument("--json", action="store_true", help="print JSON instead of text")
    r.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                   help="show the full traceback of an error")
    r.set_defaults(func=run_cmd)
    p.set_defaults(func=lambda _a: _usage(p))


def _usage(p: argparse.ArgumentParser) -> int:
    p.print_help()
    return 2


def _pair(text: str, flag: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name or not value:
        raise OpsdkError(f"ascendc run: {flag} {text!r}: expected NAME=VALUE, e.g. "
                         + ("x=x.npy" if flag == "--input" else "z=float32:1024"))
    return name, value


def _output_type(name: str, value: str) -> tuple[np.dtype[Any], tuple[int, ...]]:
    from ..dtypes import to_numpy

    dtype, sep, shape = value.partition(":")
    try:
        dims = tuple(int(d) for d in shape.replace(",", "x").split("x")) if sep else ()
        np_dtype = to_numpy(dtype)
    except ValueError as e:
        raise OpsdkError(f"ascendc run: --output {name}={value}: {e}; expected DTYPE:SHAPE, e.g. "
                         f"{name}=float32:1024 or {name}=float16:8x2048") from None
    if not dims or any(d <= 0 for d in dims):
        raise OpsdkError(f"ascendc run: --output {name}={value}: the shape must be positive "
                         f"dimensions, e.g. {name}=float32:1024")
    return np_dtype, dims


def _inputs(args: argparse.Namespace) -> dict[str, np.ndarray]:
    out = {}
    for text in args.input:
        name, file = _pair(text, "--input")
        try:
            out[name] = np.load(file, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise OpsdkError(f"ascendc run: --input {name}={file}: cannot read a .npy file "
                             f"({e})") from None
    return out


def _targets(args: argparse.Namespace, names: list[str]) -> dict[str, Path]:
    from ._io import check_output_dir, check_output_file

    folder = check_output_dir(args.out_dir, "--out-dir")
    files = {n: folder / f"{n}.npy" for n in names}
    if args.swimlane:
        files["--swimlane"] = check_output_file(args.swimlane, "--swimlane")
    for key, f in files.items():
        if f.exists() and not args.force:
            raise OpsdkError(f"ascendc run: {f} exists ({key}); remove it, pick another "
                             "--out-dir, or pass --force")
    return files


def run_cmd(args: argparse.Namespace) -> int:
    from .._written import write_file
    from ..ascend.ascendc import run_kernel_file

    outputs = {}
    for text in args.output:
        name, value = _pair(text, "--output")
        outputs[name] = _output_type(name, value)
    if not outputs:
        raise OpsdkError("ascendc run: no --output; name at least one, e.g. "
                         "--output z=float32:1024")
    files = _targets(args, list(outputs))
    tiling = Path(args.tiling).read_bytes() if args.tiling else None
    workspace = args.workspace
    if args.host_tiling:
        from ..ascend.ascendc import host_tiling_and_workspace

        tiling, asked = host_tiling_and_workspace(args.host_tiling, args.soc, cxx=args.cxx)
        workspace = asked if workspace is None else workspace
    extra = {} if workspace is None else {"workspace_bytes": workspace}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run_kernel_file(args.kernel, args.entry, block_dim=args.block_dim, soc=args.soc,
                                 inputs=_inputs(args), outputs=outputs, tiling=tiling,
                                 estimate=bool(args.estimate or args.swimlane), cxx=args.cxx,
                                 **extra)
    for name, arr in result.outputs.items():
        buf = _npy_bytes(arr)
        write_file(files[name].parent, files[name].name, buf)
    if args.swimlane and result.estimate is not None:
        result.estimate.swimlane(args.swimlane)
    notes = [str(w.message) for w in caught]
    if args.json:
        data: dict[str, Any] = {
            "entry": result.entry, "soc": args.soc, "block_dim": result.block_dim,
            "outputs": {n: str(files[n]) for n in result.outputs}, "race_checker": "clean",
            "warnings": notes,
            "estimate": result.estimate.as_dict() if result.estimate is not None else None}
        print(json.dumps(data, indent=2))
        return 0
    print(f"{result.entry} ran on opsdk's Ascend C model ({args.soc}, blockDim "
          f"{result.block_dim}): race checker and limits clean (a model run, not an NPU run)")
    for note in notes:
        print(f"warning: {note}", file=sys.stderr)
    if result.estimate is not None:
        print(result.estimate.format())
    for n in result.outputs:
        print(f"wrote {files[n]}")
    if args.swimlane:
        print(f"wrote {args.swimlane}")
    return 0


def _npy_bytes(arr: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()
