"""A pipeline description: steps (Python functions, ONNX models, opsdk operators) and the
tensors named between them, from a TOML file or Python objects, validated with clear errors.

The TOML form (dims are per request: without the batch axis when ``max_batch_size`` > 0)::

    name = "scaled_mlp"
    max_batch_size = 8

    [inputs]
    raw = { dtype = "float32", dims = [16] }
    z = { dtype = "float32", dims = [8] }

    [[steps]]
    name = "scale"
    python = "steps.py:scale"          # a function of one self-contained file
    inputs = { raw = "raw" }           # the function's argument -> a pipeline tensor
    outputs = { x = { dtype = "float32", dims = [16] } }

    [[steps]]                          # a preprocessing declaration (opsdk.preprocess):
    name = "pre"                       # uint8 [1, H, W, C] in, the model's tensor out; on
    preprocess = "pre.toml"            # --target ascend folded into the npu_ge model it
    inputs = { image = "pixels" }      # feeds as AIPP where the SoC's AIPP rules allow
    outputs = { x = "x" }              # (soc = "Ascend310P3", the default)

    [[steps]]
    name = "mlp"
    onnx = "mlp.onnx"                  # or: operator = "ThresholdedRelu", shapes, attrs
    inputs = { x = "x", z = "z" }      # the model's input -> a pipeline tensor
    outputs = { y = "y" }              # the model's output -> a pipeline tensor

    outputs = ["y"]                    # (top level) what the pipeline returns
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from .._text import read_text
from ._errors import PipelineError

__all__ = ["PipelineError", "PipeTensor", "Step", "Pipeline", "load_pipeline",
           "pipeline_from_dict", "TRITON_OF_DTYPE"]

#: numpy dtype name (as a pipeline file writes it) -> Triton config data_type.
TRITON_OF_DTYPE: dict[str, str] = {
    "bool": "TYPE_BOOL", "uint8": "TYPE_UINT8", "uint16": "TYPE_UINT16",
    "uint32": "TYPE_UINT32", "uint64": "TYPE_UINT64", "int8": "TYPE_INT8",
    "int16": "TYPE_INT16", "int32": "TYPE_INT32", "int64": "TYPE_INT64",
    "float16": "TYPE_FP16", "float32": "TYPE_FP32", "float64": "TYPE_FP64",
    "string": "TYPE_STRING",
}
KINDS = ("python", "onnx", "operator", "preprocess")
_NAME_OK = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")
_TOP_KEYS = {"name", "max_batch_size", "inputs", "outputs", "steps"}
_SERVING_KEYS = {"max_batch_size", "dynamic_batching", "instances"}
_TARGETS = ("cpu", "ascend")
_STEP_KEYS = {"name", *KINDS, "inputs", "outputs", "shapes", "dtype", "attrs", "files",
              "soc", *_SERVING_KEYS, *_TARGETS}


@dataclass(frozen=True)
class PipeTensor:
    """A named tensor: ``dtype`` a numpy name (or ``string``), ``dims`` per request
    (-1 for a variable dim; without the batch axis in a batched pipeline)."""

    name: str
    dtype: str
    dims: tuple[int, ...]

    @property
    def triton_type(self) -> str:
        return TRITON_OF_DTYPE[self.dtype]


@dataclass(frozen=True)
class Step:
    """One model of the ensemble. ``kind`` is python, onnx, operator or preprocess;
    ``source`` the function (``file.py:function``), the .onnx path, the operator's name or
    the preprocessing declaration's path (``soc``: whose AIPP rules decide whether
    ``--target ascend`` folds it into the model it feeds); ``inputs`` and
    ``outputs`` pair the step's own tensor names with pipeline tensors; ``output_types``
    declare a Python step's outputs (an ONNX model or operator declares its own); ``files``
    name data files beside a Python step's module (a dictionary, a declaration) that are
    copied beside it, so ``Path(__file__).parent / name`` finds them in both runs."""

    name: str
    kind: str
    source: str
    inputs: tuple[tuple[str, str], ...]
    outputs: tuple[tuple[str, str], ...]
    output_types: tuple[PipeTensor, ...] = ()
    shapes: tuple[tuple[str, tuple[int | str, ...]], ...] = ()  # operator: input dims
    dtype: str | None = None  # operator: input dtype
    attrs: tuple[tuple[str, Any], ...] = ()  # operator: attribute values
    max_batch_size: int | None = None  # None: the pipeline's
    dynamic_batching: bool = True
    instances: int = 1
    files: tuple[str, ...] = ()  # python: data files beside the module, served beside it
    overrides: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()  # target -> settings
    soc: str | None = None  # preprocess: the SoC of the AIPP rules (None: opsdk's default)

    def for_target(self, target: str) -> Step:
        """The step with its ``[steps.<target>]`` settings applied (e.g. ascend: npu_ge
        will not batch this model, max_batch_size = 0)."""
        settings = dict(dict(self.overrides).get(target, ()))
        return replace(self, **settings) if settings else self

    @property
    def function(self) -> tuple[Path, str]:
        """A Python step's (file, function name)."""
        path, _, func = self.source.rpartition(":")
        return Path(path), func


