"""``model_warmup`` entries: one zero-data request per shape the server will run.

Triton runs each entry when it loads the model, before it takes traffic, so the first real
request finds its graph compiled. Which shapes those are depends on the model:

* with GE shape gears (``--shape-gears``), one entry per gear: GE compiled one graph per
  gear, and a request runs on the gear its shape matches (the batch dim is the gear's value
  of the leading dim when the model batches);
* otherwise, one entry per batch size the dynamic batcher forms: 1 (a request alone), each
  preferred batch size and ``max_batch_size``; a variable dim outside the batch axis warms
  up with size 1, as a zero-data request needs concrete dims.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._errors import TritonConfigError
from ._onnx_io import GraphIO, TensorIO

__all__ = ["warmup_requests", "batch_sizes_formed"]


def batch_sizes_formed(max_batch: int, preferred: Sequence[int], dynamic: bool) -> list[int]:
    """The batch sizes a model instance sees: 1, each preferred size and the maximum when
    the dynamic batcher merges requests, else 1 (and nothing above it for an unbatched model).

    Example:
        >>> batch_sizes_formed(8, [4], True), batch_sizes_formed(8, [], False)
        ([1, 4, 8], [1])
    """
    if max_batch <= 0 or not dynamic:
        return [1]
    return sorted({1, *preferred, max_batch})


def warmup_requests(io: GraphIO, gears: Sequence[Sequence[int]], max_batch: int,
                    preferred: Sequence[int], dynamic: bool,
                    label: str = "model") -> list[dict[str, Any]]:
    """``[{"name", "batch_size", "inputs": [{"name", "data_type", "dims"}]}]`` for the
    config template: one entry per gear if ``gears`` are given, else one per batch size
    formed (see the module docstring).

    Raises:
        TritonConfigError: a gear gives the inputs different batch sizes, or a batch size
            above ``max_batch_size``.

    Example:
        >>> from opsdk.triton._onnx_io import GraphIO, TensorIO
        >>> io = GraphIO((TensorIO("x", "TYPE_FP32", (None, 3, None)),), (), ())
        >>> [(r["name"], r["batch_size"], r["inputs"][0]["dims"])
        ...  for r in warmup_requests(io, [(1, 224), (4, 448)], 4, [], True)]
        [('opsdk_gear_1_224', 1, [3, 224]), ('opsdk_gear_4_448', 4, [3, 448])]
    """
    batched = max_batch > 0
    if gears:
        return [_gear_request(io.inputs, gear, batched, max_batch, label) for gear in gears]
    return [{"name": f"opsdk_batch_{b}", "batch_size": b,
             "inputs": [_row(t, [1 if d < 0 else d for d in t.dims(batched)]) for t in io.inputs]}
            for b in batch_sizes_formed(max_batch, preferred, dynamic)]


def _row(t: TensorIO, dims: list[int]) -> dict[str, Any]:
    return {"name": t.name, "data_type": t.data_type, "dims": dims}


def _gear_request(inputs: Sequence[TensorIO], gear: Sequence[int], batched: bool,
                  max_batch: int, label: str) -> dict[str, Any]:
    values = iter(gear)
    full = [[next(values) if d < 0 else d for d in t.dims(False)] for t in inputs]
    text = ",".join(map(str, gear))
    batch = 1
    if batched:
        leading = {dims[0] for dims in full}
        if len(leading) != 1:
            raise TritonConfigError(
                f"{label}: shape gear {text} gives the inputs batch sizes "
                f"{sorted(leading)}; a batched model's inputs share one batch dim, so give them "
                "the same value in each gear")
        batch = leading.pop()
        if batch > max_batch:
            raise TritonConfigError(
                f"{label}: shape gear {text} has batch {batch} > max_batch_size {max_batch}; "
                f"raise --max-batch-size to {batch} or drop that gear")
        full = [dims[1:] for dims in full]
    return {"name": f"opsdk_gear_{text.replace(',', '_')}", "batch_size": batch,
            "inputs": [_row(t, dims) for t, dims in zip(inputs, full)]}
