"""`opsdk package` without compiling: names, inputs, the generated project, artefacts, and
the manifest checks that guard a prebuilt kernel (through the registry, as opsdk.load runs
them). The real wheel builds are in test_package_wheel.py.

Goldens live in tests/golden/package/; regenerate them with OPSDK_UPDATE_GOLDEN=1.
"""

from __future__ import annotations

import json
import platform
import sys
import sysconfig
import zipfile
from pathlib import Path
from typing import Any

import pytest

import opsdk
from opsdk import _prebuilt as _manifest
from opsdk._isa import ISA_ENV, isa_variants
from opsdk.cli import main
from opsdk.errors import BuildError, ManifestError, OperatorNotFound, SpecError
from opsdk.package import (
    BANNER,
    MANIFEST_NAME,
    default_cpu_baseline,
    generate_artefacts,
    host_environment,
    package_name,
    parse_platforms,
    parse_pythons,
    render_project,
    target_python,
    verify_prebuilt,
)
from opsdk.package._package import _publish
from opsdk.package._project import operator_files, resolve_operators
from opsdk.package._targets import zig_cpu
from opsdk.registry import find_operator, find_operators
from tests._helpers.golden import check_golden
from tests._helpers.op_folders import make_op

EXT = sysconfig.get_config_var("EXT_SUFFIX")





# ----------------------------------------------------------------------------- names
@pytest.mark.parametrize(
    ("name", "version", "want"),
    [
        ("acme-ops", "1.2.0", ("acme-ops", "acme_ops", "1.2.0")),
        ("Acme.Ops_X", "1.2", ("Acme.Ops_X", "acme_ops_x", "1.2")),
        ("ops", "01.02.0rc1", ("ops", "ops", "1.2.0rc1")),
    ],
)
def test_package_names_and_versions(name, version, want):
    pkg = package_name(name, version, [])
    assert (pkg.name, pkg.import_name, pkg.version) == want


@pytest.mark.parametrize(
    ("name", "version", "match"),
    [
        ("-acme", "1.0", r"--name '-acme' is not a valid package name"),
        ("acme ops", "1.0", r"--name 'acme ops' is not a valid package name"),
        ("9ops", "1.0", r"import name '9ops' is not usable"),
        ("opsdk", "1.0", r"import name 'opsdk' is not usable"),
        ("acme", "one", r"--version 'one' is not a valid Python package version"),
    ],
)
def test_bad_package_names_and_versions_are_refused(name, version, match):
    with pytest.raises(SpecError, match=match):
        package_name(name, version, [])


def test_default_name_for_one_operator_and_required_for_several(tmp_path):
    ops = resolve_operators([make_op(tmp_path, "PkgOne"), make_op(tmp_path, "PkgTwo")])
    assert package_name(None, "1.0", ops[:1]).name == "opsdk-op-pkg-one"
    with pytest.raises(SpecError, match=r"packaging 2 operators \(PkgOne, PkgTwo\) needs a "
                                        r"package name: pass --name"):
        package_name(None, "1.0", ops)


def test_cpu_baselines():
    assert default_cpu_baseline("x86_64") == "x86-64-v2"
    assert default_cpu_baseline("AMD64") == "x86-64-v2"
    assert default_cpu_baseline("aarch64") == "armv8-a"
    assert default_cpu_baseline("riscv64") == ""


# ----------------------------------------------------------------------------- inputs
def test_operator_inputs_are_checked(tmp_path):
    a = make_op(tmp_path / "a", "PkgDup")
    b = make_op(tmp_path / "b", "PkgDup")
    with pytest.raises(SpecError, match=r"com.example.pkgtest::PkgDup .* and "
                                        r"com.example.pkgtest::PkgDup .* would both be"):
        resolve_operators([a, b])
    with pytest.raises(OperatorNotFound, match=r"not an operator folder \(no spec.py\)"):
        resolve_operators([tmp_path / "a"])
    with pytest.raises(OperatorNotFound, match=r"give at least one operator"):
        resolve_operators([])
    (a / "kernel.cpp").unlink()
    with pytest.raises(BuildError, match=r"no C\+\+ source \(expected kernel.cpp\)"):
        resolve_operators([a])


