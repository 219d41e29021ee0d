"""Operator wheels: build them (``opsdk package``) and check them before a kernel loads.

``package_operators`` turns operator folders into wheels (one per platform, e.g.
manylinux2014_x86_64 and manylinux2014_aarch64, and per CPython version) with prebuilt,
portable CPU kernels, the specs and references, the generated tests, ONNX schemas, CANN
projects and a manifest; installed, a wheel registers its operators through the
``opsdk.operators`` entry point and ``opsdk.load`` uses the prebuilt kernels without
compiling. ``verify_prebuilt`` is what the registry calls before such a kernel is used: a
wheel built for another opsdk, Python, platform, CPU or a newer glibc gives a
:class:`~opsdk.errors.ManifestError`.

Example:
    >>> from opsdk.package import package_operators
    >>> res = package_operators(["operators/thresholded_relu", "operators/my_op"], "dist",
    ...                         name="acme-ops", version="1.2.0")  # doctest: +SKIP
    >>> res.wheel.name  # doctest: +SKIP
    'acme_ops-1.2.0-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl'
"""

from __future__ import annotations

from pathlib import Path

from .._prebuilt import (
    CPU_LEVELS,
    MANIFEST_NAME,
    find_manifest,
    host_environment,
    read_manifest,
    required_glibc,
    verify_prebuilt,
)
from ._artefacts import Artefacts, generate_artefacts, schema_dict
from ._emulate import EmulatedPython, emulated_python
from ._package import (
    BuiltWheel,
    PackageResult,
    default_cpu_baseline,
    make_manifest,
    package_operators,
)
from ._project import BANNER, OpSource, PackageName, package_name, render_project
from ._sysroot import SysrootError, debian_sysroot
from ._targets import TargetPython, WheelPlatform, parse_platforms, parse_pythons, target_python
from ._wheel import WheelTarget, build_wheel, check_wheel, wheel_contents

__all__ = [
    "BANNER",
    "CPU_LEVELS",
    "MANIFEST_NAME",
    "Artefacts",
    "BuiltWheel",
    "SysrootError",
    "TargetPython",
    "WheelPlatform",
    "WheelTarget",
    "debian_sysroot",
    "EmulatedPython",
    "emulated_python",
    "parse_platforms",
    "parse_pythons",
    "target_python",
    "OpSource",
    "PackageName",
    "PackageResult",
    "build_wheel",
    "check_wheel",
    "cmake_dir",
    "default_cpu_baseline",
    "find_manifest",
    "generate_artefacts",
    "host_environment",
    "make_manifest",
    "package_name",
    "package_operators",
    "read_manifest",
    "render_project",
    "required_glibc",
    "schema_dict",
    "verify_prebuilt",
    "wheel_contents",
]


def cmake_dir() -> Path:
    """The folder holding ``OpsdkOperator.cmake`` (append it to ``CMAKE_MODULE_PATH``).

    Example:
        >>> (cmake_dir() / "OpsdkOperator.cmake").is_file()
        True
    """
    from .. import _paths

    return _paths.data_dir("cmake")
