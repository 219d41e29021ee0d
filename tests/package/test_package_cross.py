"""Manylinux wheels for the hosts that have Ascend NPUs, built on this x86 machine.

- `opsdk package` of two shipped operators (ThresholdedRelu, Gelu) with
  `--platform manylinux2014_x86_64 --platform manylinux2014_aarch64` makes two wheels with
  zig c++ (glibc 2.17), one CLI call;
- `auditwheel show` proves each wheel's tag (the file name alone proves nothing);
- the aarch64 wheel is installed by an aarch64 pip into Debian's arm64 CPython running under
  qemu-aarch64-static, and every validation case of both operators runs there against the
  NumPy reference, with the prebuilt kernels only (no compiler, no build cache).

The x86_64 wheel's fresh-venv test (every compiler a tripwire) is in test_package_wheel.py.
Needs the ziglang and auditwheel packages (dev extra), Debian's arm64 packages known to apt
and qemu-user-static (scripts/setup.d/20-cross.sh, 30-wheels.sh); skips with the reason
otherwise.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from opsdk._cross import target
from opsdk.errors import BuildError
from opsdk.package import SysrootError, parse_platforms, target_python, wheel_contents

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
OPS = {"ThresholdedRelu": "thresholded_relu", "Gelu": "gelu"}
PLATFORMS = {"x86_64": "manylinux2014_x86_64", "aarch64": "manylinux2014_aarch64"}


def run(cmd: list[Any], **kw: Any) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def _skip_reason() -> str | None:
    from opsdk.package._targets import zig_available

    missing = zig_available()
    if missing:
        return missing
    try:
        target_python(parse_platforms([PLATFORMS["aarch64"]])[0], "3.11")
    except BuildError as e:
        return str(e)
    return None


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Both wheels, from one `opsdk package` call, by machine."""
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    out = tmp_path_factory.mktemp("dist")
    cmd = [sys.executable, "-m", "opsdk", "package", *(REPO / "operators" / s for s in OPS.values()),
           "-o", out, "--name", "acme-ops", "--version", "1.2.0",
           "--platform", PLATFORMS["x86_64"], "--platform", PLATFORMS["aarch64"],
           "--isa-variants", "none"]  # the variants are built and tested in test_package_wheel
    printed = run(cmd).stdout
    found = {m: next(out.glob(f"acme_ops-1.2.0-cp311-cp311-*{m}*.whl"), None) for m in PLATFORMS}
    assert all(found.values()), f"{sorted(out.iterdir())}\n{printed}"
    for wheel in found.values():
        assert f"built: {wheel}" in printed
    return {m: w for m, w in found.items() if w is not None}


@pytest.mark.parametrize("machine", sorted(PLATFORMS))
def test_auditwheel_confirms_the_manylinux2014_tag(wheels: dict[str, Path], machine: str) -> None:
    if shutil.which("auditwheel") is None and not _module("auditwheel"):
        pytest.skip("auditwheel is not installed (pip install auditwheel; the dev extra has it)")
    shown = run([sys.executable, "-m", "auditwheel", "show", wheels[machine]]).stdout
    text = " ".join(shown.split())
    assert f'is consistent with the following platform tag: "manylinux_2_17_{machine}"' in text, shown
    versions = {tuple(int(x) for x in v.split(".")) for v in re.findall(r"GLIBC_([\d.]+)", text)}
    assert versions and max(versions) <= (2, 17), shown
    assert "requires no external shared libraries" in text or "libstdc++" not in text, shown


def _module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


@pytest.mark.parametrize("machine", sorted(PLATFORMS))
def test_manifest_records_platform_glibc_floor_and_cpu(wheels: dict[str, Path],
                                                      machine: str) -> None:
    files = wheel_contents(wheels[machine])
    man = json.loads(files["acme_ops/opsdk_manifest.json"])
    t = target(machine)
    assert man["platform"] == {"system": "Linux", "machine": machine, "tag": t.manylinux,
                               "tags": list(t.manylinux_tags), "glibc_floor": "2.17"}
    assert man["cpu_baseline"] == t.default_march
    assert man["isa_variants"] == [t.default_march]
    assert man["python"]["ext_suffix"] == f".cpython-311-{t.gnu_triple}.so"
    assert man["build"]["compiler"].startswith("zig ")
    for snake in OPS.values():
        so = files[f"acme_ops/operators/{snake}/_opsdk_kernels.cpython-311-{t.gnu_triple}.so"]
        assert int.from_bytes(so[18:20], "little") == t.elf_machine


VALIDATE = """\
import json, os, platform, sys
import opsdk
from opsdk.testing import build_cases, run_case

report = {"machine": platform.machine(), "ops": {}}
for name in sys.argv[1:]:
    op = opsdk.load(name)
    results = [run_case(op.spec, op, c, keep_arrays=False) for c in build_cases(op.spec)]
    report["ops"][name] = {
        "folder": str(op.folder),
        "cases": len(results),
        "failed": [r.summary() for r in results if not r.passed],
    }
print(json.dumps(report))
"""

TRIPWIRE = """\
#!/bin/sh
echo "$0 $*" >> "{marker}"
exit 1
"""


def _wheelhouse(folder: Path) -> Path:
    """The aarch64 wheels of what the operators need at run time (numpy, ml_dtypes,
    platformdirs), fetched by this host's pip for the target, and opsdk's own wheel."""
    folder.mkdir()
    run([sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "-d", folder,
         "--platform", "manylinux2014_aarch64", "--platform", "manylinux_2_28_aarch64",
         "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311", "--abi", "none",
         "numpy>=1.26", "ml_dtypes>=0.4", "platformdirs>=3"])
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", folder, REPO])
    return folder


