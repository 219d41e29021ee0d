"""The validation cases of an operator, run by its kernel built for another machine.

Every case of :func:`build_cases` is generated as for the CPU tests, all of them go through
one run of the cross-built harness (:class:`opsdk.runtime.cross.CrossOperator`, under qemu
for aarch64), and each result is judged by :func:`run_case` against the NumPy reference
with the same precision standards as on the CPU.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..build import Progress
from ..errors import KernelError
from ..registry import load_spec
from ._cases import build_cases, make_inputs
from ._runner import CaseResult, run_case

__all__ = ["CrossValidation", "validate_cross"]


class _Replay:
    """An executor that hands back the outputs the harness already computed, in order."""

    def __init__(self, results: Sequence[list[np.ndarray] | str]) -> None:
        self._results = list(results)

    def run(self, inputs: Sequence[Any], attrs: dict[str, Any] | None = None) -> list[np.ndarray]:
        result = self._results.pop(0)
        if isinstance(result, str):
            raise KernelError(result)
        return result


@dataclass
class CrossValidation:
    """Per-case results of one operator on one machine target, with summary figures."""

    op: str
    arch: str
    results: list[CaseResult]

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    @property
    def failures(self) -> list[CaseResult]:
        return [r for r in self.results if not r.passed]

    def max_abs_error(self) -> dict[str, float]:
        """The largest finite absolute error per output dtype over every case."""
        worst: dict[str, float] = {}
        for r in self.results:
            for c in r.comparisons:
                worst[c.dtype] = max(worst.get(c.dtype, 0.0), float(c.max_abs_error))
        return worst

    def summary(self) -> str:
        """One line of figures, then one block per failing case."""
        errs = ", ".join(f"{d} {e:.3g}" for d, e in sorted(self.max_abs_error().items()))
        head = (
            f"{self.op} on {self.arch}: {len(self.results)} cases, "
            f"{len(self.results) - len(self.failures)} passed; max abs error {errs or '-'}"
        )
        return "\n".join([head, *(r.summary() for r in self.failures)])


def validate_cross(
    folder: str | os.PathLike[str],
    arch: str = "aarch64",
    *,
    seed: int = 0,
    progress: Progress | None = None,
) -> CrossValidation:
    """Build the operator in ``folder`` for ``arch`` and run all its cases in one batch.

    Raises DeviceUnavailable (with the reason) when the cross toolchain or emulator is
    missing, BuildError when the kernel does not compile for ``arch``.

    Example:
        >>> v = validate_cross("operators/thresholded_relu", "aarch64")  # doctest: +SKIP
        >>> v.passed, len(v.results)  # doctest: +SKIP
        (True, 46)
    """
    from ..runtime.cross import CrossOperator

    spec = load_spec(folder)
    op = CrossOperator(spec, Path(folder), arch, progress=progress)
    cases = build_cases(spec)
    calls = [op.call(make_inputs(spec, c, seed), dict(c.attrs)) for c in cases]
    replay = _Replay(op.run_many(calls))
    device = f"{arch} (cross-built harness)"
    results = [run_case(spec, replay, c, seed=seed, device=device) for c in cases]
    return CrossValidation(spec.name, arch, results)
