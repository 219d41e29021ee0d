"""Every path of this repository that docs/ and the README name (in `code`) exists.

A path counts when it starts with one of the repository's top-level folders. It exists when it
is a file or folder here, a module named without ``.py`` (``opsdk/__init__``), or a header named
as C++ includes it (``opsdk/shape_fn.h`` is ``opsdk/include/opsdk/shape_fn.h``). Paths that
name files of other repositories, of generated projects or of examples are listed in
ELSEWHERE with where they live.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: (doc, path) -> where the file lives: not in this repository
ELSEWHERE = {
    ("npu_host_guide.md", "cmake/config.cmake"): "a CANN project msopgen or opsdk cann writes",
    ("npu_host_guide.md", "cmake/util/aicpu_parser_ini.py"): "a CANN project msopgen writes",
    ("npu_host_guide.md", "scripts/install.sh"): "a CANN project msopgen writes",
    ("packaging.md", "tests/golden/y.npy"): "an example of the test-data pattern",
    ("packaging.md", "opsdk/_data/"): "the built wheel",
    ("validation.md", "docs/zh/ops_precision_standard/experimental_standard.md"): "hicann/opbase",
    ("validation.md", "docs/design/precision_comparison_design.md"): "hicann/cann-bench",
    ("validation.md", "docs/spec/benchmark_spec.md"): "hicann/cann-bench",
    ("validation.md", "docs/Precision_Comparison.md"): "hicann/ops-test-kit",
    ("validation.md", "tests/core_modules/comparison/test_mix_tolerance.py"): "hicann/ops-test-kit",
    ("validation.md", "docs/Test_Case_Generation.md"): "hicann/ops-test-kit",
    ("validation.md", "docs/Operator_Test_Guides/Kernel_Case_Writing.md"): "hicann/ops-test-kit",
    ("validation.md", "docs/Operator_Test_Guides/Kernel_Test_Guide.md"): "hicann/ops-test-kit",
    ("README.md", "operators/my_op/"): "the folder opsdk new MyOp creates",
    ("guide.md", "operators/my_op/"): "the folder opsdk new MyOp creates in a user's project",
}

_SPAN = re.compile(r"`([^`\s]+)`")


def _named_paths(doc: Path) -> list[tuple[int, str]]:
    tops = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")}
    found = []
    for n, line in enumerate(doc.read_text().splitlines(), 1):
        for m in _SPAN.finditer(line):
            path = m.group(1).rstrip(".,;)").split(":")[0]
            if "/" in path and path.split("/")[0] in tops and not re.search(r"[<>*{}$]", path):
                found.append((n, path))
    return found


def _exists(path: str) -> bool:
    return any((ROOT / p).exists() for p in (path, path + ".py", f"opsdk/include/{path}"))


def test_every_repo_path_the_docs_name_exists() -> None:
    docs = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
    missing = [f"{doc.name}:{n}: {path}" for doc in docs for n, path in _named_paths(doc)
               if not _exists(path) and (doc.name, path) not in ELSEWHERE]
    assert not missing, "docs name paths this repository does not have:\n" + "\n".join(missing)


def test_the_check_sees_a_stale_path(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text("see `opsdk/cann/_ascendc_tiling.py` and `opsdk/ascend/ascendc/_tiling.py`\n")
    named = _named_paths(doc)
    assert named == [(1, "opsdk/cann/_ascendc_tiling.py"), (1, "opsdk/ascend/ascendc/_tiling.py")]
    assert [_exists(p) for _, p in named] == [False, True]
