"""The template files of this wing's generated code, chosen by a table.

Every source opsdk generates around an AI Core kernel (the kernel class, the tiling
description and TilingFunc statements, the CPU-debug and simulator projects, the model's
driver) is a template under ``templates/``; the kernel's Ascend C prelude is a real header
there (``opsdk_kernel_prelude.h``) that the kernel template includes as text. Only the
expression emitter (:mod:`opsdk.ascend.ascendc._gen`) still writes one-line fragments.

Example:
    >>> TEMPLATES["sim", "cmake"]
    'sim_CMakeLists.txt.jinja'
    >>> "constexpr uint32_t GRANULE = 64;" in prelude()
    True
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from ..._generated import environment

__all__ = ["TEMPLATES", "PRELUDE", "render", "prelude", "template_text"]

_DIR = Path(__file__).resolve().parent / "templates"
#: The Ascend C prelude of every generated kernel: a header of its own.
PRELUDE = "opsdk_kernel_prelude.h"

#: (build, file) -> template: what each generated file is rendered from.
TEMPLATES: dict[tuple[str, str], str] = {
    ("aicore", "kernel"): "kernel.cpp.jinja",
    ("aicore", "rows"): "kernel_rows.cpp.jinja",
    ("aicore", "tiling.py"): "tiling.py.jinja",
    ("aicore", "tiling_func"): "tiling_func.cpp.jinja",
    ("model", "driver"): "model_driver.cpp.jinja",
    ("cpu-debug", "cmake"): "cpu_debug_CMakeLists.txt.jinja",
    ("cpu-debug", "driver"): "cpu_debug_driver.cpp.jinja",
    ("sim", "cmake"): "sim_CMakeLists.txt.jinja",
    ("sim", "driver"): "sim_driver.cpp.jinja",
    ("sim", "kernel"): "sim_kernel.cpp.jinja",
    ("sim", "tiling"): "sim_kernel_tiling.h.jinja",
    ("run", "driver"): "run_driver.cpp.jinja",
    ("run", "host_tiling"): "host_tiling_driver.cpp.jinja",
}


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    """opsdk's one Jinja environment (:func:`opsdk._generated.environment`) over this
    folder, trimming block lines as these templates are written."""
    env: jinja2.Environment = environment().overlay(
        loader=jinja2.FileSystemLoader(str(_DIR)), trim_blocks=True, lstrip_blocks=True)
    env.filters = {**env.filters, "pyrepr": repr}
    return env


@lru_cache(maxsize=1)
def prelude() -> str:
    """The text of the kernels' prelude header."""
    return (_DIR / PRELUDE).read_text()


def render(build: str, file: str, **context: Any) -> str:
    """Render the template :data:`TEMPLATES` names for ``(build, file)``."""
    return str(_env().get_template(TEMPLATES[build, file]).render(**context))


def template_text(build: str, file: str) -> str:
    """The source of the template :data:`TEMPLATES` names (a cache key's part)."""
    return (_DIR / TEMPLATES[build, file]).read_text()
