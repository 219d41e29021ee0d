"""One rule set per CANN release: everything the GE ONNX parser of that release rejects.

The rules are the doctor's errors (:func:`opsdk.ascend.atc.doctor.blocking_findings`: the
release's ai.onnx opset range and operator table, graph validity, custom nodes against their
specs) and the parser's key rules (:func:`opsdk.ascend.atc._onnx_keys.check_parser_rules`:
domains, E16005, plugin keys). ``opsdk atc``, ``opsdk triton build --target ascend`` and
``opsdk triton check`` refuse what this refuses, so a model they pass passes
``opsdk doctor --cann <the same release>``.

Example:
    >>> from opsdk.ascend.versions import parse_cann_version
    >>> model_problems("net.onnx", parse_cann_version("8.1.RC1"))  # doctest: +SKIP
    ['model: the model imports ai.onnx opset 20; ATC of CANN 8 ... accepts 9-18 -- fix: ...']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...spec import OpSpec
from ..versions import CannVersion
from ._onnx_keys import _load, check_parser_rules
from .doctor import blocking_findings

__all__ = ["model_problems"]

#: Doctor findings the key rules report node by node already.
_KEY_RULES = frozenset({"mixed-default-domain", "missing-opset-import"})


def model_problems(
    model: Any,
    cann: CannVersion,
    registered: Mapping[str, Sequence[str]] | None = None,
    extra: Iterable[OpSpec] = (),
) -> list[str]:
    """One line per thing the GE ONNX parser of ``cann`` rejects in ``model``.

    ``registered``: plugin keys by op type (as in :func:`check_parser_rules`); ``extra``:
    specs of the model's custom operators not on the registry's search path.
    """
    m = _load(model)
    problems = [p.message for p in check_parser_rules(m, cann, registered)]
    for f in blocking_findings(m, cann, extra=extra):
        if f.code not in _KEY_RULES:
            problems.append(f.message)
    return problems
