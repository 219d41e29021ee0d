"""The options of ``opsdk triton build`` and their checks, before any model is read.

Every target's renderer reads these; the checks of the target-only fields live here too, so
the options know no renderer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..ascend import check_memory_options
from . import _npu_ge as ge
from ._aipp_fold import AippInput
from ._errors import TritonConfigError

__all__ = ["RepositoryOptions", "TARGETS"]

TARGETS = ("cpu", "ascend")
_NAME_OK = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


#: What Triton's ModelConfig stores them in (model_config.proto): max_batch_size, instance
#: count and preferred_batch_size are int32, max_queue_delay_microseconds is uint64; a larger
#: value is one the server cannot parse, so it is refused here, at build time.
_INT32_MAX = 2**31 - 1
_UINT64_MAX = 2**64 - 1


def _in_range(name: str, value: int | None, low: int, high: int) -> None:
    if value is not None and not low <= value <= high:
        kind = "an int32" if high == _INT32_MAX else "a uint64"
        raise TritonConfigError(
            f"{name} {value} must be {low} to {high} (Triton stores it as {kind}; the server "
            "would not parse the config)"
        )


@dataclass(frozen=True)
class RepositoryOptions:
    """How to serve one model. ``max_batch_size=None`` picks 32 when the model is batchable.

    The ascend-only fields are the npu_ge model parameters of the same names (see
    docs/serving.md); ``session_options`` are GE session options without the ``session.``
    prefix; ``shape_gears`` give one value per variable input dim each; ``cann`` is a CANN
    release (or ``auto``: the installed toolkit's, else the default) whose GE parser rules
    the model file must follow; ``output_dims`` give an output's dims as npu_ge expressions
    of the input dim names where the graph does not determine them, ``probe_dims``
    input dim sizes the model accepts, to check the output dim names on, and
    ``probe_values`` a value for each value input on those runs (default: the constant the
    graph compares the input with, else 0).
    """

    name: str
    target: str = "cpu"
    max_batch_size: int | None = None
    dynamic_batching: bool = True
    preferred_batch_sizes: tuple[int, ...] = ()
    max_queue_delay_us: int = 100
    instances: int = 1
    warmup: bool = False
    operators_path: tuple[str, ...] | None = None  # None: folders of the model's custom ops
    device_ids: str = "0"  # ascend: NPU ids for npu_ge's device_ids parameter
    static_model: bool = False  # ascend: npu_ge static graph (fixed shapes)
    threads: int = 1  # cpu: threads per model instance (ONNX Runtime parts and opsdk kernels)
    extra_parameters: tuple[tuple[str, str], ...] = field(default=())
    cann: str = "auto"  # ascend
    device_exec_blocks: int | None = None  # ascend: graphs per device
    instance_exec_blocks: int | None = None  # ascend: graphs per instance_group count
    session_options: tuple[tuple[str, str], ...] = ()  # ascend
    shape_gears: tuple[tuple[int, ...], ...] = ()  # ascend
    dump_graph: bool = False  # ascend
    profiling: str | None = None  # ascend: "true" or "dynamic"
    dump_data: bool = False  # ascend
    op_projects: tuple[str, ...] = ()  # ascend: `opsdk cann` projects whose plugin keys apply
    output_dims: tuple[tuple[str, tuple[str, ...]], ...] = ()  # ascend: (output, exprs per dim)
    probe_dims: tuple[tuple[tuple[str, int], ...], ...] = ()  # ascend: input dim sizes to probe
    probe_values: tuple[tuple[str, float], ...] = ()  # ascend: value inputs' values to probe
    buffer_optimize: str | None = None  # ascend: GE's ge.bufferOptimize (session option)
    static_memory_policy: int | None = None  # ascend: GE's ge.exec.staticMemoryPolicy
    aipp: AippInput | None = None  # ascend: a preprocess declaration folded in as AIPP

    def check(self) -> None:
        """Raise :class:`TritonConfigError` for an option that cannot work."""
        if not self.name or not set(self.name) <= _NAME_OK or self.name.startswith("."):
            raise TritonConfigError(
                f"model name {self.name!r} must be non-empty, not start with '.' and use only "
                "letters, digits, '_', '-' and '.' (it becomes a folder and a URL path); "
                "pass e.g. --name my_model"
            )
        if self.target not in TARGETS:
            raise TritonConfigError(f"target {self.target!r} is not one of {', '.join(TARGETS)}")
        _in_range("max_batch_size", self.max_batch_size, 0, _INT32_MAX)
        _in_range("instances", self.instances, 1, _INT32_MAX)
        _in_range("threads", self.threads, 1, _INT32_MAX)
        _in_range("max_queue_delay_us", self.max_queue_delay_us, 0, _UINT64_MAX)
        for size in self.preferred_batch_sizes:
            _in_range("preferred batch size", size, 1, _INT32_MAX)
        (_check_ascend if self.target == "ascend" else _check_cpu)(self)


_DEVICE_IDS = re.compile(r"^\d+(,\d+)*$")
_ASCEND_ONLY = ("static_model", "device_exec_blocks", "instance_exec_blocks", "session_options",
                "shape_gears", "dump_graph", "profiling", "dump_data", "op_projects",
                "output_dims", "probe_dims", "probe_values", "buffer_optimize")


def _check_cpu(opts: RepositoryOptions) -> None:
    """Refuse npu_ge options for the cpu target."""
    for name in _ASCEND_ONLY:
        if getattr(opts, name):
            raise TritonConfigError(
                f"{name} is an npu_ge option: use it with --target ascend"
            )
    if opts.device_ids != "0":
        raise TritonConfigError("device_ids is an npu_ge option: use it with --target ascend")
    if opts.static_memory_policy is not None:
        raise TritonConfigError(
            "static_memory_policy is an npu_ge option: use it with --target ascend")


def _check_ascend(opts: RepositoryOptions) -> None:
    """Options that cannot work with npu_ge, whatever the model."""
    ids = opts.device_ids
    if not _DEVICE_IDS.match(ids) or len(set(ids.split(","))) != len(ids.split(",")):
        raise TritonConfigError(
            f"device_ids {ids!r} is not a list of distinct NPU ids: npu_ge splits it at ',' "
            "and reads each part as an integer; write e.g. --device-ids 0 or --device-ids 2,3 "
            "(npu-smi info lists the ids)"
        )
    for name in ("device_exec_blocks", "instance_exec_blocks"):
        value = getattr(opts, name)
        if value is not None and value < 1:
            raise TritonConfigError(f"{name} {value} must be >= 1 (or left unset)")
    if opts.profiling is not None and opts.profiling not in ge.PROFILING_VALUES:
        raise TritonConfigError(
            f"profiling {opts.profiling!r}: npu_ge switches profiling on only for "
            f"{' or '.join(ge.PROFILING_VALUES)}; pass one of those"
        )
    for key, _ in opts.session_options:
        if not key or "=" in key or key.startswith("session."):
            raise TritonConfigError(
                f"session option {key!r}: give the GE option name without the 'session.' "
                "prefix, e.g. --session-option ge.exec.precision_mode_v2=fp16"
            )
    try:
        check_memory_options(opts.buffer_optimize, opts.static_memory_policy)
    except ValueError as e:
        raise TritonConfigError(str(e)) from None
    _check_extra(opts.extra_parameters)


def _check_extra(params: tuple[tuple[str, str], ...]) -> None:
    for key, value in params:
        if key.startswith(ge.DEAD_PREFIXES):
            raise TritonConfigError(
                f"parameter {key!r} does nothing as a model parameter: npu_ge reads ge.* options "
                f"only from the server command line; pass --backend-config={ge.BACKEND},"
                f"{key.removeprefix('global.')}={value} to tritonserver (or set "
                "GE_NPU_CONFIG), or use session.<option> / graph.<option> for this model"
            )
        if key not in ge.MODEL_PARAMETERS and not key.startswith(ge.OPTION_PREFIXES):
            raise TritonConfigError(
                f"parameter {key!r} is not read by npu_ge; it reads "
                f"{', '.join(ge.MODEL_PARAMETERS)} and session.<GE option> / graph.<GE option>"
            )
