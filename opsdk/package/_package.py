"""``opsdk package``: operator folders in, one installable wheel out."""

from __future__ import annotations

import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from .._generated import BANNER
from .._isa import isa_variants
from .._prebuilt import CPU_LEVELS, FORMAT, source_hashes
from .._written import check_output, write_output
from ..ascend import DEFAULT_SOCS
from ..errors import BuildError, SpecError
from ._artefacts import Artefacts, generate_artefacts
from ._project import (
    OpSource,
    PackageName,
    copy_tree,
    left_out_files,
    package_name,
    render_project,
    resolve_operators,
    write_tree,
)
from ._targets import (
    WheelPlatform,
    parse_platforms,
    parse_pythons,
    target_python,
    zig_available,
    zig_cpu,
)
from ._wheel import WheelTarget, build_wheel, check_wheel, wheel_contents

__all__ = ["BuiltWheel", "PackageResult", "package_operators", "default_cpu_baseline",
           "make_manifest"]

Progress = Callable[[str], None]


@dataclass
class BuiltWheel:
    """One wheel of a package: for one platform and one CPython version."""

    wheel: Path
    platform: str  # the wheel's platform tag, e.g. manylinux2014_aarch64
    python: str  # the CPython version, e.g. 3.11
    manifest: dict[str, Any]
    seconds: float
    unchanged: bool = False  # an identical wheel was already in the output folder
    project: Path | None = None


@dataclass
class PackageResult:
    """What ``opsdk package`` made: one wheel per platform and Python version."""

    name: str
    version: str
    operators: list[str]
    artefacts: dict[str, list[str]]
    skipped: dict[str, str]
    seconds: float
    builds: list[BuiltWheel]

    @property
    def wheel(self) -> Path:
        """The first wheel (the only one when one platform and one Python were asked)."""
        return self.builds[0].wheel

    @property
    def wheels(self) -> list[Path]:
        return [b.wheel for b in self.builds]

    @property
    def manifest(self) -> dict[str, Any]:
        return self.builds[0].manifest

    @property
    def unchanged(self) -> bool:
        return all(b.unchanged for b in self.builds)

    @property
    def project(self) -> Path | None:
        return self.builds[0].project


def default_cpu_baseline(machine: str | None = None) -> str:
    """The portable ``-march`` of wheels for a machine: x86-64-v2 or armv8-a.

    x86-64-v2 (SSE4.2, POPCNT, CX16) runs on every x86-64 server CPU since 2009; the
    float16 paths then use the portable conversion instead of F16C (x86-64-v3).

    Example:
        >>> default_cpu_baseline("x86_64"), default_cpu_baseline("aarch64")
        ('x86-64-v2', 'armv8-a')
    """
    from .._cross import CrossTargetError, target

    try:
        return target((machine or platform.machine()).lower()).default_march
    except CrossTargetError:
        return ""


def _check_baseline(baseline: str | None, plat: WheelPlatform) -> str:
    arch = plat.target.arch
    if baseline is None:
        return plat.target.default_march
    if baseline == "native":
        raise SpecError(
            "--cpu-baseline native makes a wheel that runs only on CPUs like this one; pick a "
            "level all your hosts have: x86-64, x86-64-v2 (default), x86-64-v3, x86-64-v4, "
            "armv8-a"
        )
    if baseline and baseline not in CPU_LEVELS:
        raise SpecError(
            f"--cpu-baseline {baseline!r} is not a CPU level opsdk knows; pick one of "
            f"{', '.join(CPU_LEVELS)} (or '' for the compiler's default)"
        )
    if baseline and baseline.startswith("x86-64") != (arch == "x86_64"):
        raise SpecError(
            f"--cpu-baseline {baseline} is not a level of {arch} (--platform {plat.name}); "
            f"leave it out (default {plat.target.default_march}) or build each platform "
            "with its own opsdk package call"
        )
    return baseline


def _authors_paths(text: str, project: Path, pkg: PackageName, ops: Sequence[OpSource]) -> str:
    """A failed wheel build's message, with the compiler's diagnostics about the project's
    copy of a kernel pointed at the author's own file (and shown alone when there are any)."""
    import re

    folders = []
    for op in ops:
        copy = project / "src" / pkg.import_name / "operators" / op.snake
        for form in {str(copy), str(copy.resolve())}:
            text = text.replace(form + os.sep, str(op.folder) + os.sep)
        # relative forms too (ccache's base_dir makes the compiler print ../../src/...)
        tail = re.escape(f"src/{pkg.import_name}/operators/{op.snake}/")
        own_folder = str(op.folder) + os.sep
        text = re.sub(rf"(?<![\w/.-])(?:\.\.?/)*(?:[\w.-]+/)*?{tail}",
                      own_folder.replace("\\", "\\\\"), text)
        folders.append(str(op.folder) + os.sep)
    head, _, body = text.partition("\n")
    own = [ln.strip() for ln in body.splitlines() if ln.strip().startswith(tuple(folders))]
    return head + "\n" + "\n".join(own[:30]) if own else text


