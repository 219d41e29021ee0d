"""Generated code lives in template files: the lines of code held in Python strings stay
under the bound (tests/_helpers/code_strings.py counts them), and the kernel prelude header
says what the generator assumes."""

from __future__ import annotations

from pathlib import Path

from opsdk.ascend.ascendc._gen import BUFFER_NUM, GRANULE
from opsdk.ascend.ascendc._templates import TEMPLATES, prelude
from tests._helpers.code_strings import code_string_lines, string_blocks

#: Lines of code in Python strings, project-wide (about 735 before the generators moved to
#: template files; the expression emitter's one-line fragments do not count).
BOUND = 60


def test_code_in_python_strings_stays_under_the_bound() -> None:
    found = code_string_lines()
    worst = sorted(found.items(), key=lambda kv: -kv[1])[:5]
    assert sum(found.values()) < BOUND, f"{sum(found.values())} lines; most in {worst}"


def test_the_counter_counts_a_block_and_leaves_out_docstrings_and_help(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text('"""Doc\nstring."""\nHELP = """a\nb\n"""\nCODE = """\\\nint x;\nint y;\n"""\n'
                   'ONE = "x\\n"\nJOINED = ("a\\n"\n          "b\\n")\n')
    assert string_blocks(src) == [(6, 4), (11, 2)]


def test_the_prelude_header_holds_the_generators_constants() -> None:
    text = prelude()
    assert f"constexpr int32_t BUFFER_NUM = {BUFFER_NUM};" in text
    assert f"constexpr uint32_t GRANULE = {GRANULE};" in text


def test_every_template_of_the_table_exists() -> None:
    folder = Path(__file__).resolve().parents[1] / "opsdk" / "ascend" / "ascendc" / "templates"
    assert all((folder / name).is_file() for name in TEMPLATES.values())
