"""Operator wheels and opsdk's own distribution, for real.

- `opsdk package` builds a wheel of three operators (the shipped ThresholdedRelu and Gelu,
  and one scaffolded here) with scikit-build-core, for manylinux2014 of this machine (the
  default: zig c++, glibc 2.17); the wheel holds portable kernels, specs, references,
  tests, ONNX schemas, CANN projects and a manifest.
- The same sources built again elsewhere give the same files with the same contents.
- opsdk's own sdist and wheel carry the templates, the CMake module, the C++ API and the
  shipped operators; installed in a fresh venv, `opsdk new` + `opsdk build` work there.
- In that venv the operator wheel is installed and its operators are found by name, run,
  tested (`opsdk test`) and listed (`opsdk list`) with every compiler and CMake replaced
  by a tripwire: nothing is compiled after the wheel was built.
"""

from __future__ import annotations

import json
import os
import platform
import random
import re
import shutil
import string
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from opsdk import _prebuilt as _manifest
from opsdk._isa import WIDER_LEVELS
from opsdk.naming import snake_case
from opsdk.package import (
    PackageResult,
    default_cpu_baseline,
    package_operators,
    wheel_contents,
)
from opsdk.scaffold import new_operator, parse_attrs, parse_io

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
EXT = sysconfig.get_config_var("EXT_SUFFIX")
IGNORE = shutil.ignore_patterns(".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__",
                                ".*cache", "*.so", "*.o", "_data")


def run(cmd: list[str | Path], **kw: Any) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


# -------------------------------------------------------------------- operator wheel
@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("authoring") / "operators"
    demo = new_operator("PkgDemo", inputs=parse_io(["x:float16,float32"]),
                        outputs=parse_io(["y"]), attrs=parse_attrs(["gain:float=1.5"]),
                        domain="com.example.pkgdemo", root=root)
    return [REPO / "operators" / "thresholded_relu", REPO / "operators" / "gelu", demo]


@pytest.fixture(scope="module")
def built(sources: list[Path], tmp_path_factory: pytest.TempPathFactory) -> PackageResult:
    out = tmp_path_factory.mktemp("dist")
    return package_operators(sources, out, name="acme-ops", version="1.2.0")


def test_wheel_holds_kernels_specs_tests_artefacts_and_manifest(built: PackageResult) -> None:
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    assert built.wheel.name.startswith(f"acme_ops-1.2.0-{tag}-")
    files = wheel_contents(built.wheel)
    ops = "acme_ops/operators"
    for snake in ("thresholded_relu", "gelu", "pkg_demo"):
        for name in (f"_opsdk_kernels{EXT}", "spec.py", "reference.py", "kernel.cpp",
                     f"test_{snake}.py", "onnx/schema.json"):
            assert f"{ops}/{snake}/{name}" in files, f"{snake}/{name} missing"
        if "cann" not in built.skipped:
            assert f"{ops}/{snake}/cann/msopgen/aicpu.json" in files
    assert f"{ops}/thresholded_relu/onnx/function.onnx" in files
    assert not [n for n in files if "__pycache__" in n or n.endswith(".pyc")]
    eps = next(d for n, d in files.items() if n.endswith("entry_points.txt")).decode()
    assert "[opsdk.operators]\nacme_ops = acme_ops:operator_folders" in eps
    meta = next(d for n, d in files.items() if n.endswith(".dist-info/METADATA")).decode()
    assert "Requires-Dist: opsdk<0.2,>=0.1" in meta or "Requires-Dist: opsdk>=0.1,<0.2" in meta

    man = json.loads(files["acme_ops/opsdk_manifest.json"])
    assert man["package"] == {"name": "acme-ops", "version": "1.2.0", "import_name": "acme_ops"}
    assert man["python"]["ext_suffix"] == EXT
    machine = platform.machine()
    assert man["platform"]["tags"] == [f"manylinux_2_17_{machine}", f"manylinux2014_{machine}"]
    assert built.wheel.name.endswith(f"-{'.'.join(sorted(man['platform']['tags']))}.whl")
    assert man["platform"]["glibc_floor"] == "2.17"
    assert man["cpu_baseline"] == default_cpu_baseline()
    wider = WIDER_LEVELS[machine]
    assert man["isa_variants"] == [default_cpu_baseline(), *wider]
    for snake in ("thresholded_relu", "gelu", "pkg_demo"):
        for level in wider:
            variant = files[f"{ops}/{snake}/_isa/{level}/_opsdk_kernels{EXT}"]
            assert variant != files[f"{ops}/{snake}/_opsdk_kernels{EXT}"], f"{snake} {level}"
    assert set(man["operators"]) == {"operators/thresholded_relu", "operators/gelu",
                                     "operators/pkg_demo"}
    assert man["operators"]["operators/pkg_demo"]["name"] == "PkgDemo"
    assert set(man["operators"]["operators/pkg_demo"]["sources"]) >= {"spec.py", "kernel.cpp"}
    from importlib import metadata

    assert man["onnx"]["onnx"] == metadata.version("onnx")
    assert man["cann"]["socs"] == ["ascend910b"]


