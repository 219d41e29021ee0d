"""``--target ascend``: a model folder the Triton GE backend (npu_ge) loads and batches.

Every check here mirrors what the backend's source does with a config (see
:mod:`opsdk.triton._npu_ge`); each error names the tensor or option and the fix.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

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
from ..registry import OperatorInfo
from . import _npu_ge as ge
from ._aipp_fold import AIPP_FILE, DECLARATION_FILE, insert_op_cfg, served_io
from ._ascend_dims import output_dim_names
from ._ascend_model import DimOptions, custom_specs, prepare_ascend_model
from ._config import base_context, check_preferred, template_env, warmup_context
from ._errors import TritonConfigError, TritonConfigWarning
from ._onnx_io import GraphIO, TensorIO, read_graph_io
from ._options import RepositoryOptions
from ._plan import RepositoryPlan, batch_size

__all__ = [
    "DOC", "plan", "render", "model_file", "check_folder", "copies",
    "default_preferred", "shape_gear_parameters",
]

DOC = f"ascend (Triton GE backend {ge.BACKEND}, loaded from {ge.LIBRARY})"
MODEL_FILE = "1/model.onnx"


def plan(io: GraphIO, opts: RepositoryOptions, source: str,
         operators: Mapping[str, OperatorInfo],
         report: Callable[[str], None] | None = None) -> RepositoryPlan:
    """The config's decisions for ``io`` (the model as given), each made once: the CANN
    release, the batching, the preferred batch sizes and the registered plugin keys; every
    check of the config runs here, and its warnings are given here, once."""
    cann = resolve_cann(opts.npu.cann)
    opts, why = _resolve_batching(io, opts, report)
    _check_tensors(io, opts)
    given = served_io(io, opts.npu.aipp)
    max_batch = batch_size(given, opts)
    preferred = check_preferred(opts.preferred_batch_sizes, opts, max_batch)
    if max_batch > 0 and opts.dynamic_batching and not preferred:
        preferred = default_preferred(max_batch)
    out = RepositoryPlan(opts, source, io, io, max_batch, tuple(preferred), operators,
                         batching_reason=why, cann=cann)
    if opts.npu.static_model:
        _check_static(io, opts, out.batched)
    warmup_context(given, out)
    _memory_warnings(io, opts)
    reason = _no_merge_reason(io, out.batched)
    if reason and opts.dynamic_batching:
        warnings.warn(TritonConfigWarning(
            f"{opts.name}: npu_ge will not merge queued requests into one NPU run: {reason}"
        ), stacklevel=4)
    _parameters(io, opts)
    out = replace(out, plugin_keys=_registered(opts))
    if opts.npu.aipp is not None:
        insert_op_cfg(io, opts.npu.aipp, opts.name)
    return out


def _resolve_batching(io: GraphIO, opts: RepositoryOptions,
                      report: Callable[[str], None] | None) -> tuple[RepositoryOptions, str]:
    """No batching by default for a model whose outputs have variable non-batch dims:
    npu_ge would not merge its requests, and reads their dim names shifted when batching."""
    inner = _variable_inner_dims(io)
    if opts.max_batch_size is not None or opts.npu.static_model or not inner:
        return opts, ""
    why = (f"max_batch_size 0: output '{inner[0]}' has variable dims outside the batch axis, "
           "so npu_ge would not merge requests; pass --max-batch-size N to batch anyway")
    if report and io.batchable():
        report(f"{opts.name}: {why}")
    return replace(opts, max_batch_size=0), why


def _variable_inner_dims(io: GraphIO) -> list[str]:
    return [t.name for t in io.outputs if any(d is None for d in t.shape[1:])]


def render(plan: RepositoryPlan) -> dict[str, str]:
    """config.pbtxt (and the AIPP files) from the plan; the model file is the plan's."""
    io, opts = plan.config_io, plan.options
    aipp = opts.npu.aipp
    ctx = base_context(served_io(io, aipp), plan, DOC)
    reason = _no_merge_reason(io, plan.batched)
    assert plan.cann is not None, "an ascend plan holds its CANN release"
    ctx.update(
        backend=ge.BACKEND,
        parameters=_parameters(io, opts),
        model_file=MODEL_FILE,
        cann=str(plan.cann.version),
        custom_keys=_custom_keys(io, plan),
        merges=not reason,
        merge_reason=reason,
        dim_names=_dim_names(io, plan.batched),
        aipp=aipp,
        aipp_file=f"1/{AIPP_FILE}",
        declaration_file=f"1/{DECLARATION_FILE}",
    )
    files = {"config.pbtxt": template_env().get_template("config_ascend.pbtxt.j2").render(ctx)}
    if aipp is not None:
        files[f"1/{AIPP_FILE}"] = insert_op_cfg(io, aipp, opts.name)
        files[f"1/{DECLARATION_FILE}"] = Path(aipp.declaration).read_text()
    return files


