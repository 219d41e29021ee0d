"""Specs the CANN tests share: shipped operators' specs and a richer test-only op."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from opsdk.spec import Attr, Input, OpSpec, Output, TensorType

ROOT = Path(__file__).resolve().parents[2]


def shipped(folder: str) -> OpSpec:
    """The spec of a shipped operator (operators/<folder>/spec.py)."""
    path = ROOT / "operators" / folder / "spec.py"
    mod_spec = importlib.util.spec_from_file_location(f"_{folder}_spec_for_cann_tests", path)
    assert mod_spec is not None and mod_spec.loader is not None
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    return mod.SPEC  # type: ignore[no-any-return]


def thresholded_relu() -> OpSpec:
    return shipped("thresholded_relu")


def grid_sample() -> OpSpec:
    return shipped("grid_sample")


def rich_op() -> OpSpec:
    """Optional input, every attribute type, a required attribute, two outputs, two type vars."""
    spec = OpSpec(
        "RichOp",
        domain="com.example.test",
        version=2,
        inputs=[Input("x", "T"), Input("index", "I"), Input("bias", "T", optional=True)],
        outputs=[Output("y", "T"), Output("count", "I")],
        attrs=[
            Attr("axis", "int"),
            Attr("epsilon", "float", 1e-5),
            Attr("keepdims", "bool", True),
            Attr("mode", "string", 'bi"linear'),
            Attr("pads", "ints", [1, 1]),
            Attr("scales", "floats", [0.5, 2.0]),
        ],
        types={"T": ("float16", "float32"), "I": ("int32", "int64")},
    )

    @spec.register_shape
    def _shape(
        x: TensorType, index: TensorType, bias: TensorType | None = None, **_: object
    ) -> list[TensorType]:
        return [x, TensorType(index.shape, index.dtype)]

    return spec