def test_a_folder_clashing_with_generated_artefacts_is_refused(tmp_path):
    op = make_op(tmp_path, "PkgClash")
    (op / "cann").mkdir()
    with pytest.raises(SpecError, match=r"PkgClash: .*cann exists, but opsdk package generates "
                                        r"cann/ into the wheel"):
        resolve_operators([op])


def test_operators_are_found_by_name_too():
    (op,) = resolve_operators(["ThresholdedRelu"])
    assert op.qualified == "com.opsdk::ThresholdedRelu"
    assert (op.folder / "spec.py").is_file()


def test_operator_files_leave_out_caches_and_binaries(tmp_path):
    op = make_op(tmp_path, "PkgFiles")
    for junk in ("__pycache__/spec.cpython-311.pyc", "build/x.o", ".hidden", f"_opsdk_kernels{EXT}",
                 "kernel.o"):
        (op / junk).parent.mkdir(parents=True, exist_ok=True)
        (op / junk).write_text("junk")
    (op / "include").mkdir()
    (op / "include" / "helper.h").write_text("// helper\n")
    assert sorted(operator_files(op)) == ["include/helper.h", "kernel.cpp", "reference.py",
                                          "spec.py"]


# -------------------------------------------------------------------- generated project
def _rendered(tmp_path: Path, **kw: Any) -> dict[str, bytes]:
    ops = resolve_operators([make_op(tmp_path, "PkgAlpha"), make_op(tmp_path, "PkgBeta")])
    pkg = package_name("acme-ops", "1.2.0", ops)
    manifest = {"python": {"cache_tag": "cpython-3xx"}, "platform": {"tag": "manylinux2014_arch"}}
    return render_project(pkg, ops, cpu_baseline="x86-64-v2",
                          isa_variants=("x86-64-v3", "x86-64-v4"), manifest=manifest,
                          artefacts={"pkg_alpha": {"onnx/schema.json": b"{}"}}, **kw)


def test_generated_project_matches_goldens(tmp_path):
    files = _rendered(tmp_path)
    for name in ("pyproject.toml", "CMakeLists.txt", "README.md", "src/acme_ops/__init__.py"):
        text = files[name].decode()
        assert BANNER in text.splitlines()[0], f"{name} lacks the banner"
        check_golden("package/" + name.replace("/", "__") + ".golden", text)


def test_generated_project_is_self_contained(tmp_path):
    files = _rendered(tmp_path)
    assert "cmake/OpsdkOperator.cmake" in files
    assert "opsdk_api/include/opsdk/custom_op.h" in files
    assert "opsdk_api/csrc/entry.cpp" in files
    assert "opsdk_api/csrc/runtime.cpp" in files
    assert "opsdk_api/include/opsdk/invoke.h" in files
    ops = "src/acme_ops/operators"
    assert {f"{ops}/pkg_alpha/spec.py", f"{ops}/pkg_alpha/kernel.cpp",
            f"{ops}/pkg_alpha/onnx/schema.json", f"{ops}/pkg_beta/reference.py"} <= set(files)
    assert json.loads(files["src/acme_ops/opsdk_manifest.json"])["python"]["cache_tag"] == (
        "cpython-3xx"
    )
    assert b"wheel.exclude" not in files["pyproject.toml"]
    excluded = _rendered(tmp_path / "x", exclude_sources=True)["pyproject.toml"].decode()
    assert 'wheel.exclude = ["operators/*/*.cpp", "operators/*/*.cc"' in excluded


def test_entry_point_function_lists_the_operator_folders(tmp_path):
    files = _rendered(tmp_path)
    init = tmp_path / "pkg" / "__init__.py"
    init.parent.mkdir()
    init.write_bytes(files["src/acme_ops/__init__.py"])
    ns: dict[str, Any] = {"__file__": str(init)}
    exec(compile(init.read_text(), str(init), "exec"), ns)
    assert ns["operator_folders"]() == [init.parent / "operators" / "pkg_alpha",
                                        init.parent / "operators" / "pkg_beta"]


