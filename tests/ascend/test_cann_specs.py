"""The test-only RichOp covers what the CANN tests need (tests/_helpers/specs.py)."""

from __future__ import annotations

from tests._helpers.specs import rich_op


def test_rich_op_covers_what_the_cann_tests_need() -> None:
    spec = rich_op()
    assert len(spec.dtype_combinations()) == 4
    assert {a.type for a in spec.attrs} == {"int", "float", "bool", "string", "ints", "floats"}
    assert any(a.required for a in spec.attrs) and any(i.optional for i in spec.inputs)
    assert len(spec.outputs) == 2 and not spec.elementwise
