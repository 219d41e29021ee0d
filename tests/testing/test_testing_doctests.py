"""The examples in opsdk.testing's docstrings run and are right."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "opsdk.testing",
    "opsdk.testing._standards",
    "opsdk.testing._methods",
    "opsdk.testing._generate",
    "opsdk.testing._compare",
    "opsdk.testing._cases",
    "opsdk.ascend.precision",
    "opsdk.testing._report",
    "opsdk.testing._html",
    "opsdk.testing._summary",
    "opsdk.testing._runner",
    "opsdk.testing._cann_type",
    "opsdk.ascend.atc._host",
    "opsdk.ascend.atc.doctor",
    "opsdk.ascend.parser",
    "opsdk.ascend.socs",
    "opsdk.onnx._rewrite",
    "opsdk._written",
    "opsdk.runtime._registration",
    "opsdk.runtime._devices",
    "opsdk.ascend.spellings",
    "opsdk._generated",
    "opsdk.dtypes",
    "opsdk._toml",
    "opsdk.preprocess",
    "opsdk.preprocess._pixels",
    "opsdk.preprocess._declaration",
    "opsdk.preprocess._cpu",
    "opsdk.ascend.atc.aipp",
    "opsdk.ascend.atc._aipp_rules",
    "opsdk.ascend.atc._aipp_emulate",
    "opsdk.ascend.atc._memory",
    "opsdk.triton._warmup",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0