# --------------------------------------------------------------------------- artefacts
def test_artefacts_of_thresholded_relu():
    spec = find_operator("ThresholdedRelu").spec
    arts = generate_artefacts([spec], socs=["ascend910b"])
    files = arts.files["thresholded_relu"]
    schema = json.loads(files["onnx/schema.json"])
    assert (schema["domain"], schema["name"], schema["since_version"]) == (
        "com.opsdk", "ThresholdedRelu", 1)
    assert schema["attributes"] == [
        {"name": "alpha", "type": "float", "required": False, "default": 1.0}]
    assert schema["type_constraints"] == [
        {"type_param": "T", "allowed_types": ["tensor(float16)", "tensor(float)"]}]
    assert "onnx/function.onnx" in files  # ThresholdedRelu has a fallback decomposition
    assert "cann/aicpu/cpukernel/impl/thresholded_relu_kernels.cc" in files
    assert "cann/aicpu/opsdk/kernels/thresholded_relu.cpp" in files
    assert arts.skipped == {}
    off = generate_artefacts([spec], onnx=False, cann=False)
    assert off.files["thresholded_relu"] == {}
    assert off.skipped == {"onnx": "disabled (--no-onnx)", "cann": "disabled (--no-cann)"}


# ----------------------------------------------------------------- the manifest checks
def fake_package(root: Path, name: str = "PkgMan", glibc: str = "2.17",
                 **overrides: Any) -> Path:
    """An installed-package layout with a manifest and a stand-in kernel file (never loaded:
    every check here fails, or passes, before an import)."""
    pkg = root / "acme_ops"
    folder = make_op(pkg / "operators", name)
    (folder / f"_opsdk_kernels{EXT}").write_bytes(b"\x7fELF...GLIBC_" + glibc.encode() + b"\x00")
    host = host_environment()
    man: dict[str, Any] = {
        "format": 1,
        "package": {"name": "acme-ops", "version": "1.2.0", "import_name": "acme_ops"},
        "opsdk_version": opsdk.__version__,
        "python": host["python"],
        "platform": {"system": host["platform"]["system"], "machine": host["platform"]["machine"],
                     "tag": "manylinux2014_" + host["platform"]["machine"], "glibc_floor": "2.17"},
        "cpu_baseline": "x86-64",
        "operators": {f"operators/{folder.name}": {
            "name": name, "sources": _manifest.source_hashes(folder)}},
    }
    for key, value in overrides.items():
        section, _, field = key.partition("__")
        if field:
            man[section][field] = value
        else:
            man[section] = value
    (pkg / MANIFEST_NAME).write_text(json.dumps(man))
    return folder


def test_a_matching_manifest_passes(tmp_path):
    folder = fake_package(tmp_path)
    module = folder / f"_opsdk_kernels{EXT}"
    assert verify_prebuilt(folder, module, package="acme-ops") == module
    assert find_operator(str(folder)).prebuilt == module


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"opsdk_version": "7.3.0"},
         r"built with opsdk 7.3.0, this is opsdk .* \(major.minor differ\)"),
        ({"python__ext_suffix": ".cpython-39-x86_64-linux-gnu.so", "python__cache_tag": "cpython-39"},
         r"built for Python cpython-39 \(modules \*.cpython-39-x86_64-linux-gnu.so\), this is "),
        ({"platform__machine": "sparc64"}, r"built for \w+ sparc64, this host is"),
        ({"format": 99}, r"manifest format 99, this opsdk reads format 1; rebuild"),
    ],
)
def test_a_mismatch_is_a_manifest_error_at_load(tmp_path, overrides, match):
    folder = fake_package(tmp_path, **overrides)
    with pytest.raises(ManifestError, match=match):
        opsdk.load(str(folder))
    with pytest.raises(ManifestError, match=r"acme[-_]ops"):
        find_operator(str(folder))