@dataclass(frozen=True)
class Pipeline:
    """Steps run in the order given; each input is a pipeline input or an earlier output.

    Example:
        >>> p = Pipeline("p", inputs=(PipeTensor("x", "float32", (4,)),), steps=(
        ...     Step("neg", "onnx", "neg.onnx", (("a", "x"),), (("b", "y"),)),),
        ...     outputs=("y",))
        >>> p.producers()["y"]
        'neg'
    """

    name: str
    inputs: tuple[PipeTensor, ...]
    steps: tuple[Step, ...]
    outputs: tuple[str, ...]
    max_batch_size: int = 0
    source: str = "pipeline"  # the file it came from, for messages and banners

    def step_batch(self, step: Step) -> int:
        return self.max_batch_size if step.max_batch_size is None else step.max_batch_size

    def producers(self) -> dict[str, str]:
        """Pipeline tensor -> the step producing it (``""`` for a pipeline input)."""
        made = {t.name: "" for t in self.inputs}
        for step in self.steps:
            for _, tensor in step.outputs:
                made.setdefault(tensor, step.name)
        return made

    def check(self) -> None:
        """Raise :class:`PipelineError` for the first description that cannot work."""
        where = f"pipeline {self.name!r} ({self.source})"
        _check_name(self.name, where, "the pipeline name")
        if not self.steps:
            raise PipelineError(f"{where}: no steps; add at least one [[steps]] table")
        if self.max_batch_size < 0:
            raise PipelineError(f"{where}: max_batch_size {self.max_batch_size} must be >= 0")
        _check_steps(self, where)
        _check_outputs(self, where)


_NAME_MAX = 255  # bytes of one folder name on Linux file systems (the names are ASCII)


def _check_name(name: str, where: str, what: str) -> None:
    if not name or not set(name) <= _NAME_OK or name.startswith("."):
        raise PipelineError(
            f"{where}: {what} {name!r} must be non-empty, not start with '.' and use only "
            "letters, digits, '_', '-' and '.' (it becomes a model folder)")
    if len(name) > _NAME_MAX:
        raise PipelineError(
            f"{where}: {what} {name[:24]!r}... has {len(name)} characters, a model folder's "
            f"name at most {_NAME_MAX}; give it a shorter name")


