"""AIPP folded into an npu_ge model (``--target ascend``): a pipeline's preprocess step (an
:mod:`opsdk.preprocess` declaration) in front of an ONNX or operator step becomes GE's
AIPP operator inside that model instead of a Python-backend step.

GE takes the AIPP config of an online-compiled graph through the session option
``ge.insertOpFile`` (``INSERT_OP_FILE`` of ``ge_api_types.h``, CANN 8.1: "Configure insert
op info file by Session constructor options param, its value should be file path"), the
option ATC's ``--insert_op_conf`` sets; npu_ge forwards ``session.<option>`` model
parameters to every ``ge::Session`` it opens. So the folded model's folder holds
``1/insert_op.cfg`` (from :func:`opsdk.ascend.atc.aipp.render_insert_op_cfg`, after the
SoC's AIPP rules) and the declaration it came from, its config takes the image AIPP takes
(uint8, ``[1, *raw image shape]``: NHWC for the RGB formats) and names the file by its
absolute path (GE opens it as given). Where the rules refuse the declaration (a resize on a
SoC whose AIPP does not resize, ...), the CPU step stays and one line says why.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ._onnx_io import GraphIO, TensorIO

__all__ = ["AippInput", "AIPP_FILE", "DECLARATION_FILE", "fold_aipp", "served_io",
           "folder_aipp"]

#: Beside the model file in the version folder: the AIPP config and the declaration.
AIPP_FILE = "insert_op.cfg"
DECLARATION_FILE = "preprocess.toml"


@dataclass(frozen=True)
class AippInput:
    """The model input AIPP feeds: ``declaration`` (its path), ``soc`` (whose AIPP rules
    apply) and ``path``, where the server finds ``insert_op.cfg`` (absolute)."""

    input: str
    declaration: str
    soc: str
    path: str


def _source_dims(declaration: str) -> tuple[int, ...]:
    from ..preprocess import load_preprocess, raw_shape

    p = load_preprocess(declaration)
    return (1, *raw_shape(p.format, *p.source_size))


def served_io(io: GraphIO, aipp: AippInput | None) -> GraphIO:
    """The model's inputs as a request gives them: the AIPP input uint8 at the source size."""
    if aipp is None:
        return io
    inputs = tuple(TensorIO(t.name, "TYPE_UINT8", _source_dims(aipp.declaration))
                   if t.name == aipp.input else t for t in io.inputs)
    return replace(io, inputs=inputs)


def insert_op_cfg(io: GraphIO, aipp: AippInput, model: str) -> str:
    """The ``insert_op.cfg`` text; :class:`TritonConfigError` where the rules refuse it."""
    from ..ascend.atc.aipp import AippError, render_insert_op_cfg
    from ..preprocess import load_preprocess
    from ._errors import TritonConfigError

    names = [t.name for t in io.inputs]
    if aipp.input not in names:
        raise TritonConfigError(f"{model}: AIPP input {aipp.input!r} is not an input of the "
                                f"model ({', '.join(names)}); name one of those")
    rank = names.index(aipp.input)
    try:
        return render_insert_op_cfg(load_preprocess(aipp.declaration), soc=aipp.soc,
                                    model_dims=list(io.inputs[rank].shape), rank=rank,
                                    input_name=aipp.input)
    except AippError as e:
        raise TritonConfigError(f"{model}: AIPP for input {aipp.input!r} on {aipp.soc}: {e}") \
            from None


def folder_aipp(folder: Path, parameters: dict[str, str], io: GraphIO
                ) -> tuple[AippInput | None, list[str]]:
    """The AIPP a written npu_ge folder declares (its ``session.ge.insertOpFile``
    parameter) and what is wrong with it: the file is not the folder's own (the repository
    moved), a file is missing, its ``related_input_rank`` names no input, or the declaration
    does not give the tensor that input takes."""
    from ..preprocess import load_preprocess
    from . import _npu_ge as ge

    path = parameters.get(ge.INSERT_OP_FILE_KEY)
    if path is None:
        return None, []
    own = (folder / "1" / AIPP_FILE).resolve()
    declaration = folder / "1" / DECLARATION_FILE
    problems = []
    if Path(path) != own:
        problems.append(f"parameter {ge.INSERT_OP_FILE_KEY} is {path}, but this folder's AIPP "
                        f"config is {own} (GE opens the path as given: the repository was "
                        "moved); rebuild it where the server reads it, or set the parameter "
                        "to the file's path there")
    missing = [f for f in (own, declaration) if not f.is_file()]
    if missing:
        return None, problems + [f"{f} is missing; rebuild the folder with opsdk triton "
                                 "pipeline" for f in missing]
    rank = _related_rank(own.read_text())
    if rank is None or rank >= len(io.inputs):
        return None, problems + [f"{own}: related_input_rank {rank} names no input of the "
                                 f"model ({len(io.inputs)} inputs); rebuild the folder"]
    t = io.inputs[rank]
    want = load_preprocess(declaration).model_shape(1)
    if tuple(t.shape) != want:
        problems.append(f"{declaration} gives AIPP's output {list(want)}, the model's input "
                        f"{t.name!r} takes {list(t.shape)}; declare the size and layout the "
                        "model takes")
    return AippInput(t.name, str(declaration), "", str(own)), problems