def test_every_problem_is_listed_with_the_fix(tmp_path):
    folder = fake_package(tmp_path, opsdk_version="7.3.0", platform__system="Plan9")
    with pytest.raises(ManifestError) as e:
        find_operator(str(folder))
    msg = str(e.value)
    assert msg.startswith("acme-ops 1.2.0 (pkg_man): prebuilt kernel unusable here: ")
    assert "opsdk 7.3.0" in msg and "built for Plan9" in msg
    assert "Fix: install a build of this package made for this environment" in msg


def test_a_spec_edited_after_packaging_is_refused(tmp_path):
    folder = fake_package(tmp_path)
    (folder / "spec.py").write_text((folder / "spec.py").read_text() + "\n# edited\n")
    with pytest.raises(ManifestError, match=r"spec.py was modified after packaging"):
        find_operator(str(folder))


def test_a_kernel_needing_a_newer_glibc_is_refused(tmp_path):
    folder = fake_package(tmp_path, glibc="9.99")
    with pytest.raises(ManifestError, match=r"needs glibc 9.99, this host has glibc"):
        find_operator(str(folder))


def test_a_host_below_the_wheels_glibc_floor_is_refused_naming_both(tmp_path, monkeypatch):
    folder = fake_package(tmp_path)
    monkeypatch.setattr(_manifest.platform, "libc_ver", lambda: ("glibc", "2.12"))
    with pytest.raises(ManifestError) as e:
        find_operator(str(folder))
    msg = str(e.value)
    assert "built for glibc >= 2.17 (manylinux2014_" in msg and "this host has glibc 2.12" in msg
    assert "Fix: install a build of this package made for this environment" in msg
    assert "manylinux2014_<arch>` serves glibc 2.17 and newer" in msg
    assert "needs glibc 2.17" not in msg  # one message for one problem
    monkeypatch.setattr(_manifest.platform, "libc_ver", lambda: ("glibc", "2.17"))
    _manifest._VERIFIED.clear()
    assert find_operator(str(folder)).prebuilt is not None


def test_a_cpu_without_the_baseline_is_refused(tmp_path, monkeypatch):
    folder = fake_package(tmp_path, cpu_baseline="x86-64-v3")
    monkeypatch.setattr(_manifest, "_cpu_flags", lambda: frozenset(_manifest.CPU_LEVELS["x86-64-v2"]))
    with pytest.raises(ManifestError, match=r"compiled for CPU baseline x86-64-v3, this CPU lacks "
                                            r"abm, avx, avx2"):
        find_operator(str(folder))


# ------------------------------------------------------------------ ISA variants
def test_isa_variants_per_machine_and_baseline():
    assert isa_variants(None, "x86_64", "x86-64-v2") == ["x86-64-v3", "x86-64-v4"]
    assert isa_variants(None, "x86_64", "x86-64-v3") == ["x86-64-v4"]
    assert isa_variants(None, "x86_64", "") == ["x86-64-v3", "x86-64-v4"]
    assert isa_variants(["x86-64-v4", "x86-64-v3"], "x86_64", "x86-64") == ["x86-64-v3",
                                                                            "x86-64-v4"]
    assert isa_variants([], "x86_64", "x86-64-v2") == []
    assert isa_variants(None, "aarch64", "armv8-a") == []
    # issue 23 item 14: a level of the other machine is refused, not dropped silently
    with pytest.raises(SpecError, match=r"--isa-variants x86-64-v3: not a CPU level of aarch64 "
                                        r"\(its wheels' levels: none yet\).*--isa-variants none"):
        isa_variants(["x86-64-v3"], "aarch64", "armv8-a")
    with pytest.raises(SpecError, match=r"--isa-variants 'avx2' is not a CPU level .* pick among "
                                        r"x86-64-v3, x86-64-v4, or pass --isa-variants none"):
        isa_variants(["avx2"], "x86_64", "x86-64-v2")