def _check_steps(p: Pipeline, where: str) -> None:
    known = {t.name: "the pipeline's inputs already produce" for t in p.inputs}
    names = {p.name}
    folded = {p.name.casefold(): f"the pipeline's name {p.name!r}"}
    for step in p.steps:
        at = f"{where}, step {step.name!r}"
        _check_name(step.name, where, "step name")
        if step.name in names:
            raise PipelineError(f"{at}: the name is taken (by the pipeline or another step); "
                                "every step becomes a model and needs its own name")
        if step.name.casefold() in folded:
            raise PipelineError(
                f"{at}: the name differs from {folded[step.name.casefold()]} only by case; "
                "their model folders would be one folder on a case-insensitive file system "
                "(macOS, Windows, where a repository may be copied), so give the step a "
                "name that differs in more than case")
        names.add(step.name)
        folded[step.name.casefold()] = f"step {step.name!r}"
        if step.kind not in KINDS:
            raise PipelineError(f"{at}: kind {step.kind!r} is not one of {', '.join(KINDS)}")
        for own, tensor in step.inputs:
            if tensor not in known:
                raise PipelineError(
                    f"{at}: input {own!r} reads tensor {tensor!r}, which no earlier step "
                    f"produces and the pipeline does not take; produced so far: "
                    f"{', '.join(sorted(known)) or 'nothing'} (steps run in the order given)")
        for own, tensor in step.outputs:
            if tensor in known:
                raise PipelineError(
                    f"{at}: output {own!r} writes tensor {tensor!r}, which "
                    f"{known[tensor]}; name it differently")
            known[tensor] = f"step {step.name!r} already produces"
        _check_kind(step, at)


def _check_kind(step: Step, at: str) -> None:
    if step.kind == "python":
        path, func = step.function
        _check_function(path, func, at)
        declared = {t.name for t in step.output_types}
        missing = [own for own, _ in step.outputs if own not in declared]
        if missing:
            raise PipelineError(f"{at}: output {missing[0]!r} needs a dtype and dims "
                                "(outputs = { name = { dtype = ..., dims = [...] } })")
        _check_files(step, path, at)
    elif step.kind == "preprocess":
        _check_preprocess(step, at)
    elif step.files:
        raise PipelineError(f"{at}: files belong to python steps (data their function reads)")
    elif step.kind == "onnx" and not Path(step.source).is_file():
        what = ("is a folder, not an .onnx file" if Path(step.source).is_dir() else
                "does not exist")
        raise PipelineError(f"{at}: ONNX model {step.source} {what}; give the path of its "
                            ".onnx file relative to the pipeline file")
    if step.max_batch_size is not None and step.max_batch_size < 0:
        raise PipelineError(f"{at}: max_batch_size {step.max_batch_size} must be >= 0")
    if step.instances < 1:
        raise PipelineError(f"{at}: instances {step.instances} must be >= 1")


def _check_preprocess(step: Step, at: str) -> None:
    if step.files:
        raise PipelineError(f"{at}: files belong to python steps; a preprocess step reads only "
                            "its declaration")
    if len(step.inputs) != 1 or len(step.outputs) != 1:
        raise PipelineError(f"{at}: a preprocess step takes one image and gives one tensor: "
                            "inputs = { image = \"pixels\" }, outputs = { x = \"x\" } "
                            f"(got {len(step.inputs)} input(s), {len(step.outputs)} output(s))")


def _check_files(step: Step, module: Path, at: str) -> None:
    taken = {module.name, "model.py"}
    for name in step.files:
        if Path(name).name != name or name in taken or name.startswith("."):
            raise PipelineError(f"{at}: files entry {name!r} must be the name of a file beside "
                                f"{module.name} (no folders), other than it and model.py")
        taken.add(name)
        if not (module.parent / name).is_file():
            raise PipelineError(f"{at}: {module.parent / name} does not exist; files name "
                                f"data files in the folder of {module.name}")


def _check_function(path: Path, func: str, at: str) -> None:
    """The file exists and defines ``func`` at its top level (read, never run, here)."""
    if not path.is_file():
        raise PipelineError(f"{at}: {path} does not exist; write python = 'file.py:function' "
                            "with the file relative to the pipeline file")
    try:
        tree = ast.parse(read_text(path, "step file", error=PipelineError), str(path))
    except SyntaxError as e:
        raise PipelineError(f"{at}: {path} does not parse: {e}") from None
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    if func not in defined:
        raise PipelineError(f"{at}: {path} defines no top-level function {func!r}; it has "
                            f"{', '.join(sorted(defined)) or 'none'}")