def model_file(plan: RepositoryPlan, report: Callable[[str], None]) -> RepositoryPlan:
    """The plan with the .onnx npu_ge opens with ONNX Runtime 1.23.2 and parses with GE
    (see :mod:`opsdk.triton._ascend_model`) and its I/O (the dims it fixed and named);
    refused if GE's parser rules would reject it. ``report`` receives one line per change
    made to the model."""
    assert plan.proto is not None and plan.cann is not None
    opts, cann = plan.options, plan.cann.version
    npu = opts.npu
    dims = DimOptions(dict(npu.output_dims), [dict(p) for p in npu.probe_dims],
                      npu.shape_gears, dict(npu.probe_values))
    registered = {k: list(v) for k, v in plan.plugin_keys.items()}
    out = prepare_ascend_model(plan.proto, cann, opts.name, plan.batched, registered, dims)
    problems = model_problems(out.proto, cann, out.keys, custom_specs(out.proto, opts.name))
    if problems:
        raise TritonConfigError(
            f"{opts.name}: the GE ONNX parser of CANN {cann} would reject the model: "
            + "; ".join(problems)
        )
    for note in out.notes:
        report(f"{opts.name}: {note}")
    return replace(plan, proto=out.proto, config_io=read_graph_io(out.proto),
                   notes=(*plan.notes, *out.notes))


def copies(plan: RepositoryPlan) -> dict[str, Path]:
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
    graphs = (opts.npu.device_exec_blocks or 1) * len(opts.npu.device_ids.split(",")) \
        if opts.npu.device_exec_blocks else opts.instances * (opts.npu.instance_exec_blocks or 1)
    found = memory_findings(MemoryOptions(
        opts.npu.buffer_optimize, opts.npu.static_memory_policy,
        dynamic=variable and not opts.npu.static_model and not opts.npu.shape_gears,
        gears=bool(opts.npu.shape_gears), concurrent_graphs=graphs))
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


def _registered(opts: RepositoryOptions) -> dict[str, tuple[str, ...]]:
    """The plugin keys of the ``opsdk cann`` projects given (``--op-project``)."""
    try:
        return {k: tuple(v) for k, v in project_plugin_keys(opts.npu.op_projects).items()}
    except CannArgError as e:
        raise TritonConfigError(str(e)) from e


def _custom_keys(io: GraphIO, plan: RepositoryPlan) -> list[tuple[str, list[str]]]:
    """Each custom op and its plugin keys: the registered ones, else its spec's default."""
    keys = []
    for op in io.custom_ops:
        info = plan.operators.get(op)
        default = [default_origin_op_type(info.spec)] if info else ["(unknown operator)"]
        keys.append((op, list(plan.plugin_keys.get(op.split("::")[1], ())) or default))
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
            if opts.npu.static_model and kind == "input" and any(
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
    params = [("device_ids", opts.npu.device_ids)]
    for name in ("device_exec_blocks", "instance_exec_blocks"):
        if getattr(opts.npu, name) is not None:
            params.append((name, str(getattr(opts.npu, name))))
    if opts.npu.static_model:
        params.append(("static_model", "1"))
    for name, on in (("dump_graph", opts.npu.dump_graph), ("dump_data", opts.npu.dump_data)):
        if on:
            params.append((name, "1"))
    if opts.npu.profiling:
        params.append(("profiling", opts.npu.profiling))
    if opts.npu.buffer_optimize is not None:
        params.append((f"session.{GE_BUFFER_OPTIMIZE}", opts.npu.buffer_optimize))
    if opts.npu.static_memory_policy is not None:
        params.append((f"session.{GE_STATIC_MEMORY_POLICY}", str(opts.npu.static_memory_policy)))
    params += [(f"session.{k}", v) for k, v in opts.npu.session_options]
    if opts.npu.aipp is not None:
        params.append((ge.INSERT_OP_FILE_KEY, opts.npu.aipp.path))
    if opts.npu.shape_gears:
        params += shape_gear_parameters(io.inputs, opts.npu.shape_gears, opts.name)
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
