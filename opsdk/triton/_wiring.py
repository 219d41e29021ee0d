"""`opsdk triton check REPO/ENSEMBLE`: an ensemble's wiring, edge by edge, before a server.

Triton validates an ensemble when it loads it (ensemble_utils.cc): every input of a
composing model is mapped to one ensemble tensor, every mapped name exists in that model,
each ensemble tensor has one data type and one shape wherever it is read or written (a -1
matches any size; a batching model's dims are compared with the batch axis put back), a
composing model that batches allows at least the ensemble's max_batch_size, and data flows
from the ensemble's inputs to its outputs. This check reads the same config.pbtxt files and
reports every contradiction at once, each naming both ends of the edge and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._config_check import parse_config
from ._errors import TritonConfigError

__all__ = ["EnsembleCheck", "Edge", "check_ensemble", "is_ensemble", "dims_agree"]


@dataclass(frozen=True)
class Edge:
    """One ensemble tensor from its producer to one consumer."""

    tensor: str
    producer: str  # "input 'x' of ensemble 'p'" / "output 'y' of step 'a'"
    consumer: str
    data_type: str
    dims: tuple[int, ...]  # full dims, batch axis included


@dataclass
class EnsembleCheck:
    """The outcome: ``problems`` empty when every edge agrees; ``edges`` as checked."""

    folder: str
    steps: list[str] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    models: dict[str, Any] = field(default_factory=dict)  # per npu_ge step: its NpuGeCheck
    onnx_steps: list[str] = field(default_factory=list)  # cpu steps whose model.onnx was judged

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class _End:
    label: str
    model: str
    data_type: str
    dims: tuple[int, ...]
    full: tuple[int, ...]


def is_ensemble(folder: str | Path) -> bool:
    """True when ``folder/config.pbtxt`` declares ``platform: "ensemble"``.

    Example:
        >>> is_ensemble("repo/ocr")  # doctest: +SKIP
        True
    """
    config = Path(folder) / "config.pbtxt"
    return config.is_file() and 'platform: "ensemble"' in config.read_text(errors="replace")


def _config(folder: Path) -> Any:
    return parse_config(folder / "config.pbtxt")  # tritonclient's message, or the stand-in


def _type_name(config: Any, value: int) -> str:
    return str(type(config).DESCRIPTOR.fields_by_name["input"].message_type
               .fields_by_name["data_type"].enum_type.values_by_number[value].name)


def _ends(config: Any, kind: str, label: str, batching: bool) -> dict[str, _End]:
    out = {}
    for t in getattr(config, kind):
        dims = tuple(t.reshape.shape) if t.HasField("reshape") else tuple(t.dims)
        full = (-1, *dims) if batching else dims
        out[t.name] = _End(label.format(name=t.name), config.name,
                           _type_name(config, t.data_type), dims, full)
    return out


def dims_agree(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Same rank, and each dim equal or -1 on either side (Triton's wildcard compare)."""
    return len(a) == len(b) and all(x == y or -1 in (x, y) for x, y in zip(a, b, strict=True))


def check_ensemble(folder: str | Path, models: bool = False, cann: str = "auto"
                   ) -> EnsembleCheck:
    """Check the wiring of the ensemble at ``folder`` against its steps' configs beside it;
    with ``models``, every npu_ge step also gets :func:`check_npu_ge_folder` (GE parser rules
    of ``cann``, ONNX Runtime 1.23.2 as inside npu_ge), and every cpu step that runs an ONNX
    model has it read, opened with opsdk's Session in a child process and compared with its
    config.pbtxt (:mod:`._step_check`), the problems named by step.

    Example:
        >>> report = check_ensemble("repo/ocr")  # doctest: +SKIP
        >>> report.ok, report.steps  # doctest: +SKIP
        (True, ['det', 'det_post', 'rec', 'rec_post'])
    """
    folder = Path(folder)
    config = _config(folder)
    report = EnsembleCheck(str(folder))
    if config.platform != "ensemble" or not config.HasField("ensemble_scheduling"):
        raise TritonConfigError(f"{folder} is not an ensemble (no platform \"ensemble\" with "
                                "ensemble_scheduling); pass the ensemble's folder REPO/NAME")
    batching = config.max_batch_size > 0
    name = config.name
    made = _ends(config, "input", f"input '{{name}}' of ensemble '{name}'", batching)
    wanted = list(_ends(config, "output", f"output '{{name}}' of ensemble '{name}'",
                        batching).items())
    for step in config.ensemble_scheduling.step:
        report.steps.append(step.model_name)
        _check_step(report, folder.parent, step, config, made, wanted)
    for tensor, consumer in wanted:
        _edge(report, tensor, made.get(tensor), consumer)
    if models:
        _check_models(report, folder.parent, cann)
    return report