def test_aarch64_wheel_passes_its_validation_under_qemu(wheels: dict[str, Path],
                                                       tmp_path: Path) -> None:
    from opsdk.package import emulated_python

    try:
        base = emulated_python(target("aarch64"), "3.11")
    except SysrootError as e:
        pytest.skip(str(e))
    py = base.venv(tmp_path / "venv")
    house = _wheelhouse(tmp_path / "wheelhouse")
    env = {"HOME": os.environ.get("HOME", str(tmp_path)), "PATH": "/usr/bin:/bin",
           "PYTHONNOUSERSITE": "1"}
    # The aarch64 interpreter's own pip picks and checks every tag (local files only).
    run_ok(py.pip(["install", "-q", "--no-index", "--no-deps", "--find-links", house,
                   "--find-links", wheels["aarch64"].parent, "acme-ops==1.2.0", "opsdk",
                   "numpy", "ml_dtypes", "platformdirs"], env=env, cwd=tmp_path))

    poison, marker, cache = tmp_path / "poison", tmp_path / "compiler-was-called", tmp_path / "c"
    poison.mkdir()
    for tool in ("c++", "g++", "gcc", "cc", "clang++", "cmake", "ninja", "make", "ld"):
        (poison / tool).write_text(TRIPWIRE.format(marker=marker))
        (poison / tool).chmod(0o755)
    env.update(PATH=f"{poison}:/usr/bin:/bin", CXX=str(poison / "c++"), OPSDK_CACHE_DIR=str(cache))
    work = tmp_path / "work"  # no ./operators: only the wheel's and opsdk's shipped ones
    work.mkdir()
    proc = run_ok(py.run(["-c", VALIDATE, *OPS], env=env, cwd=work))
    report = json.loads(proc.stdout.strip().splitlines()[-1])

    assert report["machine"] == "aarch64"
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "acme_ops" / "operators"
    total = 0
    for name, snake in OPS.items():
        got = report["ops"][name]
        assert got["folder"] == str(site / snake), got
        assert got["cases"] > 0 and got["failed"] == [], got
        total += got["cases"]
    print(f"\nunder qemu-aarch64: {total} validation cases passed "
          + ", ".join(f"{n} {report['ops'][n]['cases']}" for n in OPS))
    assert not marker.exists(), "a compiler ran:\n" + marker.read_text()
    assert not cache.exists(), f"opsdk built something: {sorted(cache.rglob('*'))}"


def run_ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == 0, f"{proc.args} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


LOAD_312 = """\
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("_opsdk_kernels", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
print(json.dumps([sys.version_info[:2], sorted({r["name"] for r in mod.registrations()})]))
"""


def test_wheels_for_another_python_version_load_in_that_python(tmp_path: Path) -> None:
    """--python 3.12 from this 3.11, for manylinux2014 (zig) and native (this host's
    compiler): built against 3.12's headers, tagged cp312, and the kernel modules import in
    a real CPython 3.12."""
    from opsdk.package._targets import zig_available

    if sys.version_info[:2] == (3, 12):
        pytest.skip("the running interpreter is 3.12; this test builds for another version")
    missing = zig_available()
    if missing:
        pytest.skip(missing)
    if os.uname().machine != "x86_64":
        pytest.skip("builds for this x86_64 host's other interpreters")
    (plat,) = parse_platforms([PLATFORMS["x86_64"]])
    try:
        py312 = target_python(plat, "3.12")
    except BuildError as e:
        pytest.skip(str(e))
    run([sys.executable, "-m", "opsdk", "package", REPO / "operators" / "thresholded_relu",
         "-o", tmp_path, "--platform", PLATFORMS["x86_64"], "--platform", "native",
         "--python", "3.12", "--no-cann"])
    wheels = sorted(tmp_path.glob("opsdk_op_thresholded_relu-0.1.0-cp312-cp312-*.whl"))
    assert [w.name.rsplit("-", 1)[1] for w in wheels] == [
        "linux_x86_64.whl", "manylinux2014_x86_64.manylinux_2_17_x86_64.whl"]
    shown = " ".join(run([sys.executable, "-m", "auditwheel", "show", wheels[1]]).stdout.split())
    assert 'is consistent with the following platform tag: "manylinux_2_17_x86_64"' in shown
    for wheel in wheels:
        files = wheel_contents(wheel)
        name = ("opsdk_op_thresholded_relu/operators/thresholded_relu/_opsdk_kernels"
                + py312.ext_suffix)
        so = tmp_path / wheel.stem / Path(name).name
        so.parent.mkdir()
        so.write_bytes(files[name])
        got = json.loads(run([py312.executable, "-c", LOAD_312, so], cwd=tmp_path).stdout)
        assert got == [[3, 12], ["ThresholdedRelu"]], wheel.name
        man = json.loads(files["opsdk_op_thresholded_relu/opsdk_manifest.json"])
        assert man["python"]["ext_suffix"] == ".cpython-312-x86_64-linux-gnu.so"
        assert man["build"]["python_headers"].startswith("CPython 3.12.")
        native = wheel is wheels[0]
        assert man["platform"]["glibc_floor"] == (
            platform.libc_ver()[1] if native else "2.17"), wheel.name
