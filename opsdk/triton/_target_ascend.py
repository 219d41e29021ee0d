"""``--target ascend``: a model folder the Triton GE backend (npu_ge) loads and batches.

Every check here mirrors what the backend's source does with a config (see
:mod:`opsdk.triton._npu_ge`); each error names the tensor or option and the fix.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from onnx import ModelProto

from ..ascend import (
    GE_BUFFER_OPTIMIZE,
    GE_STATIC_MEMORY_POLICY,
    MemoryOptions,
    default_origin_op_type,
    memory_findings,
    project_plugin_keys,
)
from ..ascend.atc.rules import model_problems
from ..ascend.socs import CannArgError
from ..ascend.versions import resolve_cann
from ..onnx import find_spec
from . import _npu_ge as ge
from ._aipp_fold import AIPP_FILE, DECLARATION_FILE, insert_op_cfg, served_io
from ._ascend_dims import output_dim_names
from ._ascend_model import DimOptions, custom_specs, prepare_ascend_model
from ._config import base_context, batch_size, template_env, warmup_context
from ._errors import TritonConfigError, TritonConfigWarning
from ._onnx_io import GraphIO, TensorIO
from ._options import RepositoryOptions

__all__ = [
    "DOC", "resolve", "render", "model_file", "check_folder", "copies",
    "default_preferred", "shape_gear_parameters",
]

DOC = f"ascend (Triton GE backend {ge.BACKEND}, loaded from {ge.LIBRARY})"
MODEL_FILE = "1/model.onnx"


def resolve(io: GraphIO, opts: RepositoryOptions,
            report: Callable[[str], None] | None = None) -> RepositoryOptions:
    """No batching by default for a model whose outputs have variable non-batch dims:
    npu_ge would not merge its requests, and reads their dim names shifted when batching."""
    inner = _variable_inner_dims(io)
    if opts.max_batch_size is not None or opts.static_model or not inner:
        return opts
    if report and io.batchable():
        report(f"{opts.name}: max_batch_size 0: output '{inner[0]}' has variable dims outside "
               "the batch axis, so npu_ge would not merge requests; pass --max-batch-size N "
               "to batch anyway")
    return replace(opts, max_batch_size=0)


def _variable_inner_dims(io: GraphIO) -> list[str]:
    return [t.name for t in io.outputs if any(d is None for d in t.shape[1:])]


def render(io: GraphIO, opts: RepositoryOptions, source: str) -> dict[str, str]:
    """config.pbtxt (the model file is written by :func:`model_file`)."""
    cann = resolve_cann(opts.cann).version
    opts = resolve(io, opts)
    _check_tensors(io, opts)
    ctx = base_context(served_io(io, opts.aipp), opts, source, DOC)
    batched = ctx["batched"]
    if opts.static_model:
        _check_static(io, opts, batched)
    if ctx["dynamic_batching"] and not ctx["preferred_batch_sizes"]:
        ctx["preferred_batch_sizes"] = default_preferred(ctx["max_batch_size"])
    ctx["warmup"] = warmup_context(served_io(io, opts.aipp), opts, ctx["max_batch_size"],
                                   ctx["preferred_batch_sizes"])
    _memory_warnings(io, opts)
    reason = _no_merge_reason(io, batched)
    if reason and ctx["dynamic_batching"]:
        warnings.warn(TritonConfigWarning(
            f"{opts.name}: npu_ge will not merge queued requests into one NPU run: {reason}"
        ), stacklevel=3)
    ctx.update(
        backend=ge.BACKEND,
        parameters=_parameters(io, opts),
        model_file=MODEL_FILE,
        cann=str(cann),
        custom_keys=_custom_keys(io, _registered(opts)),
        merges=not reason,
        merge_reason=reason,
        dim_names=_dim_names(io, batched),
        aipp=opts.aipp,
        aipp_file=f"1/{AIPP_FILE}",
        declaration_file=f"1/{DECLARATION_FILE}",
    )
    files = {"config.pbtxt": template_env().get_template("config_ascend.pbtxt.j2").render(ctx)}
    if opts.aipp is not None:
        files[f"1/{AIPP_FILE}"] = insert_op_cfg(io, opts.aipp, opts.name)
        files[f"1/{DECLARATION_FILE}"] = Path(opts.aipp.declaration).read_text()
    return files


def model_file(
    proto: ModelProto, io: GraphIO, opts: RepositoryOptions, report: Callable[[str], None]
) -> ModelProto:
    """The .onnx npu_ge opens with ONNX Runtime 1.23.2 and parses with GE (see
    :mod:`opsdk.triton._ascend_model`); refused if GE's parser rules would reject it.
    ``report`` receives one line per change made to the model."""
    cann = resolve_cann(opts.cann).version
    opts = resolve(io, opts)
    dims = DimOptions(dict(opts.output_dims), [dict(p) for p in opts.probe_dims],
                      opts.shape_gears, dict(opts.probe_values))
    out = prepare_ascend_model(proto, cann, opts.name, batch_size(io, opts) > 0,
                               _registered(opts), dims)
    problems = model_problems(out.proto, cann, out.keys, custom_specs(out.proto, opts.name))
    if problems:
        raise TritonConfigError(
            f"{opts.name}: the GE ONNX parser of CANN {cann} would reject the model: "
            + "; ".join(problems)
        )
    for note in out.notes:
        report(f"{opts.name}: {note}")
    return out.proto


def copies(io: GraphIO, opts: RepositoryOptions) -> dict[str, Path]:
    """Nothing besides the model file: GE maps custom nodes to the installed CANN package."""
    return {}


def check_folder(target: Path) -> None:
    """Refuse a model folder holding a model file other than the one opsdk writes: npu_ge
    takes the first .onnx (else .pb) anywhere under the folder, versions ignored."""
    if not target.is_dir():
        return
    others = sorted(
        p.relative_to(target).as_posix() for p in target.rglob("*")
        if p.suffix in (".onnx", ".pb") and p.relative_to(target).as_posix() != MODEL_FILE
    )
    if others:
        raise TritonConfigError(
            f"{target} holds {', '.join(others[:3])}: npu_ge loads the first .onnx (else .pb) "
            "it finds anywhere under the model folder, whatever the version folder, so it might "
            f"not load {MODEL_FILE}; move those files out or pick another --name / -o"
        )


def _memory_warnings(io: GraphIO, opts: RepositoryOptions) -> None:
    """The doctor's warnings on the memory options (:mod:`opsdk.ascend.atc._memory`): the
    graph is dynamic unless static or geared; several graphs run at once with several
    instances or exec blocks."""
    variable = any(d is None for t in io.inputs for d in t.shape)
    graphs = (opts.device_exec_blocks or 1) * len(opts.device_ids.split(",")) \
        if opts.device_exec_blocks else opts.instances * (opts.instance_exec_blocks or 1)
    found = memory_findings(MemoryOptions(
        opts.buffer_optimize, opts.static_memory_policy,
        dynamic=variable and not opts.static_model and not opts.shape_gears,
        gears=bool(opts.shape_gears), concurrent_graphs=graphs))
    for f in found:
        warnings.warn(TritonConfigWarning(f"{opts.name}: {f.reason} -- fix: {f.fix}"),
                      stacklevel=4)


def _dim_names(io: GraphIO, batched: bool) -> list[tuple[str, str]]:
    """Each output with variable dims in the config, and its dims as npu_ge computes them."""
    rows = []
    for t in io.outputs:
        used = output_dim_names(t.names, batched) if t.names else [""] * len(t.shape)
        shown = [str(d) if d is not None else (used[i] or "?") for i, d in enumerate(t.shape)]
        if any(d is None for d in t.shape[1 if batched else 0:]):
            rows.append((t.name, ", ".join(["batch", *shown[1:]] if batched else shown)))
    return rows


def default_preferred(max_batch: int) -> list[int]:
    """Powers of two up to ``max_batch``, and ``max_batch`` itself.

    Example:
        >>> default_preferred(32), default_preferred(12), default_preferred(1)
        ([2, 4, 8, 16, 32], [2, 4, 8, 12], [1])
    """
    sizes = [1 << k for k in range(1, max_batch.bit_length()) if 1 << k <= max_batch]
    return sizes + [max_batch] if max_batch not in sizes else sizes


def _registered(opts: RepositoryOptions) -> dict[str, list[str]]:
    """The plugin keys of the ``opsdk cann`` projects given (``--op-project``)."""
    try:
        return project_plugin_keys(opts.op_projects)
    except CannArgError as e:
        raise TritonConfigError(str(e)) from e


def _custom_keys(io: GraphIO, registered: dict[str, list[str]]) -> list[tuple[str, list[str]]]:
    keys = []
    for op in io.custom_ops:
        domain, name = op.split("::")
        spec = find_spec(domain, name)
        default = [default_origin_op_type(spec)] if spec else ["(unknown operator)"]
        keys.append((op, registered.get(name) or default))
    return keys


def _check_tensors(io: GraphIO, opts: RepositoryOptions) -> None:
    for kind, ts in (("input", io.inputs), ("output", io.outputs)):
        for t in ts:
            if t.data_type not in ge.CONFIG_DTYPES:
                raise TritonConfigError(
                    f"{opts.name}: {kind} '{t.name}' is {t.data_type}, which npu_ge cannot "
                    f"serve (it handles {', '.join(sorted(ge.CONFIG_DTYPES))}); add a Cast at "
                    "the model's edge (e.g. to float32 or float16) and re-export"
                )
            if opts.static_model and kind == "input" and any(
                    c in t.name for c in ge.STATIC_NAME_SEPARATORS):
                raise TritonConfigError(
                    f"{opts.name}: input '{t.name}' contains one of ':', ';', ',', which npu_ge's "
                    "static graph uses to write GE's input_shape (name:d0,d1;...); rename the "
                    "input or drop --static-model"
                )


def _check_static(io: GraphIO, opts: RepositoryOptions, batched: bool) -> None:
    for t in io.inputs + io.outputs:
        if any(d is None for d in t.shape[1 if batched else 0:]):
            raise TritonConfigError(
                f"{opts.name}: npu_ge's static graph needs fixed shapes, but '{t.name}' has "
                f"variable dims {t.dims(batched)}"
                + (" outside the batch axis" if batched else "")
                + "; export with fixed shapes or drop --static-model"
            )


def _no_merge_reason(io: GraphIO, batched: bool) -> str:
    if not batched:
        return ""
    for t in io.outputs:
        if -1 in t.dims(True):
            return (f"output '{t.name}' has a variable dim outside the batch axis "
                    f"(dims {t.dims(True)}); it merges only outputs whose other dims are fixed")
    return ""


def _parameters(io: GraphIO, opts: RepositoryOptions) -> list[tuple[str, str]]:
    params = [("device_ids", opts.device_ids)]
    for name in ("device_exec_blocks", "instance_exec_blocks"):
        if getattr(opts, name) is not None:
            params.append((name, str(getattr(opts, name))))
    if opts.static_model:
        params.append(("static_model", "1"))
    for name, on in (("dump_graph", opts.dump_graph), ("dump_data", opts.dump_data)):
        if on:
            params.append((name, "1"))
    if opts.profiling:
        params.append(("profiling", opts.profiling))
    if opts.buffer_optimize is not None:
        params.append((f"session.{GE_BUFFER_OPTIMIZE}", opts.buffer_optimize))
    if opts.static_memory_policy is not None:
        params.append((f"session.{GE_STATIC_MEMORY_POLICY}", str(opts.static_memory_policy)))
    params += [(f"session.{k}", v) for k, v in opts.session_options]
    if opts.aipp is not None:
        params.append((ge.INSERT_OP_FILE_KEY, opts.aipp.path))
    if opts.shape_gears:
        params += shape_gear_parameters(io.inputs, opts.shape_gears, opts.name)
    params += list(opts.extra_parameters)
    seen: set[str] = set()
    for key, _ in params:
        if key in seen:
            raise TritonConfigError(f"{opts.name}: parameter {key!r} is given twice")
        seen.add(key)
    return params


def shape_gear_parameters(
    inputs: tuple[TensorIO, ...], gears: tuple[tuple[int, ...], ...], label: str = "model"
) -> list[tuple[str, str]]:
    """``graph.ge.inputShape`` / ``dynamicDims`` / ``dynamicNodeType`` for GE shape gears.

    Each gear gives one value per variable dim of the inputs, in input order (the batch dim
    included): GE compiles one graph per gear and runs a request on the gear it matches.

    Example:
        >>> from opsdk.triton._onnx_io import TensorIO
        >>> x = TensorIO("image", "TYPE_FP32", (None, 3, 224, 224))
        >>> shape_gear_parameters((x,), ((1,), (4,), (8,)))  # doctest: +NORMALIZE_WHITESPACE
        [('graph.ge.inputShape', 'image:-1,3,224,224'), ('graph.ge.dynamicDims', '1;4;8'),
         ('graph.ge.dynamicNodeType', '1')]
    """
    shape = ";".join(f"{t.name}:{','.join(str(d) for d in t.dims(False))}" for t in inputs)
    variable = sum(t.dims(False).count(-1) for t in inputs)
    if variable == 0:
        raise TritonConfigError(
            f"{label}: shape gears need variable input dims, but every input shape is fixed "
            f"({shape}); drop --shape-gears"
        )
    for gear in gears:
        if len(gear) != variable or any(v < 1 for v in gear):
            raise TritonConfigError(
                f"{label}: shape gear {','.join(map(str, gear))} must give {variable} positive "
                f"values, one per -1 in {shape}; e.g. --shape-gears "
                f"\"{';'.join(','.join(['1'] * variable) for _ in range(2))}\""
            )
    dims = ";".join(",".join(str(v) for v in gear) for gear in gears)
    shape_key, dims_key, node_type_key = ge.SHAPE_GEAR_KEYS
    return [(shape_key, shape), (dims_key, dims), (node_type_key, "1")]
