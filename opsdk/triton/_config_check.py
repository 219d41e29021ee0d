"""A config.pbtxt against its model: names, data types, dims and max_batch_size agree.

Triton's ONNX backends compare a model's inputs and outputs with the config at load time
and refuse the model on a contradiction; ``opsdk triton check`` reports the same before a
host loads the folder. The config is read with tritonclient's ``ModelConfig`` when it is
installed (the serve extra), else with a stand-in of the same field names, numbers and
types (:data:`_SCHEMA`): the I/O, ``platform``/``backend``, ``parameters``,
``ensemble_scheduling`` and ``model_warmup`` in full, the other messages skipped. So
``opsdk triton check`` and ``opsdk triton pipeline`` work from the base install.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from ._errors import TritonConfigError
from ._onnx_io import GraphIO, TensorIO

__all__ = ["parse_config", "config_problems"]

#: model_config.proto DataType values (TYPE_INVALID .. TYPE_BF16).
_DATA_TYPES = ("TYPE_INVALID", "TYPE_BOOL", "TYPE_UINT8", "TYPE_UINT16", "TYPE_UINT32",
               "TYPE_UINT64", "TYPE_INT8", "TYPE_INT16", "TYPE_INT32", "TYPE_INT64",
               "TYPE_FP16", "TYPE_FP32", "TYPE_FP64", "TYPE_STRING", "TYPE_BF16")
_CONFIG_LIMIT = 1 << 20


#: The subset of model_config.proto (Triton 2.x, the numbers of tritonclient's
#: model_config_pb2) this check reads without tritonclient: message -> fields, each
#: (name, number, type, repeated). A type is a scalar name, ``DataType``, a message of this
#: table, ``Opaque`` (a message whose fields are skipped) or ``map<K,V>``. Fields opsdk
#: writes with list syntax (``step [ {...} ]``) have their real messages: text format can
#: skip an unknown field only in its ``{...}`` form.
_SCHEMA: dict[str, tuple[tuple[str, int, str, bool], ...]] = {
    "ModelTensorReshape": (("shape", 1, "int64", True),),
    "ModelInput": (("name", 1, "string", False), ("data_type", 2, "DataType", False),
                   ("dims", 4, "int64", True), ("reshape", 5, "ModelTensorReshape", False)),
    "ModelOutput": (("name", 1, "string", False), ("data_type", 2, "DataType", False),
                    ("dims", 3, "int64", True), ("reshape", 5, "ModelTensorReshape", False)),
    "ModelParameter": (("string_value", 1, "string", False),),
    "ModelEnsembling": (("step", 1, "ModelEnsembling.Step", True),
                        ("max_inflight_requests", 2, "uint32", False)),
    "ModelEnsembling.Step": (("model_name", 1, "string", False),
                             ("model_version", 2, "int64", False),
                             ("input_map", 3, "map<string,string>", True),
                             ("output_map", 4, "map<string,string>", True),
                             ("model_namespace", 5, "string", False)),
    "ModelWarmup": (("name", 1, "string", False), ("batch_size", 2, "uint32", False),
                    ("inputs", 3, "map<string,ModelWarmup.Input>", True),
                    ("count", 4, "uint32", False)),
    "ModelWarmup.Input": (("data_type", 1, "DataType", False), ("dims", 2, "int64", True),
                          ("zero_data", 3, "bool", False), ("random_data", 4, "bool", False),
                          ("input_data_file", 5, "string", False)),
    "Opaque": (),
    "ModelConfig": (
        ("name", 1, "string", False), ("platform", 2, "string", False),
        ("backend", 17, "string", False), ("runtime", 25, "string", False),
        ("version_policy", 3, "Opaque", False), ("max_batch_size", 4, "int32", False),
        ("input", 5, "ModelInput", True), ("output", 6, "ModelOutput", True),
        ("batch_input", 20, "Opaque", True), ("batch_output", 21, "Opaque", True),
        ("optimization", 12, "Opaque", False), ("dynamic_batching", 11, "Opaque", False),
        ("sequence_batching", 13, "Opaque", False),
        ("ensemble_scheduling", 15, "ModelEnsembling", False),
        ("instance_group", 7, "Opaque", True), ("default_model_filename", 8, "string", False),
        ("cc_model_filenames", 9, "map<string,string>", True),
        ("metric_tags", 10, "map<string,string>", True),
        ("parameters", 14, "map<string,ModelParameter>", True),
        ("model_warmup", 16, "ModelWarmup", True), ("model_operations", 18, "Opaque", False),
        ("model_transaction_policy", 19, "Opaque", False),
        ("model_repository_agents", 23, "Opaque", False),
        ("response_cache", 24, "Opaque", False), ("model_metrics", 26, "Opaque", False)),
}
_PACKAGE = "opsdk_triton_subset"


@lru_cache(maxsize=1)
def _config_class() -> Any:
    """Triton's ModelConfig message: tritonclient's when installed, else the subset this
    check reads (same field names and numbers; other fields skipped)."""
    try:
        from tritonclient.grpc import model_config_pb2

        return model_config_pb2.ModelConfig
    except ImportError:
        return _subset_class()


def _add_field(msg: Any, path: str, field: tuple[str, int, str, bool]) -> None:
    """One field of :data:`_SCHEMA` into ``msg`` (the DescriptorProto of message ``path``);
    a map gets its entry message nested in ``msg``, as protoc makes it."""
    from google.protobuf import descriptor_pb2

    name, number, kind, repeated = field
    t = descriptor_pb2.FieldDescriptorProto
    label = t.LABEL_REPEATED if repeated else t.LABEL_OPTIONAL
    if kind.startswith("map<"):
        key, value = kind[4:-1].split(",")
        entry = msg.nested_type.add(name="".join(w.title() for w in name.split("_")) + "Entry")
        entry.options.map_entry = True
        for entry_field in (("key", 1, key, False), ("value", 2, value, False)):
            _add_field(entry, f"{path}.{entry.name}", entry_field)
        kind = f"{path}.{entry.name}"
    if kind.islower():
        msg.field.add(name=name, number=number, label=label,
                      type=getattr(t, f"TYPE_{kind.upper()}"))
    else:
        msg.field.add(name=name, number=number, label=label,
                      type=t.TYPE_ENUM if kind == "DataType" else t.TYPE_MESSAGE,
                      type_name=f".{_PACKAGE}.{kind}")


def _subset_class() -> Any:
    """The ModelConfig message of :data:`_SCHEMA`, built without tritonclient."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    f = descriptor_pb2.FileDescriptorProto(name="opsdk_model_config_subset.proto",
                                           package=_PACKAGE, syntax="proto3")
    enum = f.enum_type.add(name="DataType")
    for n, name in enumerate(_DATA_TYPES):
        enum.value.add(name=name, number=n)
    protos: dict[str, Any] = {}
    for path in _SCHEMA:  # outer messages are listed before the ones nested in them
        outer, _, inner = path.rpartition(".")
        protos[path] = (protos[outer].nested_type.add(name=inner) if outer
                        else f.message_type.add(name=path))
    for path, fields in _SCHEMA.items():
        for field in fields:
            _add_field(protos[path], path, field)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(
        f"{_PACKAGE}.ModelConfig"))


