"""``opsdk bench --device ascendc-model``: the cycle estimate of an operator's AI Core kernel.

The figures come from opsdk's model of the AI Core's pipes (opsdk.ascend.ascendc), never
from an NPU: an estimate with stated costs, checked against the reference on the same run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import OpsdkError
from ._cases import DEFAULT_CASES, make_inputs, resolve_shapes

__all__ = ["estimate_op"]


def estimate_op(
    name: str,
    *,
    shapes: Sequence[str] | None = None,
    dtype: str = "float32",
    attrs: Mapping[str, Any] | None = None,
    soc: str = "Ascend910B3",
    costs: Mapping[str, Any] | str | Path | None = None,
    small: bool = False,
    progress: Callable[[str], None] | None = None,
) -> Any:
    """Estimate operator ``name``'s AI Core kernel on ``soc`` with opsdk's model of the pipes
    (an estimate, never an NPU time); the outputs are checked against the NumPy reference
    first, so an estimate of a wrong kernel is never reported.

    ``shapes`` as ``opsdk bench --shape`` takes them; None uses the operator's default
    benchmark shapes (``small``: the cache-resident ones). Returns an
    :class:`~opsdk.ascend.ascendc._estimate.Estimate`.

    Example:
        >>> est = estimate_op("ThresholdedRelu", shapes=["65536"])  # doctest: +SKIP
        >>> est.bound  # doctest: +SKIP
        'MTE2-bound'
    """
    from ..ascend.ascendc import reference_problem
    from ..ascend.ascendc.model import AscendcModel
    from ..registry import find_operator

    info = find_operator(name)
    spec = info.spec
    case = DEFAULT_CASES.get(spec.name)
    merged = {**(dict(case.attrs) if case and not shapes else {}), **dict(attrs or {})}
    resolved = spec.resolve_attrs(merged)
    shp = resolve_shapes(spec, shapes, resolved, small=small)
    inputs = make_inputs(spec, shp, dtype, case.ranges if case else None)
    model = AscendcModel(info.folder, spec, soc=soc)
    if progress:
        shown = ", ".join(f"{k}={'x'.join(map(str, v))}" for k, v in shp.items())
        progress(f"building {spec.name}'s AI Core kernel for the model ({soc}) and running "
                 f"{shown} with its pipes timed")
    est = model.estimate(inputs, dict(merged), costs=costs)
    problem = reference_problem(spec, inputs, resolved, est.outputs)
    if problem:
        raise OpsdkError(f"{spec.name}: the AI Core kernel on the model: {problem}; no estimate "
                         f"of a wrong kernel. Run: pytest {info.folder} --opsdk-device "
                         "ascendc-model")
    est.shapes = dict(shp)
    return est