def _dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _socs(socs: Sequence[str]) -> list[str]:
    """SoC versions or compute units -> compute units (as the CANN project wants them)."""
    try:
        from opsdk.ascend import compute_unit
    except ImportError:
        return list(dict.fromkeys(socs))

    return list(dict.fromkeys(compute_unit(s) for s in socs))


@lru_cache(maxsize=1)
def _zig_version() -> str:
    from ._targets import zig_version

    return zig_version()


def _compiler(wt: WheelTarget) -> str:
    from ..build import _compiler_version, _find_cxx

    if wt.platform.manylinux:
        return f"{_zig_version()} (c++ -target {wt.platform.target.zig_target})"
    return _compiler_version(_find_cxx())


def make_manifest(
    pkg: PackageName,
    ops: Sequence[OpSource],
    *,
    wt: WheelTarget,
    cpu_baseline: str,
    socs: Sequence[str],
    artefacts: Artefacts,
) -> dict[str, Any]:
    """The manifest written into the wheel (see :mod:`opsdk._prebuilt`).

    Example:
        >>> make_manifest(pkg, ops, wt=wt, cpu_baseline="x86-64-v2", socs=["ascend910b"],
        ...               artefacts=Artefacts())["platform"]["glibc_floor"]  # doctest: +SKIP
        '2.17'
    """
    import pybind11

    from .._version import __version__
    from ..build import toolchain

    py, plat = wt.python, wt.platform
    return {
        "format": FORMAT,
        "generated": BANNER,
        "package": {"name": pkg.name, "version": pkg.version, "import_name": pkg.import_name},
        "opsdk_version": __version__,
        "api_hash": toolchain("").api_hash,
        "python": {"implementation": "cpython", "version": py.version,
                   "cache_tag": py.cache_tag, "ext_suffix": py.ext_suffix},
        "platform": {
            "system": "Linux",
            "machine": plat.target.arch,
            "tag": plat.tags[-1],
            "tags": list(plat.tags),
            "glibc_floor": plat.glibc_floor,
        },
        "cpu_baseline": cpu_baseline,
        # The baseline first, then the wider levels under operators/<op>/_isa/<level>/.
        "isa_variants": [cpu_baseline or "compiler default", *wt.isa_variants],
        "build": {
            "compiler": _compiler(wt),
            "python_headers": py.source,
            "pybind11": pybind11.__version__,
            "portable": True,
        },
        "onnx": {
            "onnx": _dist_version("onnx"),
            "onnxruntime": _dist_version("onnxruntime"),
            "opset": artefacts.onnx_opset,
        },
        "cann": {"socs": list(socs), "project": "cann" not in artefacts.skipped},
        "skipped": dict(sorted(artefacts.skipped.items())),
        "operators": {
            f"operators/{op.snake}": {
                "name": op.spec.name,
                "domain": op.spec.domain,
                "version": op.spec.version,
                "sources": source_hashes(op.folder),
                "artefacts": artefacts.listing(op.snake),
            }
            for op in ops
        },
    }


def _publish(built: Path, out_dir: Path, force: bool) -> tuple[Path, bool]:
    """Move the wheel into ``out_dir``; an existing different wheel is kept unless forced."""
    out_dir.mkdir(parents=True, exist_ok=True)
    target = check_output(out_dir / built.name, force=True, flag="--out-dir")  # no symlink
    if target.exists():
        if wheel_contents(target) == wheel_contents(built):
            return target, True
        if not force:
            raise BuildError(
                f"{target} exists with other contents; bump --version (pip will not reinstall "
                "the same version) or pass --force to replace it"
            )
    write_output(target, built.read_bytes(), force=True, flag="--out-dir")
    return target, False


@dataclass(frozen=True)
class _Job:
    """Everything one wheel build needs besides its target."""

    pkg: PackageName
    ops: list[OpSource]
    socs: list[str]
    arts: Artefacts
    exclude_sources: bool
    out_dir: Path
    force: bool
    keep: Path | None
    say: Progress