def parse_config(path: Path) -> Any:
    """Read ``config.pbtxt`` (names, data types, dims, max_batch_size).

    Raises:
        TritonConfigError: the file is not protobuf text a Triton server would parse.

    Example:
        >>> parse_config(Path("repo/net/config.pbtxt")).max_batch_size  # doctest: +SKIP
        32
    """
    from google.protobuf import text_format

    try:
        with open(path, "rb") as f:
            text = f.read(_CONFIG_LIMIT + 1)
        if len(text) > _CONFIG_LIMIT:
            raise ValueError(f"larger than {_CONFIG_LIMIT} bytes")
        return text_format.Parse(text.decode(), _config_class()(), allow_unknown_field=True)
    except (OSError, ValueError, text_format.ParseError) as e:
        raise TritonConfigError(f"{path}: not a config Triton can parse ({e})") from None


def _dims_problem(kind: str, t: TensorIO, got: list[int], batched: bool) -> str | None:
    want = t.dims(batched)
    where = f"config {kind} '{t.name}'"
    if len(got) != len(want):
        return (f"{where} has dims {got} ({len(got)} dims) but the model's {kind} has "
                f"{len(want)} {'besides the batch axis ' if batched else ''}({want})")
    bad = [n for n, (g, w) in enumerate(zip(got, want, strict=True))
           if g != -1 and w != -1 and g != w]
    if bad:
        n = bad[0]
        return (f"{where} dim {n} is {got[n]} but the model's is {want[n]} (config dims {got}, "
                f"model {want}{' after the batch axis' if batched else ''})")
    return None


def config_problems(config: Any, io: GraphIO, fix: str = "") -> list[str]:
    """Contradictions between a parsed config and the model's inputs and outputs, each
    ending with ``fix`` (default: rebuild with opsdk triton build or correct the config).

    Example:
        >>> config_problems(parse_config(Path("repo/net/config.pbtxt")),
        ...                 read_graph_io("repo/net/1/model.onnx"))  # doctest: +SKIP
        []
    """
    problems = []
    batched = config.max_batch_size > 0
    fix = fix or "; rebuild the folder with opsdk triton build or correct config.pbtxt"
    for kind, declared, tensors in (("input", config.input, io.inputs),
                                    ("output", config.output, io.outputs)):
        model = {t.name: t for t in tensors}
        for t in tensors:
            if batched and (not t.shape or t.shape[0] is not None):
                lead = "is a scalar" if not t.shape else f"has fixed leading dim {t.shape[0]}"
                problems.append(f"max_batch_size is {config.max_batch_size} but the model's "
                                f"{kind} '{t.name}' {lead}, so it has no batch axis (set "
                                "max_batch_size: 0)")
        for c in declared:
            found_t = model.get(c.name)
            if found_t is None:
                problems.append(f"config {kind} '{c.name}' is not an {kind} of the model "
                                f"({', '.join(sorted(model)) or 'none'}){fix}")
                continue
            t = found_t
            dtype = _DATA_TYPES[c.data_type] if c.data_type < len(_DATA_TYPES) else "?"
            if dtype != t.data_type:
                problems.append(f"config {kind} '{c.name}' has data_type {dtype} but the "
                                f"model's is {t.data_type}{fix}")
            dims = list(c.reshape.shape) if c.HasField("reshape") else list(c.dims)
            found = None if c.HasField("reshape") else _dims_problem(kind, t, dims, batched)
            if found:
                problems.append(found + fix)
        missing = sorted(set(model) - {c.name for c in declared})
        if missing and declared:
            problems.append(f"config lists no {kind} {', '.join(repr(m) for m in missing)} "
                            f"of the model{fix}")
    return problems