def test_kernels_are_portable_and_carry_no_build_paths(built: PackageResult) -> None:
    files = wheel_contents(built.wheel)
    for snake in ("thresholded_relu", "gelu", "pkg_demo"):
        so = files[f"acme_ops/operators/{snake}/_opsdk_kernels{EXT}"]
        assert b"libstdc++.so" not in so, "libstdc++ should be linked statically"
        for leak in (b"opsdk-package-", str(REPO).encode(), tempfile.gettempdir().encode()):
            assert leak not in so, f"{snake}: the kernel contains the build path {leak!r}"


def test_same_sources_give_the_same_wheel(
    built: PackageResult, sources: list[Path], tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    elsewhere = tmp_path_factory.mktemp("another checkout") / "deeper" / "operators"
    copies = [shutil.copytree(s, elsewhere / s.name, ignore=IGNORE) for s in sources]
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path_factory.mktemp("other-tmp")))
    again = package_operators(copies, tmp_path_factory.mktemp("dist2"), name="acme-ops",
                              version="1.2.0")
    first, second = wheel_contents(built.wheel), wheel_contents(again.wheel)
    assert sorted(first) == sorted(second)
    differ = [n for n in first if first[n] != second[n]]
    assert not differ, f"files differ between two builds of the same sources: {differ}"
    # SOURCE_DATE_EPOCH fixes the timestamps too, so the archives are byte-identical.
    assert built.wheel.read_bytes() == again.wheel.read_bytes()


