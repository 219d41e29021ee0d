"""How to serve one model: the options every target reads, and each target's own, nested.

``RepositoryOptions`` holds what every target's config has (batching, instances, warm-up);
``ascend`` (:class:`AscendOptions`, the npu_ge model parameters) and ``cpu``
(:class:`CpuOptions`) hold what only that target reads. Options of the other target are
refused by :meth:`RepositoryOptions.check`, naming the option.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields

from ..ascend import check_memory_options
from . import _npu_ge as ge
from ._aipp_fold import AippInput
from ._errors import TritonConfigError

__all__ = ["TARGETS", "AscendOptions", "CpuOptions", "RepositoryOptions"]

TARGETS = ("cpu", "ascend")
_NAME_OK = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")
_DEVICE_IDS = re.compile(r"^\d+(,\d+)*$")
#: Ascend options a cpu build ignores rather than refuses (the CLI always passes --cann).
_CPU_IGNORES = ("cann", "aipp")

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
class AscendOptions:
    """The npu_ge options (``--target ascend``): the model parameters of the same names (see
    docs/serving.md). ``session_options`` are GE session options without the ``session.``
    prefix; ``shape_gears`` give one value per variable input dim each; ``cann`` is a CANN
    release (or ``auto``: the installed toolkit's, else the default) whose GE parser rules
    the model file must follow; ``output_dims`` give an output's dims as npu_ge expressions
    of the input dim names where the graph does not determine them, ``probe_dims`` input
    dim sizes the model accepts, to check the output dim names on, and ``probe_values`` a
    value for each value input on those runs (default: the constant the graph compares the
    input with, else 0); ``op_projects`` are ``opsdk cann`` projects whose plugin keys apply.

    Example:
        >>> AscendOptions(static_model=True, cann="8.1.RC1").changed()
        ['static_model', 'cann']
    """

    device_ids: str = "0"  # NPU ids for npu_ge's device_ids parameter
    static_model: bool = False  # npu_ge static graph (fixed shapes)
    cann: str = "auto"
    device_exec_blocks: int | None = None  # graphs per device
    instance_exec_blocks: int | None = None  # graphs per instance_group count
    session_options: tuple[tuple[str, str], ...] = ()
    shape_gears: tuple[tuple[int, ...], ...] = ()
    dump_graph: bool = False
    profiling: str | None = None  # "true" or "dynamic"
    dump_data: bool = False
    op_projects: tuple[str, ...] = ()
    output_dims: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (output, exprs per dim)
    probe_dims: tuple[tuple[tuple[str, int], ...], ...] = ()  # input dim sizes to probe
    probe_values: tuple[tuple[str, float], ...] = ()  # value inputs' values to probe
    buffer_optimize: str | None = None  # GE's ge.bufferOptimize (session option)
    static_memory_policy: int | None = None  # GE's ge.exec.staticMemoryPolicy
    aipp: AippInput | None = None  # a preprocess declaration folded in as AIPP

    def changed(self) -> list[str]:
        """The options set to other than their defaults, in field order."""
        default = AscendOptions()
        return [f.name for f in fields(self) if getattr(self, f.name) != getattr(default, f.name)]

    def check(self) -> None:
        """Options that cannot work with npu_ge, whatever the model."""
        ids = self.device_ids
        if not _DEVICE_IDS.match(ids) or len(set(ids.split(","))) != len(ids.split(",")):
            raise TritonConfigError(
                f"device_ids {ids!r} is not a list of distinct NPU ids: npu_ge splits it at "
                "',' and reads each part as an integer; write e.g. --device-ids 0 or "
                "--device-ids 2,3 (npu-smi info lists the ids)"
            )
        for name in ("device_exec_blocks", "instance_exec_blocks"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise TritonConfigError(f"{name} {value} must be >= 1 (or left unset)")
        if self.profiling is not None and self.profiling not in ge.PROFILING_VALUES:
            raise TritonConfigError(
                f"profiling {self.profiling!r}: npu_ge switches profiling on only for "
                f"{' or '.join(ge.PROFILING_VALUES)}; pass one of those"
            )
        for key, _ in self.session_options:
            if not key or "=" in key or key.startswith("session."):
                raise TritonConfigError(
                    f"session option {key!r}: give the GE option name without the 'session.' "
                    "prefix, e.g. --session-option ge.exec.precision_mode_v2=fp16"
                )
        try:
            check_memory_options(self.buffer_optimize, self.static_memory_policy)
        except ValueError as e:
            raise TritonConfigError(str(e)) from None


@dataclass(frozen=True)
class CpuOptions:
    """The Python backend's options (``--target cpu``): ``threads`` per model instance
    (ONNX Runtime parts and opsdk kernels).

    Example:
        >>> CpuOptions(threads=4).threads
        4
    """

    threads: int = 1


@dataclass(frozen=True)
class RepositoryOptions:
    """How to serve one model. ``max_batch_size=None`` picks 32 when the model is batchable.

    ``operators_path``: the folders the served model finds its operators in (None: the
    folders of the model's custom ops); ``extra_parameters`` are added to the config's
    parameters as given. ``ascend`` and ``cpu`` hold each target's own options (None: the
    defaults).

    Example:
        >>> o = RepositoryOptions("m", target="ascend", ascend=AscendOptions(static_model=True))
        >>> o.npu.static_model, o.host.threads
        (True, 1)
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
    extra_parameters: tuple[tuple[str, str], ...] = field(default=())
    ascend: AscendOptions | None = None
    cpu: CpuOptions | None = None

    @property
    def npu(self) -> AscendOptions:
        """The ascend options, the defaults when none were given."""
        return self.ascend if self.ascend is not None else AscendOptions()

    @property
    def host(self) -> CpuOptions:
        """The cpu options, the defaults when none were given."""
        return self.cpu if self.cpu is not None else CpuOptions()

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
        _in_range("threads", self.host.threads, 1, _INT32_MAX)
        _in_range("max_queue_delay_us", self.max_queue_delay_us, 0, _UINT64_MAX)
        for size in self.preferred_batch_sizes:
            _in_range("preferred batch size", size, 1, _INT32_MAX)
        if self.target == "ascend":
            self.npu.check()
        else:
            changed = _set_on_cpu(self.npu)
            if changed:
                raise TritonConfigError(
                    f"{changed[0]} is an npu_ge option: use it with --target ascend")
        _check_extra(self.target, self.extra_parameters)


def _set_on_cpu(npu: AscendOptions) -> list[str]:
    """The npu_ge options set on a cpu build: given (not empty, false or None) or, for
    ``device_ids``, other than ``0``; ``cann`` and ``aipp`` are ignored there."""
    names = [f.name for f in fields(npu) if f.name not in _CPU_IGNORES]
    return [n for n in names if (getattr(npu, n) != "0" if n == "device_ids" else
                                 getattr(npu, n) is not None if n == "static_memory_policy" else
                                 bool(getattr(npu, n)))]


def _check_extra(target: str, params: tuple[tuple[str, str], ...]) -> None:
    """The parameters npu_ge reads (the cpu target's model.py reads any)."""
    if target != "ascend":
        return
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
