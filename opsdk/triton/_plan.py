"""The plan of one model folder: everything ``opsdk triton build`` decides, decided once.

:func:`opsdk.triton.plan_repository` fills a :class:`RepositoryPlan`: the options with the
target's batching decision, the I/O of the model as given and of the model file written
(its fixed and named dims), the CANN release and why it was chosen, the registered plugin
keys, and an operator index built by one scan of the operator folders. The renderers
(``_target_cpu.render``, ``_target_ascend.render``) and the writer read the plan and work
nothing out again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from onnx import ModelProto

from ..ascend.versions import ResolvedCann
from ..registry import OperatorInfo, find_operators
from ..spec import OpSpec
from ._errors import TritonConfigError
from ._onnx_io import GraphIO
from ._options import RepositoryOptions

__all__ = ["RepositoryPlan", "operator_index", "spec_index", "batch_size", "AUTO_MAX_BATCH"]

AUTO_MAX_BATCH = 32


@dataclass(frozen=True)
class RepositoryPlan:
    """One model folder, decided: read by the renderers and the writer, never re-derived.

    ``options`` are the user's with the target's batching decision (``max_batch_size`` set
    when the target chose it, ``batching_reason`` says why); ``io`` is the model as given and
    ``config_io`` the model file written (dims fixed and named; ``io`` until the file is
    planned); ``cann`` is the release whose parser rules the file follows (ascend only);
    ``plugin_keys`` are those of the ``opsdk cann`` projects given; ``operators`` every
    operator opsdk found, by ``domain::Name``, from one scan.
    """

    options: RepositoryOptions
    source: str
    io: GraphIO
    config_io: GraphIO
    max_batch_size: int
    preferred_batch_sizes: tuple[int, ...]
    operators: Mapping[str, OperatorInfo]
    batching_reason: str = ""
    cann: ResolvedCann | None = None
    plugin_keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    proto: ModelProto | None = None
    notes: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.options.name

    @property
    def batched(self) -> bool:
        return self.max_batch_size > 0

    def specs(self) -> dict[tuple[str, str], OpSpec]:
        """The operator index as ``{(domain, name): spec}`` (:func:`spec_index`)."""
        return spec_index(self.operators)


def operator_index() -> dict[str, OperatorInfo]:
    """Every operator opsdk can find, by ``domain::Name``: one scan of the operator folders.

    Example:
        >>> "com.opsdk::Gelu" in operator_index()
        True
    """
    return {info.qualified: info for info in find_operators()}


def spec_index(operators: Mapping[str, OperatorInfo]) -> dict[tuple[str, str], OpSpec]:
    """``{(domain, name): spec}`` of an operator index, as :func:`opsdk.onnx._ops.catalog`
    keys it."""
    return {(i.domain, i.name): i.spec for i in operators.values()}


def batch_size(io: GraphIO, opts: RepositoryOptions) -> int:
    """``max_batch_size``: the user's (checked against the graph) or 32 when batchable.

    Example:
        >>> batch_size(GraphIO((), (), ()), RepositoryOptions("m"))
        0
    """
    if opts.max_batch_size is None:
        if opts.npu.static_model:
            return 0
        return AUTO_MAX_BATCH if io.inputs and io.batchable() else 0
    if opts.max_batch_size > 0:
        if not io.inputs:
            raise TritonConfigError(f"{opts.name}: a model without inputs cannot be batched")
        io.check_batchable(opts.max_batch_size)
    return opts.max_batch_size
