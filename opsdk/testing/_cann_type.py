"""The CANN operator type the ``npu`` device runs each operator as.

An operator generated with ``opsdk cann --op-type ThresholdedReluCustom`` (the fix for an
operator named like a CANN built-in) is installed and called on the NPU under that type. The
test options say so:

* ``--opsdk-cann-op-type TYPE`` for every operator of the run, or ``OP=TYPE`` for the
  operator named ``OP`` in its spec.py (both repeatable);
* ``--opsdk-cann-project DIR``: the type recorded in the manifest of the project ``opsdk cann``
  wrote into DIR, for that project's operator (repeatable, one per project).

An operator neither names runs under its spec's name. A type given both ways must agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import SpecError
from ..spec import OpSpec

__all__ = ["CannTypes", "cann_types"]


@dataclass(frozen=True)
class CannTypes:
    """The CANN types of a test run: given by name, and read from project manifests."""

    given: dict[str | None, str] = field(default_factory=dict)  # op name (None: all) -> type
    projects: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.given or self.projects)

    def for_spec(self, spec: OpSpec) -> str | None:
        """The CANN type of ``spec``'s operator, or None for its spec name.

        Example:
            >>> from opsdk.registry import find_operator
            >>> types = cann_types(["ThresholdedRelu=ThresholdedReluCustom"], [])
            >>> types.for_spec(find_operator("ThresholdedRelu").spec)
            'ThresholdedReluCustom'
            >>> types.for_spec(find_operator("Gelu").spec) is None
            True
        """
        given = self.given.get(spec.name, self.given.get(None))
        project = self.projects.get((spec.domain, spec.name))
        return given or (project[0] if project else None)


def _parse(value: str) -> tuple[str | None, str]:
    from ..ascend._op import check_op_type
    from ..ascend.socs import CannArgError

    op, _, typ = value.rpartition("=")
    try:
        check_op_type(typ, "--opsdk-cann-op-type")
    except CannArgError as e:
        raise SpecError(str(e)) from None
    if "=" in value and not op:
        raise SpecError(f"--opsdk-cann-op-type {value!r}: write OP=TYPE (OP as in spec.py) or TYPE")
    return (op or None), typ


def cann_types(values: Sequence[str], projects: Sequence[str]) -> CannTypes:
    """Parse ``--opsdk-cann-op-type`` values and read ``--opsdk-cann-project`` manifests.

    Raises:
        SpecError: a malformed value, a project folder ``opsdk cann`` did not write, or two
            different types for one operator.

    Example:
        >>> cann_types(["GeluCustom"], []).given
        {None: 'GeluCustom'}
    """
    from ..ascend.project._project import project_op_types
    from ..ascend.socs import CannArgError

    given: dict[str | None, str] = {}
    for value in values:
        op, typ = _parse(value)
        if given.get(op, typ) != typ:
            raise SpecError(f"--opsdk-cann-op-type gives {op or 'every operator'} two types: "
                            f"{given[op]} and {typ}")
        given[op] = typ
    read: dict[tuple[str, str], tuple[str, str]] = {}
    for folder in projects:
        try:
            types = project_op_types(folder)
        except CannArgError as e:
            raise SpecError(f"--opsdk-cann-project {e}") from None
        for key, typ in types.items():
            named = given.get(key[1], given.get(None))
            earlier = (f"{read[key][0]} (project {read[key][1]})"
                       if key in read and read[key][0] != typ
                       else f"{named} (--opsdk-cann-op-type)" if named not in (None, typ)
                       else None)
            if earlier:
                raise SpecError(f"{key[1]}: two CANN types, {earlier} and {typ} "
                                f"(project {folder}); drop one")
            read[key] = (typ, str(folder))
    return CannTypes(given, read)