# --------------------------------------------------------------------- opsdk's own dist
@pytest.fixture(scope="module")
def sdk_dists(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """opsdk's sdist built from a copy of this tree, and its wheel built from that sdist."""
    tmp = tmp_path_factory.mktemp("sdk")
    src = shutil.copytree(REPO, tmp / "src", ignore=IGNORE)
    out = tmp / "out"
    hook = "import sys, setuptools.build_meta as b; print(getattr(b, sys.argv[1])(sys.argv[2]))"
    sdist = out / run([sys.executable, "-c", hook, "build_sdist", out], cwd=src
                      ).stdout.strip().splitlines()[-1]
    with tarfile.open(sdist) as tf:
        if hasattr(tarfile, "data_filter"):
            tf.extractall(tmp / "unpacked", filter="data")
        else:  # pragma: no cover - Python < 3.10.12
            tf.extractall(tmp / "unpacked")
    unpacked = next((tmp / "unpacked").iterdir())
    wheel = out / run([sys.executable, "-c", hook, "build_wheel", out], cwd=unpacked
                      ).stdout.strip().splitlines()[-1]
    return sdist, wheel


def test_sdk_sdist_and_wheel_carry_templates_cmake_headers_and_operators(
    sdk_dists: tuple[Path, Path],
) -> None:
    sdist, wheel = sdk_dists
    with tarfile.open(sdist) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    assert {"setup.py", "templates/operator/cookiecutter.json", "cmake/OpsdkOperator.cmake",
            "operators/thresholded_relu/kernel.cpp", "opsdk/include/opsdk/custom_op.h",
            "opsdk/csrc/entry.cpp", "opsdk/csrc/runtime.cpp", "opsdk/csrc/harness.cpp",
            "opsdk/include/opsdk/invoke.h"} <= names
    files = wheel_contents(wheel)
    data = "opsdk/_data"
    assert {f"{data}/templates/operator/cookiecutter.json", f"{data}/cmake/OpsdkOperator.cmake",
            f"{data}/operators/thresholded_relu/spec.py",
            f"{data}/operators/thresholded_relu/kernel.cpp", "opsdk/include/opsdk/custom_op.h",
            "opsdk/csrc/entry.cpp", "opsdk/csrc/runtime.cpp", "opsdk/csrc/harness.cpp",
            "opsdk/include/opsdk/invoke.h",
            "opsdk/package/templates/pyproject.toml.jinja"} <= set(files)
    template = f"{data}/templates/operator/{{{{cookiecutter.snake_name}}}}/kernel.cpp"
    assert template in files
    assert not [n for n in files if "__pycache__" in n or n.endswith((".pyc", ".so", ".o"))]


@pytest.fixture(scope="module")
def venv(sdk_dists: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding opsdk installed from its wheel. Its dependencies (numpy, onnx,
    pybind11, cmake ...) are reached through a .pth naming this environment's
    site-packages: nothing is downloaded, and this environment's own opsdk (an editable
    install) stays invisible, since .pth files of those folders are not processed."""
    root = tmp_path_factory.mktemp("venv") / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", root])
    py = root / "bin" / "python"
    site = Path(run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]
                    ).stdout.strip())
    parents = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))
               and Path(p).is_dir()]
    (site / "_opsdk_test_deps.pth").write_text("\n".join(parents) + "\n")
    # cwd: `python -c` puts the working directory first on sys.path (a checkout's opsdk/)
    run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--ignore-installed",
         sdk_dists[1]], env=clean_env(root), cwd=root)
    where = run([py, "-c", "import opsdk; print(opsdk.__file__)"], env=clean_env(root), cwd=root)
    assert where.stdout.strip().startswith(str(site)), where.stdout
    return root


def clean_env(venv: Path, **extra: str) -> dict[str, str]:
    """The environment of a command in the venv: no PYTHONPATH, no user site."""
    keep = ("HOME", "LANG", "LC_ALL", "TMPDIR", "OPSDK_CACHE_DIR")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
               PYTHONNOUSERSITE="1", VIRTUAL_ENV=str(venv))
    env.update(extra)
    return env


INSTALLED_PATHS = """\
import opsdk, opsdk._paths as p
from opsdk.package import cmake_dir
print(p.data_dir("templates")); print(cmake_dir()); print(p.include_dir())
"""

RUN_NEW_OP = """\
import sys
import numpy as np, opsdk
op = opsdk.load(sys.argv[1])
x = np.linspace(-1, 1, 10, dtype=np.float32)
np.testing.assert_allclose(op(x), op.reference(x, **op.spec.resolve_attrs({})))
print("ok")
"""


def test_installed_sdk_scaffolds_and_builds_an_operator(venv: Path, tmp_path: Path) -> None:
    # This session's build cache: its key covers the contents of the installed C++ API, so
    # the entry point object other tests built is reused, while the kernel of an operator
    # with a name never used before is compiled against the installed headers by the
    # installed CMake glue.
    from opsdk.build import cache_dir

    name = "SdkDemo" + "".join(random.choices(string.ascii_lowercase, k=8))
    env = clean_env(venv, OPSDK_CACHE_DIR=str(cache_dir()))
    site_opsdk = Path(run([venv / "bin" / "python", "-c", "import opsdk; print(opsdk.__file__)"],
                          env=env, cwd=tmp_path).stdout.strip()).parent
    for line in run([venv / "bin" / "python", "-c", INSTALLED_PATHS], env=env,
                    cwd=tmp_path).stdout.split():
        assert Path(line).is_relative_to(site_opsdk), f"{line} is not in the installed copy"
    work = tmp_path / "work"
    work.mkdir()
    run([venv / "bin" / "opsdk", "new", name, "--domain", "com.example.sdk"], env=env, cwd=work)
    # the installed copy starts an operator project in a folder of the user's
    assert "[tool.opsdk]" in (work / "pyproject.toml").read_text()
    assert (work / "operators" / snake_case(name) / "spec.py").is_file()
    try:
        out = run([venv / "bin" / "opsdk", "build", name], env=env, cwd=work).stdout
        assert f"{name}: built" in out
        assert run([venv / "bin" / "python", "-c", RUN_NEW_OP, name], env=env,
                   cwd=work).stdout == "ok\n"
    finally:
        shutil.rmtree(cache_dir() / "ops" / snake_case(name), ignore_errors=True)


# ------------------------------------------------- the operator wheel in the fresh venv
TRIPWIRE = """\
#!/bin/sh
echo "$0 $*" >> "{marker}"
exit 1
"""

RUN_WHEEL_OPS = """\
import json, sys
import numpy as np
import opsdk

found = {}
for name in ("ThresholdedRelu", "Gelu", "pkg_demo", "com.example.pkgdemo::PkgDemo"):
    op = opsdk.load(name)
    for dt in (np.float16, np.float32):
        x = np.linspace(-3, 3, 101, dtype=dt).reshape(1, 101)
        attrs = op.spec.resolve_attrs({})
        np.testing.assert_allclose(op(x).astype(np.float64),
                                   np.asarray(op.reference(x, **attrs), np.float64), rtol=1e-3,
                                   atol=1e-3)
    found[name] = str(op.folder)
print(json.dumps(found))
"""


def test_operator_wheel_in_a_fresh_venv_never_compiles(
    venv: Path, built: PackageResult, tmp_path: Path,
) -> None:
    py, opsdk_cli = venv / "bin" / "python", venv / "bin" / "opsdk"
    run([py, "-m", "pip", "install", "-q", "--no-index", "--find-links", built.wheel.parent,
         "acme-ops==1.2.0"], env=clean_env(venv), cwd=tmp_path)

    # From here on every compiler, linker and build tool is a tripwire.
    poison = tmp_path / "poison"
    poison.mkdir()
    marker = tmp_path / "compiler-was-called"
    for tool in ("c++", "g++", "gcc", "cc", "clang", "clang++", "cmake", "ninja", "make", "ld"):
        (poison / tool).write_text(TRIPWIRE.format(marker=marker))
        (poison / tool).chmod(0o755)
    cache = tmp_path / "cache"
    env = clean_env(venv, PATH=f"{venv / 'bin'}{os.pathsep}{poison}", CXX=str(poison / "c++"),
                    CC=str(poison / "cc"), OPSDK_CACHE_DIR=str(cache))
    work = tmp_path / "work"  # no ./operators here: only the wheel and the shipped operators
    work.mkdir()

    found = json.loads(run([py, "-c", RUN_WHEEL_OPS], env=env, cwd=work).stdout)
    site = run([py, "-c", "import acme_ops; print(acme_ops.__file__)"], env=env, cwd=work).stdout
    pkg_dir = Path(site.strip()).parent
    assert found == {
        "ThresholdedRelu": str(pkg_dir / "operators" / "thresholded_relu"),
        "Gelu": str(pkg_dir / "operators" / "gelu"),
        "pkg_demo": str(pkg_dir / "operators" / "pkg_demo"),
        "com.example.pkgdemo::PkgDemo": str(pkg_dir / "operators" / "pkg_demo"),
    }

    for name in ("ThresholdedRelu", "Gelu", "PkgDemo"):
        out = run([opsdk_cli, "test", name, "-q", "-p", "no:cacheprovider"], env=env,
                  cwd=work).stdout
        passed = re.search(r"(\d+) passed", out)  # and exit code 0: nothing failed
        assert passed and int(passed[1]) > 0, out

    listing = run([opsdk_cli, "list"], env=env, cwd=work).stdout
    rows = {line.split()[0]: line for line in listing.splitlines()[1:]}
    assert "wheel (acme-ops)" in rows["PkgDemo"]
    assert "wheel (acme-ops); shadows shipped" in rows["ThresholdedRelu"]
    assert "wheel (acme-ops); shadows shipped" in rows["Gelu"]
    as_json = {o["name"]: o for o in json.loads(
        run([opsdk_cli, "list", "--json"], env=env, cwd=work).stdout)}
    assert as_json["PkgDemo"]["prebuilt"] == str(pkg_dir / "operators" / "pkg_demo" /
                                                 f"_opsdk_kernels{EXT}")

    assert not marker.exists(), "a compiler ran:\n" + marker.read_text()
    assert not cache.exists(), f"opsdk built something: {sorted(cache.rglob('*'))}"


def best_variant(built: PackageResult) -> str:
    """The folder (relative to an operator folder) of the widest kernel this CPU runs."""
    flags = _manifest._cpu_flags() or frozenset()
    usable = [lv for lv in built.manifest["isa_variants"][1:]
              if set(_manifest.CPU_LEVELS[lv]) <= flags]
    return f"_isa/{usable[-1]}/" if usable else ""


ISA_OUTPUTS = """\
import sys
import numpy as np
import opsdk
from opsdk.registry import find_operator

outputs = {}
for name in ("ThresholdedRelu", "Gelu", "PkgDemo"):
    op = opsdk.load(name)
    for dt in (np.float16, np.float32):
        x = (np.random.default_rng(7).standard_normal(100_003) * 4).astype(dt)
        outputs[name + "-" + np.dtype(dt).name] = op(x)
np.savez(sys.argv[1], prebuilt=str(find_operator("Gelu").prebuilt), **outputs)
"""


def test_the_widest_isa_variant_loads_and_opsdk_isa_forces_the_baseline(
    venv: Path, built: PackageResult, tmp_path: Path,
) -> None:
    from opsdk.testing import compare, standard_for

    py = venv / "bin" / "python"
    run([py, "-m", "pip", "install", "-q", "--no-index", "--find-links", built.wheel.parent,
         "acme-ops==1.2.0"], env=clean_env(venv), cwd=tmp_path)
    results = {}
    for forced in ("", "baseline"):
        out = tmp_path / f"isa-{forced or 'auto'}.npz"
        run([py, "-c", ISA_OUTPUTS, out], env=clean_env(venv, OPSDK_ISA=forced), cwd=tmp_path)
        results[forced] = dict(np.load(out))
    auto, base = results[""], results["baseline"]
    gelu = Path(str(base["prebuilt"])).parent
    assert str(base["prebuilt"]) == str(gelu / f"_opsdk_kernels{EXT}")
    assert str(auto["prebuilt"]) == str(gelu / f"{best_variant(built)}_opsdk_kernels{EXT}")
    for key in sorted(k for k in auto if k != "prebuilt"):
        verdict = compare(auto[key], base[key], standard_for(str(base[key].dtype)))
        assert verdict.passed, f"{key}: {verdict.reason}"


def test_a_wheel_for_another_opsdk_is_refused_clearly(venv: Path, built: PackageResult,
                                                     tmp_path: Path) -> None:
    """A kernel built for another opsdk minor version: a ManifestError naming both versions
    and the fix, at opsdk.load, never an import crash."""
    target = tmp_path / "unpacked"
    run([venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps", "--no-index",
         "--target", target, built.wheel], env=clean_env(venv), cwd=tmp_path)
    man = target / "acme_ops" / "opsdk_manifest.json"
    data = json.loads(man.read_text())
    data["opsdk_version"] = "0.9.0"
    man.write_text(json.dumps(data))
    code = textwrap.dedent("""
        import opsdk
        try:
            opsdk.load("PkgDemo")
        except opsdk.ManifestError as e:
            print(e)
    """)
    out = run([venv / "bin" / "python", "-c", code],
              env=clean_env(venv, PYTHONPATH=str(target)), cwd=tmp_path).stdout
    assert "acme-ops 1.2.0 (pkg_demo): prebuilt kernel unusable here: built with opsdk 0.9.0" in out
    assert "Fix: install a build of this package made for this environment" in out


def test_a_compile_error_points_at_the_authors_kernel(tmp_path: Path) -> None:
    from opsdk.errors import BuildError

    op = new_operator("BrokenPkg", inputs=parse_io(["x:float32"]), outputs=parse_io(["y"]),
                      domain="com.example.broken", root=tmp_path / "operators")
    kernel = op / "kernel.cpp"
    lines = kernel.read_text().splitlines()
    at = next(i for i, ln in enumerate(lines) if "mutable_data" in ln)
    lines.insert(at, "  this_is_not_declared = 1;")
    kernel.write_text("\n".join(lines) + "\n")
    with pytest.raises(BuildError) as exc:
        package_operators([op], tmp_path / "dist", cann=False, onnx=False)
    message = str(exc.value)
    assert f"{kernel}:{at + 1}:" in message, message
    assert "opsdk-package-" not in message.split("\n", 1)[1], message