def variant_package(tmp_path: Path, levels: tuple[str, ...] = ("x86-64-v3", "x86-64-v4")) -> Path:
    """A fake package whose manifest lists ISA variants, each with its own stand-in file."""
    folder = fake_package(tmp_path, isa_variants=["x86-64", *levels])
    for level in levels:
        (folder / "_isa" / level).mkdir(parents=True)
        (folder / "_isa" / level / f"_opsdk_kernels{EXT}").write_bytes(
            (folder / f"_opsdk_kernels{EXT}").read_bytes())
    return folder


@pytest.mark.parametrize(("cpu", "picked"), [
    ("x86-64-v2", ""), ("x86-64-v3", "_isa/x86-64-v3/"), ("x86-64-v4", "_isa/x86-64-v4/")])
def test_the_widest_variant_the_cpu_has_is_loaded(tmp_path, monkeypatch, cpu, picked):
    folder = variant_package(tmp_path)
    monkeypatch.delenv(ISA_ENV, raising=False)
    monkeypatch.setattr(_manifest, "_cpu_flags", lambda: frozenset(_manifest.CPU_LEVELS[cpu]))
    _manifest._VERIFIED.clear()
    assert find_operator(str(folder)).prebuilt == folder / f"{picked}_opsdk_kernels{EXT}"


def test_opsdk_isa_forces_a_variant_and_refuses_what_the_cpu_lacks(tmp_path, monkeypatch):
    folder = variant_package(tmp_path)
    monkeypatch.setattr(_manifest, "_cpu_flags",
                        lambda: frozenset(_manifest.CPU_LEVELS["x86-64-v3"]))
    _manifest._VERIFIED.clear()
    for forced, picked in [("baseline", ""), ("x86-64", ""), ("x86-64-v3", "_isa/x86-64-v3/")]:
        monkeypatch.setenv(ISA_ENV, forced)
        assert find_operator(str(folder)).prebuilt == folder / f"{picked}_opsdk_kernels{EXT}"
    monkeypatch.setenv(ISA_ENV, "x86-64-v4")
    with pytest.raises(ManifestError, match=r"OPSDK_ISA=x86-64-v4: this CPU lacks the x86-64-v4 "
                                            r"instructions .* unset OPSDK_ISA"):
        find_operator(str(folder))
    monkeypatch.setenv(ISA_ENV, "avx9")
    with pytest.raises(ManifestError, match=r"OPSDK_ISA=avx9: pkg_man has the variants x86-64, "
                                            r"x86-64-v3, x86-64-v4; set OPSDK_ISA to one of"):
        find_operator(str(folder))


def test_a_listed_variant_missing_from_the_folder_is_an_error(tmp_path, monkeypatch):
    folder = variant_package(tmp_path)
    (folder / "_isa" / "x86-64-v4" / f"_opsdk_kernels{EXT}").unlink()
    monkeypatch.delenv(ISA_ENV, raising=False)
    monkeypatch.setattr(_manifest, "_cpu_flags",
                        lambda: frozenset(_manifest.CPU_LEVELS["x86-64-v4"]))
    _manifest._VERIFIED.clear()
    with pytest.raises(ManifestError, match=r"lists the x86-64-v4 kernel but .* is missing; "
                                            r"reinstall the package"):
        find_operator(str(folder))


def test_a_kernel_for_another_python_without_manifest_is_refused(tmp_path):
    folder = make_op(tmp_path, "PkgBare")
    (folder / "_opsdk_kernels.cpython-39-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    with pytest.raises(ManifestError, match=r"pkg_bare: the prebuilt kernel "
                                            r"_opsdk_kernels.cpython-39-x86_64-linux-gnu.so .* "
                                            r"is not for this Python"):
        opsdk.load(str(folder))


def _install_fake_dist(site: Path, dist: str, folder: Path) -> None:
    """A dist-info declaring an opsdk.operators entry point that returns ``[folder]``
    (the module name is unique: an imported module stays in sys.modules)."""
    dist_mod = dist.replace("-", "_")
    mod = f"{dist_mod}_{abs(hash(str(site)))}"
    (site / f"{mod}.py").write_text(f"def folders():\n    return [{str(folder)!r}]\n")
    info = site / f"{dist_mod}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[opsdk.operators]\n{mod} = {mod}:folders\n")


