"""Devices the numerical tests run on: cpu, onnxruntime, triton, npu, ascendc-model.

:func:`open_device` returns an executor (``run(inputs, attrs) -> list of arrays``) or
raises :class:`~opsdk.errors.DeviceUnavailable` with the reason; the pytest plugin turns
that into a skip. Nothing is ever emulated: a device either really runs or is skipped.
``ascendc-model`` runs the operator's AI Core kernel on opsdk's CPU model of the Ascend C
API (a model, never an NPU); ``ascendc-cpu`` and ``ascendc-sim`` need a CANN toolkit.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..dtypes import native_order
from ..errors import DeviceUnavailable
from ..runtime import open_registered
from ..spec import OpSpec

__all__ = ["DEVICES", "open_device"]

#: Devices whose kernels run on this host, in a worker process when isolated: a kernel that
#: crashes or never returns fails its case, as on cpu (npu and triton run elsewhere).
ISOLABLE: tuple[str, ...] = ("onnxruntime", "ascendc-model", "ascendc-cpu", "ascendc-sim",
                             "aarch64")
_WORKER_OPTIONS = ("isolate", "timeout", "sanitize")

DEVICES: tuple[str, ...] = (
    "cpu", "onnxruntime", "triton", "npu", "ascendc-model", "ascendc-cpu", "ascendc-sim",
    "aarch64",
)


def open_device(device: str, folder: Path, spec: OpSpec, options: dict[str, Any]) -> Any:
    """An executor of the operator in ``folder`` on ``device``.

    Example:
        >>> open_device("cpu", Path("operators/thresholded_relu"), spec, {})  # doctest: +SKIP
        <opsdk.Operator com.opsdk::ThresholdedRelu (cpu)>
    """
    if device == "cpu":
        from ..runtime import load

        op = load(str(folder))
        if options.get("sanitize") or options.get("isolate") or options.get("timeout"):
            return _isolated(op, folder, spec, options)
        return op
    if device == "triton":
        return _Triton(spec, options)
    if device not in DEVICES:
        raise DeviceUnavailable(f"unknown device {device!r}; expected one of {', '.join(DEVICES)}")
    ex = _open_here(device, folder, spec, options)
    if device in ISOLABLE and (options.get("isolate") or options.get("timeout")):
        from ..runtime.isolated import IsolatedOperator

        timeout = float(options["timeout"]) if options.get("timeout") else None
        rest = {k: v for k, v in options.items() if k not in _WORKER_OPTIONS}
        return IsolatedOperator.of_device(ex, folder, f"{__name__}:open_device", device, rest,
                                          timeout=timeout)
    return ex


def _open_here(device: str, folder: Path, spec: OpSpec, options: dict[str, Any]) -> Any:
    if device == "aarch64":  # the kernel cross-built for the AI CPU's ISA, run under qemu
        from ..runtime.cross import CrossOperator

        return CrossOperator(spec, folder, "aarch64")
    # onnxruntime, npu, ascendc-*: the wings register their own (opsdk.runtime._devices)
    return open_registered(device, folder, spec, options)


def _isolated(op: Any, folder: Path, spec: OpSpec, options: dict[str, Any]) -> Any:
    """The cpu executor in a worker process, with the sanitizer build when asked."""
    from ..build import build_sanitized, parse_sanitizers, sanitizer_env
    from ..runtime.isolated import IsolatedOperator

    timeout = float(options["timeout"]) if options.get("timeout") else None
    if not options.get("sanitize"):
        return IsolatedOperator(op, timeout=timeout)
    sanitizers = parse_sanitizers(str(options["sanitize"]))
    built = build_sanitized(folder, sanitizers, name=spec.snake_name)
    env = sanitizer_env(sanitizers)
    return IsolatedOperator(op, timeout=timeout, module=built.module, env=env, guard=False)


class _Triton:
    """A model served by a running Triton server (``--opsdk-triton-url`` or
    ``$OPSDK_TRITON_URL``), named after the operator's snake name unless
    ``--opsdk-triton-model`` says otherwise. Attributes are baked into a served model,
    so only cases with the default attributes run; others are skipped with the reason."""

    def __init__(self, spec: OpSpec, options: dict[str, Any]) -> None:
        url = options.get("triton_url") or os.environ.get("OPSDK_TRITON_URL")
        if not url:
            raise DeviceUnavailable(
                "triton unavailable: no server configured; pass --opsdk-triton-url=127.0.0.1:8000 "
                "or set OPSDK_TRITON_URL to a running server (see `opsdk serve`)"
            )
        try:
            import tritonclient.http as httpclient
        except ImportError as e:
            raise DeviceUnavailable(
                f"triton unavailable: tritonclient is not installed ({e})"
            ) from e
        self.spec = spec
        self.model = options.get("triton_model") or spec.snake_name
        self._http = httpclient
        try:
            self.client = httpclient.InferenceServerClient(url=str(url))
            ready = self.client.is_model_ready(self.model)
        except Exception as e:  # connection refused, DNS, ...
            raise DeviceUnavailable(f"triton unavailable: server {url} not reachable ({e})") from e
        if not ready:
            raise DeviceUnavailable(f"triton unavailable: model {self.model!r} not ready on {url}")
        meta = self.client.get_model_metadata(self.model)
        self.signature = {t["name"]: (t["datatype"], [int(d) for d in t["shape"]])
                          for t in meta["inputs"]}

    def _skip_unless_served(self, name: str, arr: np.ndarray) -> None:
        """Skip a case whose input the served model's fixed signature cannot take."""
        want = self.signature.get(name)
        got = (_triton_dtype(arr), list(arr.shape))
        ok = want is not None and want[0] == got[0] and len(want[1]) == len(got[1]) and all(
            w in (-1, g) for w, g in zip(want[1], got[1], strict=True)
        )
        if not ok:
            served = "absent" if want is None else f"{want[0]}{want[1]}"
            raise DeviceUnavailable(
                f"triton: the served model {self.model!r} takes input {name!r} as {served}; "
                f"this case has {got[0]}{got[1]}"
            )

    def run(self, inputs: Sequence[Any], attrs: dict[str, Any] | None = None) -> list[np.ndarray]:
        given = {k: v for k, v in (attrs or {}).items()}
        defaults = self.spec.resolve_attrs({})
        if self.spec.resolve_attrs(given) != defaults:
            raise DeviceUnavailable(
                f"triton: the served model {self.model!r} bakes in the default attributes "
                f"{defaults}; this case sets {given}"
            )
        reqs = []
        for decl, a in zip(self.spec.inputs, inputs, strict=False):
            if a is None:
                continue
            arr = np.ascontiguousarray(native_order(a))
            self._skip_unless_served(decl.name, arr)
            inp = self._http.InferInput(decl.name, list(arr.shape), _triton_dtype(arr))
            inp.set_data_from_numpy(arr)
            reqs.append(inp)
        outs = [self._http.InferRequestedOutput(o.name) for o in self.spec.outputs]
        result = self.client.infer(self.model, reqs, outputs=outs)
        return [np.asarray(result.as_numpy(o.name)) for o in self.spec.outputs]


def _triton_dtype(a: np.ndarray) -> str:
    from tritonclient.utils import np_to_triton_dtype

    return str(np_to_triton_dtype(a.dtype))