def _build_one(job: _Job, wt: WheelTarget) -> BuiltWheel:
    t0 = time.perf_counter()
    baseline = wt.cpu_baseline
    manifest = make_manifest(job.pkg, job.ops, wt=wt, cpu_baseline=baseline, socs=job.socs,
                             artefacts=job.arts)
    files = render_project(job.pkg, job.ops, cpu_baseline=baseline,
                           isa_variants=wt.isa_variants, manifest=manifest,
                           artefacts=job.arts.files, exclude_sources=job.exclude_sources)
    project = Path(tempfile.mkdtemp(prefix="opsdk-package-"))
    write_tree(project, files)
    how = (f"zig c++ for {wt.platform.target.zig_target}" if wt.platform.manylinux
           else "this host's compiler")
    wider = "".join(f" + {lv}" for lv in wt.isa_variants)
    job.say(f"compiling {len(job.ops)} kernel(s) for {job.pkg.name} {job.pkg.version}, "
            f"{wt.label} ({how}, CPU baseline {baseline or 'compiler default'}{wider}) ...")
    try:
        built = build_wheel(project, project / "dist", wt)  # on failure the project stays
    except BuildError as e:
        raise BuildError(_authors_paths(str(e), project, job.pkg, job.ops)) from None
    job.say(f"checking the {wt.label} wheel ...")
    check_wheel(built, job.pkg, job.ops, wt)
    wheel, unchanged = _publish(built, job.out_dir, job.force)
    if job.keep is not None:
        copy_tree(project, job.keep)
    shutil.rmtree(project, ignore_errors=True)
    return BuiltWheel(wheel, wt.platform.tags[-1], wt.python.version, manifest,
                      time.perf_counter() - t0, unchanged, job.keep)


def _targets(platforms: Sequence[str] | None, pythons: str | Sequence[str] | None,
             cpu_baseline: str | None, isa: Sequence[str] | None,
             say: Progress) -> list[WheelTarget]:
    """Every (platform, Python) pair to build, with its CPU baseline and ISA variants;
    checked up front."""
    out = []
    for plat in parse_platforms(platforms):
        baseline = _check_baseline(cpu_baseline, plat)
        wider = tuple(isa_variants(isa, plat.target.arch, baseline))
        if plat.manylinux:
            missing = zig_available()
            if missing:
                raise BuildError(missing)
            zig_cpu(baseline)  # a level zig knows
        for version in parse_pythons(pythons):
            out.append(WheelTarget(plat, target_python(plat, version, say), baseline, wider))
    return out


def package_operators(
    operators: Sequence[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str] = "dist",
    *,
    name: str | None = None,
    version: str = "0.1.0",
    platforms: Sequence[str] | None = None,
    python: str | Sequence[str] | None = None,
    socs: Sequence[str] = DEFAULT_SOCS,
    cpu_baseline: str | None = None,
    isa: Sequence[str] | None = None,
    onnx: bool = True,
    cann: bool = True,
    exclude_sources: bool = False,
    keep_project: str | os.PathLike[str] | None = None,
    force: bool = False,
    progress: Progress | None = None,
    opset: int | None = None,
) -> PackageResult:
    """Build wheels of the given operators with prebuilt, portable kernels: one per
    platform (default: manylinux2014 of this machine) and CPython version (default: this
    interpreter's). Each kernel is compiled for ``cpu_baseline`` and for the wider levels
    ``isa`` (default: all above the baseline, x86-64-v3 and x86-64-v4 on x86_64; ``[]``:
    the baseline only); the loader picks the widest one the CPU supports. ``opset`` is the
    ai.onnx opset of the fallback functions (default: the lowest they all need, 15 or more).

    Example:
        >>> res = package_operators(["operators/my_op", "operators/other"], "dist",
        ...                         name="acme-ops", version="1.2.0",
        ...                         platforms=["manylinux2014_x86_64",
        ...                                    "manylinux2014_aarch64"])  # doctest: +SKIP
        >>> [w.name for w in res.wheels]  # doctest: +SKIP
        ['acme_ops-1.2.0-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl',
         'acme_ops-1.2.0-cp311-cp311-manylinux2014_aarch64.manylinux_2_17_aarch64.whl']
    """
    t0 = time.perf_counter()
    say = progress or (lambda _msg: None)
    ops = resolve_operators(operators)
    for op in ops:  # what ships, checked before anything is compiled (symlinks refused)
        left = left_out_files(op.folder)
        if left:
            say(f"{op.spec.name}: not shipped (see docs/packaging.md): {', '.join(left)}")
    pkg = package_name(name, version, ops)
    if keep_project is not None and Path(keep_project).exists():
        raise BuildError(f"--keep-project {keep_project}: it exists; opsdk never overwrites a "
                         "folder, name a new one")
    targets = _targets(platforms, python, cpu_baseline, isa, say)
    unit_socs = _socs(socs)
    arts = generate_artefacts([o.spec for o in ops], onnx=onnx, cann=cann, socs=unit_socs,
                              folders=[o.folder for o in ops], opset=opset)
    builds = []
    for wt in targets:
        keep = None if keep_project is None else Path(keep_project)
        if keep is not None and len(targets) > 1:
            keep = keep / wt.label
        job = _Job(pkg, ops, unit_socs, arts, exclude_sources, Path(out_dir), force, keep, say)
        builds.append(_build_one(job, wt))
    return PackageResult(
        name=pkg.name,
        version=pkg.version,
        operators=[o.qualified for o in ops],
        artefacts={o.qualified: arts.listing(o.snake) for o in ops},
        skipped=dict(arts.skipped),
        seconds=time.perf_counter() - t0,
        builds=builds,
    )
