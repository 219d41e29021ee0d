"""A config.pbtxt against its model: names, data types, dims and max_batch_size agree.

Triton's ONNX backends compare a model's inputs and outputs with the config at load time
and refuse the model on a contradiction; ``opsdk triton check`` reports the same before a
host loads the folder. The config is read with the fields Triton's ``ModelConfig`` gives
them (model_config.proto), other fields are skipped.
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


#: ModelConfig's message-valued fields (model_config.proto numbers), read as opaque here.
_OPAQUE_FIELDS = {"version_policy": 3, "instance_group": 7, "dynamic_batching": 11,
                  "optimization": 12, "sequence_batching": 13, "parameters": 14,
                  "ensemble_scheduling": 15, "model_warmup": 16, "model_operations": 18,
                  "model_transaction_policy": 19, "batch_input": 20, "batch_output": 21,
                  "model_repository_agents": 23, "response_cache": 24}


@lru_cache(maxsize=1)
def _config_class() -> Any:
    """Triton's ModelConfig message: tritonclient's when installed, else the subset this
    check reads (same field names and numbers; other fields skipped)."""
    try:
        from tritonclient.grpc import model_config_pb2

        return model_config_pb2.ModelConfig
    except ImportError:
        return _subset_class()


def _subset_class() -> Any:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    f = descriptor_pb2.FileDescriptorProto(name="opsdk_model_config_subset.proto",
                                           package="opsdk_triton_subset", syntax="proto3")
    enum = f.enum_type.add(name="DataType")
    for n, name in enumerate(_DATA_TYPES):
        enum.value.add(name=name, number=n)
    lbl, rep = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL, \
        descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
    t = descriptor_pb2.FieldDescriptorProto
    reshape = f.message_type.add(name="Reshape")
    reshape.field.add(name="shape", number=1, type=t.TYPE_INT64, label=rep)
    for msg_name, dims_no in (("ModelInput", 4), ("ModelOutput", 3)):
        m = f.message_type.add(name=msg_name)
        m.field.add(name="name", number=1, type=t.TYPE_STRING, label=lbl)
        m.field.add(name="data_type", number=2, type=t.TYPE_ENUM, label=lbl,
                    type_name=".opsdk_triton_subset.DataType")
        m.field.add(name="dims", number=dims_no, type=t.TYPE_INT64, label=rep)
        m.field.add(name="reshape", number=5, type=t.TYPE_MESSAGE, label=lbl,
                    type_name=".opsdk_triton_subset.Reshape")
    f.message_type.add(name="Opaque")
    cfg = f.message_type.add(name="ModelConfig")
    for name, number in _OPAQUE_FIELDS.items():
        cfg.field.add(name=name, number=number, type=t.TYPE_MESSAGE, label=rep,
                      type_name=".opsdk_triton_subset.Opaque")
    cfg.field.add(name="name", number=1, type=t.TYPE_STRING, label=lbl)
    cfg.field.add(name="max_batch_size", number=4, type=t.TYPE_INT32, label=lbl)
    cfg.field.add(name="input", number=5, type=t.TYPE_MESSAGE, label=rep,
                  type_name=".opsdk_triton_subset.ModelInput")
    cfg.field.add(name="output", number=6, type=t.TYPE_MESSAGE, label=rep,
                  type_name=".opsdk_triton_subset.ModelOutput")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(
        "opsdk_triton_subset.ModelConfig"))


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