def test_wheel_operators_are_checked_when_looked_up_by_name(tmp_path, monkeypatch):
    folder = fake_package(tmp_path / "pkg", name="PkgWheel", platform__machine="sparc64")
    site = tmp_path / "site"
    site.mkdir()
    _install_fake_dist(site, "acme-ops", folder)
    monkeypatch.syspath_prepend(str(site))
    info = next(o for o in find_operators() if o.name == "PkgWheel")
    assert (info.origin, info.package) == ("wheel", "acme-ops")
    with pytest.raises(ManifestError, match=r"acme-ops 1.2.0 \(pkg_wheel\).*sparc64"):
        opsdk.load("PkgWheel")


def test_a_wheel_operator_without_its_kernel_is_never_compiled(tmp_path, monkeypatch):
    folder = fake_package(tmp_path / "pkg", name="PkgNoKernel")
    (folder / f"_opsdk_kernels{EXT}").unlink()
    site = tmp_path / "site"
    site.mkdir()
    _install_fake_dist(site, "acme-ops", folder)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("OPSDK_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(ManifestError, match=r"acme-ops \(pkg_no_kernel\): .* holds no prebuilt "
                                            r"kernel .* an installed operator package is never "
                                            r"compiled"):
        opsdk.load("PkgNoKernel")
    assert not (tmp_path / "cache").exists()


