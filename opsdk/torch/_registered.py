"""The operators registered with torch in this process: :class:`Registered` and the table
of them, apart from the registration itself so that the exporters can read it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..registry import OperatorInfo
from ..spec import OpSpec
from ._schema import namespace, qualified_name

__all__ = ["Registered", "registered", "REGISTERED"]


@dataclass
class Registered:
    """One operator registered with torch: its spec, where it came from, the torch op."""

    spec: OpSpec
    info: OperatorInfo
    custom_op: Any  # torch._library.custom_ops.CustomOpDef
    kernel: Callable[[], Any]  # the loaded opsdk operator (compiled on first use)

    @property
    def qualname(self) -> str:
        return qualified_name(self.spec)

    @property
    def packet(self) -> Any:
        """``torch.ops.<namespace>.<Name>``."""
        import torch

        return getattr(getattr(torch.ops, namespace(self.spec.domain)), self.spec.name)

    @property
    def overload(self) -> Any:
        """``torch.ops.<namespace>.<Name>.default`` (what opcheck and export tables take)."""
        return self.packet.default


REGISTERED: dict[str, Registered] = {}


def registered() -> list[Registered]:
    """Every operator registered with torch in this process."""
    return list(REGISTERED.values())
