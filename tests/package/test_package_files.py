"""What `opsdk package` ships of an operator folder, and its options (issue 23 items 4, 13, 14)."""

from __future__ import annotations

import onnx
import pytest

from opsdk._written import UnsafePath
from opsdk.cli import main
from opsdk.errors import SpecError
from opsdk.package import generate_artefacts, package_operators, parse_pythons
from opsdk.package._project import left_out_files, operator_files
from opsdk.registry import find_operator
from tests._helpers.op_folders import make_op


def test_symlink_out_of_the_operator_folder_is_refused(tmp_path):
    """Item 4: a symlinked file or folder is refused, naming it; its target never ships."""
    op = make_op(tmp_path, "PkgLink")
    secret = tmp_path / "secret.h"
    secret.write_text("// not the author's to ship\n")
    (op / "helper.h").symlink_to(secret)
    with pytest.raises(UnsafePath, match=rf"{op / 'helper.h'} is a symlink \(to {secret}\)"):
        operator_files(op)
    (op / "helper.h").unlink()
    (op / "include").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(UnsafePath, match=rf"{op / 'include'} is a symlink"):
        operator_files(op)


def test_package_refuses_a_symlink_before_compiling(tmp_path, capsys):
    """Item 4: the CLI refuses with the path, before any build."""
    op = make_op(tmp_path, "PkgLinkCli")
    (op / "helper.h").symlink_to(tmp_path / "elsewhere.h")
    assert main(["package", str(op), "-o", str(tmp_path / "dist"), "-q"]) == 1
    err = capsys.readouterr().err
    assert f"{op / 'helper.h'} is a symlink" in err and "Traceback" not in err
    assert not (tmp_path / "dist").exists() or not list((tmp_path / "dist").iterdir())


def test_only_sources_docs_tests_and_declared_data_ship(tmp_path):
    """Item 4: keys, dotfiles, undeclared data stay behind; PACKAGE_DATA files ship."""
    op = make_op(tmp_path, "PkgShip")
    for rel in ("id_rsa", "id_rsa.pub", "server.pem", ".env", ".git/config", "notes.bin",
                "tables/lut.bin", "tests/test_more.py", "tests/golden/y.npy", "README.md",
                "op_kernel/pkg_ship.cpp", "op_kernel/tiling.py", "LICENSE",
                "credentials.json", "data/x.npy"):
        (op / rel).parent.mkdir(parents=True, exist_ok=True)
        (op / rel).write_text("x")
    shipped = sorted(operator_files(op))
    assert shipped == ["LICENSE", "README.md", "kernel.cpp", "op_kernel/pkg_ship.cpp",
                       "op_kernel/tiling.py", "reference.py", "spec.py", "tests/golden/y.npy",
                       "tests/test_more.py"]
    assert left_out_files(op) == ["credentials.json", "data/x.npy", "id_rsa", "id_rsa.pub",
                                  "notes.bin", "server.pem", "tables/lut.bin"]
    spec = op / "spec.py"
    spec.write_text(spec.read_text() + '\nPACKAGE_DATA = ["tables/lut.bin"]\n')
    assert "tables/lut.bin" in operator_files(op) and "tables/lut.bin" not in left_out_files(op)
    spec.write_text(spec.read_text() + '\nPACKAGE_DATA = ["../secret.h"]\n')
    with pytest.raises(SpecError, match=r"PACKAGE_DATA must be a list of paths inside .*"
                                        r"'\.\./secret\.h' is not a path inside the folder"):
        operator_files(op)


def test_grid_sample_packages_at_the_opset_its_fallback_needs():
    """Item 13: GridSample's fallback needs opset 16: picked automatically; --opset checked."""
    gs = find_operator("GridSample").spec
    arts = generate_artefacts([gs], cann=False)
    assert arts.onnx_opset == 16
    fn = onnx.FunctionProto.FromString(arts.files[gs.snake_name]["onnx/function.onnx"])
    assert {o.domain: o.version for o in fn.opset_import}[""] == 16
    assert generate_artefacts([gs], cann=False, opset=18).onnx_opset == 18
    with pytest.raises(SpecError, match=r"GridSample: the fallback function uses GridSample, "
                                        r"which needs opset >= 16.*pass a higher --opset"):
        generate_artefacts([gs], cann=False, opset=15)
    tr = find_operator("ThresholdedRelu").spec
    assert generate_artefacts([tr], cann=False).onnx_opset == 15  # the default, unchanged


def test_empty_python_is_an_error_not_the_default(tmp_path):
    """Item 14: --python '' is refused, not taken as "not given"."""
    with pytest.raises(SpecError, match=r"--python '': name at least one CPython version"):
        parse_pythons("")
    with pytest.raises(SpecError, match=r"--python ' , ': name at least one"):
        package_operators([str(make_op(tmp_path, "PkgPy"))], tmp_path / "d", python=" , ")


def test_the_pip_folder_is_found_without_importing_pip() -> None:
    """The emulated pip runs this host's pip package; finding it must not import pip, which
    setuptools' distutils hack turns into a warning (an error here) once distutils is in."""
    import subprocess
    import sys

    code = ("import warnings; warnings.simplefilter('ignore', DeprecationWarning)\n"
            "import distutils.core\n"
            "warnings.simplefilter('error')\n"
            "from opsdk.package._emulate import pip_folder\n"
            "print((pip_folder() / '__init__.py').is_file())\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "True", proc.stderr[-1500:]