def test_two_packages_defining_one_operator_is_an_error_naming_both(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    _install_fake_dist(site, "acme-ops", fake_package(tmp_path / "a", name="PkgTwice"))
    _install_fake_dist(site, "other-ops", fake_package(tmp_path / "b", name="PkgTwice"))
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(SpecError, match=r"com.example.pkgtest::PkgTwice is defined by two "
                                        r"installed packages: '(acme|other)-ops' .* and "
                                        r"'(acme|other)-ops'"):
        find_operators()


# ------------------------------------------------------------------------ output, CLI
def _zip(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def test_an_existing_different_wheel_is_never_overwritten_silently(tmp_path):
    built = _zip(tmp_path / "acme_ops-1.0-py3-none-any.whl", {"a": b"new"})
    out = tmp_path / "dist"
    out.mkdir()
    _zip(out / built.name, {"a": b"new"})
    assert _publish(built, out, force=False) == (out / built.name, True)
    _zip(out / built.name, {"a": b"old"})
    with pytest.raises(BuildError, match=r"exists with other contents; bump --version"):
        _publish(built, out, force=False)
    assert _publish(built, out, force=True) == (out / built.name, False)
    with zipfile.ZipFile(out / built.name) as zf:
        assert zf.read("a") == b"new"


def test_cli_errors_and_cmake_dir(capsys, tmp_path):
    assert main(["package", "--cmake-dir"]) == 0
    assert (Path(capsys.readouterr().out.strip()) / "OpsdkOperator.cmake").is_file()
    assert main(["package", "-o", str(tmp_path)]) == 1
    assert "give at least one operator folder or name" in capsys.readouterr().err
    op = make_op(tmp_path, "PkgCli")
    assert main(["package", str(op), "--cpu-baseline", "native", "-o", str(tmp_path)]) == 1
    assert "--cpu-baseline native makes a wheel that runs only on CPUs like this one" in (
        capsys.readouterr().err)
    assert main(["package", str(op), "--name", "bad name", "-o", str(tmp_path)]) == 1
    assert "is not a valid package name" in capsys.readouterr().err
    assert main(["package", str(op), "--keep-project", str(op), "-o", str(tmp_path)]) == 1
    assert "it exists; opsdk never overwrites a folder" in capsys.readouterr().err
    assert main(["package", str(op), "--platform", "win_amd64", "-o", str(tmp_path)]) == 1
    assert "--platform 'win_amd64': use manylinux2014_x86_64, manylinux2014_aarch64" in (
        capsys.readouterr().err)
    assert main(["package", str(op), "--platform", "manylinux2014_aarch64", "--cpu-baseline",
                 "x86-64-v3", "-o", str(tmp_path)]) == 1
    assert "--cpu-baseline x86-64-v3 is not a level of aarch64" in capsys.readouterr().err
    assert main(["package", str(op), "--python", "3.8", "-o", str(tmp_path)]) == 1
    assert "--python 3.8: opsdk runs on Python >= 3.10" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.whl"))


def test_platforms_and_python_versions():
    host = platform.machine()
    (default,) = parse_platforms(None)
    assert default.manylinux and default.tags[-1] == f"manylinux2014_{host}"
    assert default.glibc_floor == "2.17"
    both = parse_platforms(["manylinux2014_x86_64", "manylinux_2_17_aarch64", "native"])
    assert [p.tags for p in both[:2]] == [("manylinux_2_17_x86_64", "manylinux2014_x86_64"),
                                         ("manylinux_2_17_aarch64", "manylinux2014_aarch64")]
    assert both[2].tags == (f"linux_{host}",) and not both[2].manylinux
    assert both[2].glibc_floor == platform.libc_ver()[1]
    with pytest.raises(SpecError, match="is given twice"):
        parse_platforms(["manylinux2014_x86_64", "manylinux_2_17_x86_64"])
    assert parse_pythons(None) == [f"{sys.version_info[0]}.{sys.version_info[1]}"]
    assert parse_pythons("3.12, cp310,3.11,3.12") == ["3.10", "3.11", "3.12"]
    with pytest.raises(SpecError, match=r"--python 'three': name CPython versions like"):
        parse_pythons("three")
    assert (zig_cpu("x86-64-v2"), zig_cpu("armv8-a"), zig_cpu("")) == (
        "x86_64_v2", "generic", "baseline")
    with pytest.raises(SpecError, match=r"--cpu-baseline armv9-a: manylinux builds \(zig\)"):
        zig_cpu("armv9-a")


def test_the_python_headers_of_this_host():
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    (x86,) = parse_platforms(["manylinux2014_x86_64"])
    if platform.machine() != "x86_64":
        pytest.skip("the x86_64 headers of this host are asked on x86_64 only")
    tp = target_python(x86, version)
    assert tp.ext_suffix == EXT and (Path(tp.include_dirs[0]) / "Python.h").is_file()
    assert (tp.tag, tp.cache_tag) == (f"cp{version.replace('.', '')}",
                                      sys.implementation.cache_tag)
    with pytest.raises(BuildError, match=r"--python 3.99: no CPython 3.99 with headers on this "
                                         r"host \(looked for python3.99 on PATH and under pyenv\)"):
        target_python(x86, "3.99")


def test_package_help_lists_the_options(capsys):
    with pytest.raises(SystemExit) as e:
        main(["package", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for opt in ("--name", "--version", "--soc", "--cpu-baseline", "--exclude-sources"):
        assert opt in out
    assert "opsdk package operators/my_op operators/other -o dist/" in out


def test_a_packaged_kernel_of_the_wrong_machine_or_above_the_glibc_floor_is_refused(tmp_path):
    from opsdk.package import TargetPython, WheelTarget
    from opsdk.package._wheel import _check_binary

    (x86,) = parse_platforms(["manylinux2014_x86_64"])
    wt = WheelTarget(x86, TargetPython("3.11", (), ".cpython-311-x86_64-linux-gnu.so", "test"),
                     "x86-64-v2")
    op = resolve_operators([make_op(tmp_path, "PkgElf")])[0]
    so = tmp_path / "m.so"

    def elf(machine: int, glibc: str) -> None:
        head = b"\x7fELF\x02\x01\x01" + bytes(11) + machine.to_bytes(2, "little")
        so.write_bytes(head + b"\0GLIBC_2.2.5\0GLIBC_" + glibc.encode() + b"\0")

    elf(62, "2.17")
    _check_binary(so, op, wt)  # an x86_64 module within the floor passes
    elf(183, "2.17")
    with pytest.raises(BuildError, match=r"PkgElf: the packaged kernel is for ELF machine 183, "
                                         r"not x86_64 \(62\)"):
        _check_binary(so, op, wt)
    elf(62, "2.28")
    with pytest.raises(BuildError, match=r"PkgElf: the packaged kernel needs glibc 2.28, above "
                                         r"the floor 2.17 of manylinux2014_x86_64"):
        _check_binary(so, op, wt)


def test_without_zig_manylinux_builds_say_how_to_get_it(tmp_path, monkeypatch, capsys):
    import importlib.util

    from opsdk.package._targets import zig_available

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "ziglang" else real(name, *a))
    assert "pip install 'opsdk[package]' (or pip install ziglang)" in (zig_available() or "")
    op = make_op(tmp_path, "PkgNoZig")
    assert main(["package", str(op), "-o", str(tmp_path / "dist")]) == 1
    err = capsys.readouterr().err
    assert "zig c++ from the ziglang package, which is not installed" in err
    assert "or build for this host only with --platform native" in err
    assert not list(tmp_path.rglob("*.whl"))


@pytest.mark.parametrize("name", ["opsdk._cross", "opsdk.package._targets",
                                  "opsdk._prebuilt", "opsdk.package._package"])
def test_docstring_examples(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_wheel_builds_compile_through_ccache_when_it_is_installed(tmp_path: Path) -> None:
    """A rebuild of the same sources (another package, another folder) reuses the objects;
    the zig wrapper is written anew per build, so ccache must compare compilers by content.
    A launcher the user set is kept; OPSDK_CCACHE=0 turns it off."""
    from opsdk.package._wheel import _use_ccache

    tool = tmp_path / "bin" / "ccache"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\nexec \"$@\"\n")
    tool.chmod(0o755)
    env = {"PATH": str(tool.parent)}
    _use_ccache(env)
    assert env["CMAKE_CXX_COMPILER_LAUNCHER"] == env["CMAKE_C_COMPILER_LAUNCHER"] == "ccache"
    assert env["CCACHE_COMPILERCHECK"] == "content"
    mine = {"PATH": str(tool.parent), "CMAKE_CXX_COMPILER_LAUNCHER": "sccache"}
    _use_ccache(mine)
    assert mine["CMAKE_CXX_COMPILER_LAUNCHER"] == "sccache"
    off = {"PATH": str(tool.parent), "OPSDK_CCACHE": "0"}
    _use_ccache(off)
    assert "CMAKE_CXX_COMPILER_LAUNCHER" not in off
    missing = {"PATH": str(tmp_path / "nowhere")}
    _use_ccache(missing)
    assert missing == {"PATH": str(tmp_path / "nowhere")}


def test_compiler_messages_with_relative_paths_point_at_the_authors_file(tmp_path: Path) -> None:
    """Through ccache (base_dir) the compiler prints the project copy's path relative to
    its build folder; the message still names the author's own kernel.cpp."""
    from types import SimpleNamespace

    from opsdk.package._package import _authors_paths

    pkg = SimpleNamespace(import_name="acme_ops")
    op = SimpleNamespace(snake="my_op", folder=tmp_path / "operators" / "my_op")
    text = ("building the wheel failed\n"
            "../../src/acme_ops/operators/my_op/kernel.cpp:30:3: error: 'x' was not declared\n"
            f"{tmp_path}/project/src/acme_ops/operators/my_op/kernel.cpp:31:1: note: here\n"
            "/usr/include/c++/12/vector:5: note: elsewhere\n")
    got = _authors_paths(text, tmp_path / "project", pkg, [op])  # type: ignore[arg-type]
    assert got.splitlines() == [
        "building the wheel failed",
        f"{op.folder}/kernel.cpp:30:3: error: 'x' was not declared",
        f"{op.folder}/kernel.cpp:31:1: note: here"]
