"""One error tree: every public exception opsdk defines is an ``OpsdkError`` (every warning an
``OpsdkWarning``), lives in ``opsdk/errors.py`` or its wing's errors module, and is exported
from that wing's face. Private control-flow exceptions (``_Skip``) never leave their module."""

from __future__ import annotations

import importlib
import inspect
from types import ModuleType

import pytest

from opsdk.errors import OpsdkError, OpsdkWarning
from tests._helpers.import_graph import modules

#: Modules that need an extra that may be missing; they are checked when it is installed.
_OPTIONAL = ("torch", "tritonclient")

#: Scripts another interpreter runs as ``python -c <their text>``: importing one runs it.
_SCRIPTS = ("opsdk.onnx._ort_serve_child", "opsdk.triton._ort_run_child")


def _modules() -> list[ModuleType]:
    found = []
    for name in modules():
        if name in ("opsdk.__main__", *_SCRIPTS) or name.startswith("opsdk.cann"):
            continue  # the command itself; the deprecated alias of opsdk.ascend
        try:
            found.append(importlib.import_module(name))
        except ImportError as e:
            if (e.name or "").split(".")[0] not in _OPTIONAL:
                raise
    return found


def _defined_exceptions() -> list[tuple[str, type[BaseException]]]:
    return sorted(
        ((m.__name__, c) for m in _modules()
         for _, c in inspect.getmembers(m, inspect.isclass)
         if issubclass(c, BaseException) and c.__module__ == m.__name__),
        key=lambda mc: (mc[0], mc[1].__name__))


def _is_errors_module(name: str) -> bool:
    return name == "opsdk.errors" or name.rsplit(".", 1)[-1] in ("errors", "_errors")


def _face(module: str) -> str:
    """The face that exports an errors module's names: the wing (``opsdk.onnx`` for
    ``opsdk.onnx.errors``), or ``opsdk.errors`` itself for the floor."""
    return module if module == "opsdk.errors" else module.rpartition(".")[0]


def tree_problems(found: list[tuple[str, type[BaseException]]]) -> list[str]:
    """What is wrong with each exception class: its base, its module, its face."""
    problems = []
    for module, cls in found:
        if cls.__name__.startswith("_"):
            continue
        base = OpsdkWarning if issubclass(cls, Warning) else OpsdkError
        where = f"{module}.{cls.__name__}"
        if not issubclass(cls, base):
            problems.append(f"{where} is no {base.__name__}: derive it from {base.__name__} "
                            "(and the builtin a caller expects)")
        if not _is_errors_module(module):
            problems.append(f"{where} is defined outside an errors module: move it to "
                            "opsdk/errors.py or its wing's errors module")
        elif getattr(importlib.import_module(_face(module)), cls.__name__, None) is not cls:
            problems.append(f"{where} is not exported from {_face(module)}")
    return problems


def test_every_public_exception_is_in_the_tree() -> None:
    found = _defined_exceptions()
    assert len(found) > 30  # the walk saw the package
    problems = tree_problems(found)
    assert not problems, "\n".join(problems)


def test_the_check_finds_each_kind_of_problem() -> None:
    stray = type("Stray", (ValueError,), {"__module__": "opsdk.onnx._probe"})
    hidden = type("Hidden", (OpsdkError,), {"__module__": "opsdk.onnx.errors"})
    loud = type("Loud", (UserWarning,), {"__module__": "opsdk.torch.errors"})
    private = type("_Skip", (Exception,), {"__module__": "opsdk.onnx._rewrite"})
    problems = tree_problems([(c.__module__, c) for c in (stray, hidden, loud, private)])
    assert problems == [
        "opsdk.onnx._probe.Stray is no OpsdkError: derive it from OpsdkError (and the builtin "
        "a caller expects)",
        "opsdk.onnx._probe.Stray is defined outside an errors module: move it to "
        "opsdk/errors.py or its wing's errors module",
        "opsdk.onnx.errors.Hidden is not exported from opsdk.onnx",
        "opsdk.torch.errors.Loud is no OpsdkWarning: derive it from OpsdkWarning (and the "
        "builtin a caller expects)",
        "opsdk.torch.errors.Loud is not exported from opsdk.torch",
    ]


@pytest.mark.parametrize("name,builtin", [
    ("opsdk.onnx.ProbeTooBig", ValueError), ("opsdk.triton.ExpressionError", ValueError),
    ("opsdk.errors.OutputExistsError", FileExistsError),
    ("opsdk.ascend.ProjectExists", FileExistsError)])
def test_the_old_outsiders_keep_their_builtin(name: str, builtin: type) -> None:
    module, _, cls = name.rpartition(".")
    found = getattr(importlib.import_module(module), cls)
    assert issubclass(found, builtin) and issubclass(found, OpsdkError)