def _check_outputs(p: Pipeline, where: str) -> None:
    if not p.outputs:
        raise PipelineError(f"{where}: no outputs; list what the pipeline returns, e.g. "
                            "outputs = [\"y\"]")
    made = p.producers()
    for name in p.outputs:
        if made.get(name, "") == "":
            raise PipelineError(
                f"{where}: output {name!r} is not produced by any step; step outputs are "
                f"{', '.join(sorted(n for n, s in made.items() if s)) or 'none'}")
    if len(set(p.outputs)) != len(p.outputs):
        raise PipelineError(f"{where}: outputs list a tensor twice")


# -- from TOML / a dict -------------------------------------------------------------------

def load_pipeline(path: str | Path) -> Pipeline:
    """Read and check a pipeline TOML file; paths in it are relative to the file.

    Example:
        >>> p = load_pipeline("pipeline.toml")  # doctest: +SKIP
        >>> [s.name for s in p.steps]  # doctest: +SKIP
        ['scale', 'mlp', 'top']
    """
    from .._toml import read_toml

    path = Path(path)
    data = read_toml(path, PipelineError, "pipeline file")
    return pipeline_from_dict(data, path.parent, source=path.name)


def pipeline_from_dict(data: Mapping[str, Any], base_dir: str | Path = ".",
                       source: str = "pipeline") -> Pipeline:
    """Build and check a :class:`Pipeline` from the TOML's structure (a dict).

    ``python`` may be a function object instead of ``file.py:function`` (its source file is
    the one served).

    Example:
        >>> pipeline_from_dict({"name": "p", "inputs": {}, "steps": []})
        Traceback (most recent call last):
        ...
        opsdk.triton._errors.PipelineError: pipeline 'p' (pipeline): no steps; ...
    """
    base = Path(base_dir)
    where = f"{source}"
    _unknown(data, _TOP_KEYS, where)
    name = _typed(data.get("name"), str, where, "name", "a string")
    inputs = tuple(_tensor(n, spec, f"{where}, inputs.{n}")
                   for n, spec in _table(data.get("inputs", {}), where, "inputs").items())
    steps = tuple(_step(s, i, base, where) for i, s in
                  enumerate(_typed(data.get("steps", []), list, where, "steps",
                                   "an array of tables ([[steps]])")))
    outputs = data.get("outputs", [])
    if not isinstance(outputs, list) or not all(isinstance(o, str) for o in outputs):
        raise PipelineError(f"{where}: outputs must be a list of tensor names, e.g. [\"y\"]")
    pipe = Pipeline(name, inputs, steps, tuple(outputs),
                    _int(data.get("max_batch_size", 0), where, "max_batch_size"), source)
    pipe.check()
    return pipe