def _related_rank(text: str) -> int | None:
    for line in text.splitlines():
        key, _, value = line.strip().partition(":")
        if key == "related_input_rank" and value.strip().isdigit():
            return int(value)
    return None


def fold_aipp(pipe: Any, plans: list[Any], note: Any) -> tuple[list[Any], dict[str, AippInput]]:
    """Drop each preprocess step that can fold into the npu_ge model it feeds; rewire that
    model's input to the step's image. Returns the plans left and, per model step, its AIPP
    (``path`` left empty: the writer fills it in)."""
    from ..ascend import DEFAULT_SOCS
    from ._errors import TritonConfigError
    from ._pipeline import PlannedTensor

    kept, folds = list(plans), {}
    for plan in plans:
        if plan.step.kind != "preprocess":
            continue
        step = plan.step
        tensor = step.outputs[0][1]
        readers = [(p, own) for p in kept for own, t in p.step.inputs if t == tensor]
        soc = step.soc or DEFAULT_SOCS[0]
        reason = _no_fold_reason(pipe, tensor, readers, plan)
        if not reason:
            consumer, own = readers[0]
            aipp = AippInput(own, step.source, soc, "")
            from ._onnx_io import read_graph_io
            try:
                fixed = fixed_input(consumer.model, own, plan.outputs[0].dims)
                insert_op_cfg(read_graph_io(fixed), aipp, consumer.step.name)
            except TritonConfigError as e:
                reason = str(e)
        if reason:
            note(f"{step.name}: AIPP not folded, the CPU step stays: {reason}")
            continue
        image = step.inputs[0][1]
        inputs = tuple((o, image if o == own else t) for o, t in consumer.step.inputs)
        rows = tuple(PlannedTensor(t.name, "TYPE_UINT8", plan.inputs[0].dims)
                     if t.name == own else t for t in consumer.inputs)
        kept[kept.index(consumer)] = replace(
            consumer, step=replace(consumer.step, inputs=inputs), inputs=rows,
            model=fixed_input(consumer.model, own, plan.outputs[0].dims))
        kept.remove(plan)
        folds[consumer.step.name] = aipp
        note(f"{step.name}: folded into {consumer.step.name} as AIPP on {soc} "
             f"({AIPP_FILE} beside its model, session option ge.insertOpFile)")
    return kept, folds


def fixed_input(model: Any, name: str, dims: tuple[int, ...]) -> Any:
    """A copy of ``model`` whose input ``name`` has the fixed ``dims`` (AIPP's output):
    ATC and GE take static AIPP only on an input of fixed shape."""
    out = type(model)()
    out.CopyFrom(model)
    for value in out.graph.input:
        if value.name == name:
            shape = value.type.tensor_type.shape
            del shape.dim[:]
            for d in dims:
                shape.dim.add().dim_value = d
    return out


def _no_fold_reason(pipe: Any, tensor: str, readers: list[Any], plan: Any) -> str:
    if tensor in pipe.outputs:
        return f"its output {tensor!r} is an output of the pipeline"
    if len(readers) != 1:
        return f"{len(readers)} steps read its output {tensor!r}; AIPP feeds one model input"
    consumer, _ = readers[0]
    if consumer.step.kind not in ("onnx", "operator"):
        return f"step {consumer.step.name!r} that reads it is a {consumer.step.kind} step"
    if consumer.max_batch_size > 0:
        return (f"step {consumer.step.name!r} batches (max_batch_size "
                f"{consumer.max_batch_size}); AIPP's input is one image: set "
                "ascend = { max_batch_size = 0 } on it")
    if plan.max_batch_size > 0:
        return "the preprocess step batches; set max_batch_size = 0 on it"
    return ""