def _check_models(report: EnsembleCheck, repo: Path, cann: str) -> None:
    from ._check import check_npu_ge_folder
    from ._npu_ge import BACKEND
    from ._step_check import onnx_step_model, onnx_step_problems

    for step in dict.fromkeys(report.steps):
        config = repo / step / "config.pbtxt"
        if config.is_file() and f'backend: "{BACKEND}"' in config.read_text(errors="replace"):
            result = check_npu_ge_folder(repo / step, cann=cann)
            report.models[step] = result
            report.problems += [f"step '{step}': {p}" for p in result.problems]
        elif onnx_step_model(repo / step) is not None:
            report.onnx_steps.append(step)
            report.problems += onnx_step_problems(repo, step)


def _check_step(report: EnsembleCheck, repo: Path, step: Any, ensemble: Any,
                made: dict[str, _End], wanted: list[tuple[str, _End]]) -> None:
    model = step.model_name
    path = repo / model / "config.pbtxt"
    if not path.is_file():
        report.problems.append(
            f"step '{model}': no model folder {repo / model} with a config.pbtxt beside the "
            f"ensemble; build it there (opsdk triton pipeline writes every step)")
        return
    if model == ensemble.name:
        report.problems.append(f"step '{model}' is the ensemble itself; Triton refuses an "
                               "ensemble that runs itself: name the step's own model")
        return
    versions = sorted(int(p.name) for p in (repo / model).iterdir()
                      if p.is_dir() and p.name.isdigit())
    if (step.model_version > 0 and step.model_version not in versions) or not versions:
        want = "any version" if step.model_version <= 0 else f"version {step.model_version}"
        report.problems.append(
            f"step '{model}' asks for {want}, but {repo / model} holds "
            f"{'versions ' + ', '.join(map(str, versions)) if versions else 'no version folder'}"
            "; set model_version: -1 (the latest) or build that version")
    config = _config(repo / model)
    mbs = config.max_batch_size
    if mbs and mbs < ensemble.max_batch_size:
        report.problems.append(
            f"step '{model}' allows max_batch_size {mbs}, the ensemble '{ensemble.name}' "
            f"{ensemble.max_batch_size}: a full ensemble batch could not pass; raise the "
            f"step's max_batch_size to {ensemble.max_batch_size} or lower the ensemble's")
    ins = _ends(config, "input", f"input '{{name}}' of step '{model}'", mbs > 0)
    outs = _ends(config, "output", f"output '{{name}}' of step '{model}'", mbs > 0)
    mapped = dict(step.input_map)
    for key, tensor in mapped.items():
        if key not in ins:
            report.problems.append(
                f"step '{model}': input_map reads ensemble tensor '{tensor}' into '{key}', "
                f"which is not an input of the model (its inputs: {', '.join(ins)}); map one "
                "of those")
    for key, end in ins.items():
        if key not in mapped:
            report.problems.append(
                f"{end.label} is not mapped to any ensemble tensor; add input_map "
                f"{{ key: \"{key}\" value: \"<tensor>\" }} to the step")
            continue
        _edge(report, mapped[key], made.get(mapped[key]), end)
    for key, tensor in step.output_map.items():
        if key not in outs:
            report.problems.append(
                f"step '{model}': output_map writes ensemble tensor '{tensor}' from '{key}', "
                f"which is not an output of the model (its outputs: {', '.join(outs)})")
            continue
        if tensor in made:
            report.problems.append(
                f"ensemble tensor '{tensor}' is written by {made[tensor].label} and by "
                f"{outs[key].label}; give one of them another name")
            continue
        made[tensor] = outs[key]


def _edge(report: EnsembleCheck, tensor: str, producer: _End | None, consumer: _End) -> None:
    if producer is None:
        report.problems.append(
            f"{consumer.label} reads ensemble tensor '{tensor}', which nothing before it "
            "writes (no ensemble input, no earlier step output of that name); fix the name "
            "or add the step that makes it")
        return
    report.edges.append(Edge(tensor, producer.label, consumer.label, producer.data_type,
                             producer.full))
    if producer.data_type != consumer.data_type:
        report.problems.append(
            f"ensemble tensor '{tensor}': {producer.label} is {producer.data_type}, "
            f"{consumer.label} expects {consumer.data_type}; make both the same type (cast "
            "in the producing step, or change the consumer's declared dtype)")
    elif not (dims_agree(producer.dims, consumer.dims) or dims_agree(producer.full, consumer.full)):
        report.problems.append(
            f"ensemble tensor '{tensor}': {producer.label} has dims {list(producer.full)}, "
            f"{consumer.label} expects {list(consumer.full)} (batch axis included, -1 any "
            "size); make the shapes agree, or use -1 where a size varies")
