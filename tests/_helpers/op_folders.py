"""Minimal operator folders for the packaging tests."""

from __future__ import annotations

from pathlib import Path

SPEC_PY = '''\
"""{name}: a test operator."""

from opsdk.spec import Input, OpSpec, Output, TFloat

SPEC = OpSpec(
    "{name}",
    domain="{domain}",
    inputs=[Input("x", "T")],
    outputs=[Output("y", "T")],
    types={{"T": TFloat}},
)
'''


REFERENCE_PY = "def reference(x):\n    return x.copy()\n"


KERNEL_CPP = "// not compiled by these tests\n#include <opsdk/custom_op.h>\n"


def make_op(root: Path, name: str, domain: str = "com.example.pkgtest") -> Path:
    """A minimal operator folder (spec.py, reference.py, kernel.cpp) under ``root``."""
    from opsdk.naming import snake_case

    folder = root / snake_case(name)
    folder.mkdir(parents=True)
    (folder / "spec.py").write_text(SPEC_PY.format(name=name, domain=domain))
    (folder / "reference.py").write_text(REFERENCE_PY)
    (folder / "kernel.cpp").write_text(KERNEL_CPP)
    return folder