def _unknown(data: Mapping[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(data) - allowed)
    if extra:
        raise PipelineError(f"{where}: unknown key {extra[0]!r}; allowed: "
                            f"{', '.join(sorted(allowed))}")


def _typed(value: Any, kind: type, where: str, key: str, what: str) -> Any:
    if not isinstance(value, kind):
        raise PipelineError(f"{where}: {key} must be {what}, got {value!r}")
    return value


def _int(value: Any, where: str, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PipelineError(f"{where}: {key} must be an integer, got {value!r}")
    return value


def _table(value: Any, where: str, key: str) -> dict[str, Any]:
    return dict(_typed(value, dict, where, key, "a table"))


def _tensor(name: str, spec: Any, where: str) -> PipeTensor:
    spec = _table(spec, where, "the tensor")
    _unknown(spec, {"dtype", "dims", "tensor"}, where)
    dtype = spec.get("dtype")
    if dtype not in TRITON_OF_DTYPE:
        raise PipelineError(f"{where}: dtype {dtype!r} is not one of "
                            f"{', '.join(TRITON_OF_DTYPE)}")
    dims = spec.get("dims")
    if (not isinstance(dims, list) or not dims
            or not all(isinstance(d, int) and not isinstance(d, bool) and (d == -1 or d > 0)
                       for d in dims)):
        raise PipelineError(f"{where}: dims must be a non-empty list of sizes (-1 for a "
                            f"variable dim), got {dims!r}")
    return PipeTensor(name, dtype, tuple(dims))


def _step(data: Any, index: int, base: Path, where: str) -> Step:
    data = _table(data, where, f"steps[{index}]")
    name = data.get("name")
    at = f"{where}, step {name!r}" if isinstance(name, str) else f"{where}, steps[{index}]"
    _typed(name, str, at, "name", "a string")
    _unknown(data, _STEP_KEYS, at)
    kinds = [k for k in KINDS if k in data]
    if len(kinds) != 1:
        raise PipelineError(f"{at}: give exactly one of python = 'file.py:function', "
                            "onnx = 'model.onnx', operator = 'OpName' or preprocess = "
                            f"'declaration.toml' (got {kinds or 'none'})")
    kind = kinds[0]
    source = _source(kind, data[kind], base, at)
    inputs = tuple((k, _typed(v, str, at, f"inputs.{k}", "a tensor name"))
                   for k, v in _table(data.get("inputs", {}), at, "inputs").items())
    outputs, types = _outputs(_table(data.get("outputs", {}), at, "outputs"), kind, at)
    extra: dict[str, Any] = {}
    if kind == "operator":
        extra = {"shapes": tuple((k, tuple(v)) for k, v in
                                 _table(data.get("shapes", {}), at, "shapes").items()),
                 "dtype": data.get("dtype"),
                 "attrs": tuple(_table(data.get("attrs", {}), at, "attrs").items())}
    elif any(k in data for k in ("shapes", "dtype", "attrs")):
        raise PipelineError(f"{at}: shapes, dtype and attrs belong to operator steps")
    if kind == "preprocess":
        extra["soc"] = _typed(data.get("soc"), str, at, "soc", "a SoC version string") \
            if "soc" in data else None
        types = (_preprocess_output(source, outputs, at),)
    elif "soc" in data:
        raise PipelineError(f"{at}: soc belongs to preprocess steps (whose AIPP rules apply)")
    files = data.get("files", [])
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise PipelineError(f"{at}: files must be a list of file names, e.g. [\"keys.txt\"]")
    overrides = tuple((t, tuple(_target_table(data, t, at).items()))
                      for t in _TARGETS if t in data)
    return Step(name, kind, source, inputs, outputs, types, files=tuple(files),
                overrides=overrides, **_serving(data, at), **extra)


def _serving(data: Mapping[str, Any], at: str) -> dict[str, Any]:
    """max_batch_size / dynamic_batching / instances of a step (or of a target's table)."""
    out: dict[str, Any] = {}
    if data.get("max_batch_size") is not None:
        out["max_batch_size"] = _int(data["max_batch_size"], at, "max_batch_size")
    if "dynamic_batching" in data:
        out["dynamic_batching"] = _typed(data["dynamic_batching"], bool, at,
                                         "dynamic_batching", "true or false")
    if "instances" in data:
        out["instances"] = _int(data["instances"], at, "instances")
    return out


def _target_table(data: Mapping[str, Any], target: str, at: str) -> dict[str, Any]:
    table = _table(data[target], at, target)
    _unknown(table, _SERVING_KEYS, f"{at}, {target}")
    return _serving(table, f"{at}, {target}")


def _preprocess_output(source: str, outputs: tuple[tuple[str, str], ...], at: str
                       ) -> PipeTensor:
    """The declared model tensor of a preprocess step (its dtype, ``model_shape(1)``)."""
    from ..preprocess import PreprocessError, load_preprocess

    if not Path(source).is_file():
        raise PipelineError(f"{at}: preprocessing declaration {source} does not exist; give "
                            "its path relative to the pipeline file")
    try:
        p = load_preprocess(source)
    except PreprocessError as e:
        raise PipelineError(f"{at}: {e}") from None
    own = outputs[0][0] if outputs else "x"
    return PipeTensor(own, p.dtype, p.model_shape(1))


def _source(kind: str, value: Any, base: Path, at: str) -> str:
    if kind == "python" and callable(value):
        return _function_source(value, at)
    text = _typed(value, str, at, kind, "a string")
    if kind == "python":
        path, sep, func = text.rpartition(":")
        if not sep or not path or not func.isidentifier():
            raise PipelineError(f"{at}: python = {text!r} must be 'file.py:function'")
        return f"{(base / path).resolve()}:{func}"
    if kind in ("onnx", "preprocess"):
        return str((base / text).resolve())
    return text


def _function_source(fn: Callable[..., Any], at: str) -> str:
    """``file:function`` of a module-level function object."""
    name = getattr(fn, "__name__", "")
    try:
        path = inspect.getsourcefile(fn)
    except TypeError:
        path = None
    if not path or getattr(fn, "__qualname__", "") != name or name == "<lambda>":
        raise PipelineError(f"{at}: {fn!r} must be a top-level function of a .py file "
                            "(it is copied into the repository and imported by the server)")
    return f"{Path(path).resolve()}:{name}"


def _outputs(table: dict[str, Any], kind: str, at: str
             ) -> tuple[tuple[tuple[str, str], ...], tuple[PipeTensor, ...]]:
    """``{own: tensor}`` or ``{own: {tensor=..., dtype=..., dims=...}}`` entries."""
    pairs, types = [], []
    for own, value in table.items():
        if isinstance(value, str):
            pairs.append((own, value))
            continue
        spec = _table(value, at, f"outputs.{own}")
        tensor = spec.get("tensor", own)
        pairs.append((own, _typed(tensor, str, at, f"outputs.{own}.tensor", "a tensor name")))
        if kind == "python":
            types.append(_tensor(own, spec, f"{at}, outputs.{own}"))
        elif kind == "preprocess":
            raise PipelineError(f"{at}: outputs.{own}: a preprocess step's output takes its "
                                "dtype and dims from the declaration; give only the tensor "
                                "name")
        elif set(spec) - {"tensor"}:
            raise PipelineError(f"{at}: outputs.{own}: a {kind} step's outputs take their "
                                "dtype and dims from the model; give only the tensor name")
    if kind == "python":
        untyped = [own for own, v in table.items() if isinstance(v, str)]
        if untyped:
            raise PipelineError(f"{at}: output {untyped[0]!r} needs a dtype and dims "
                                "(outputs = { name = { dtype = ..., dims = [...] } })")
    return tuple(pairs), tuple(types)


def dtype_of_triton(triton_type: str) -> str:
    """``TYPE_FP32`` -> ``float32`` (the inverse of :data:`TRITON_OF_DTYPE`)."""
    for name, t in TRITON_OF_DTYPE.items():
        if t == triton_type:
            return name
    raise PipelineError(f"Triton data_type {triton_type} has no pipeline dtype")


def numpy_dtype(dtype: str) -> np.dtype[Any]:
    """The numpy dtype a pipeline dtype name stands for (``string`` -> object)."""
    return np.dtype(object) if dtype == "string" else np.dtype(dtype)


@dataclass(frozen=True)
class PlannedTensor:
    """A model's tensor as its config.pbtxt gives it (dims without the batch axis when the
    model batches)."""

    name: str
    data_type: str
    dims: tuple[int, ...]
    batched: bool = False  # a pipeline tensor: its producer batches (dims start with it)
