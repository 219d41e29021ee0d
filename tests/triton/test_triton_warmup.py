"""`--warmup`: one model_warmup entry per GE shape gear, else per batch size the dynamic
batcher forms (issue 31, item 6). The configs are parsed with Triton's own model_config
proto, so a malformed entry fails here, not at server start."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper

from opsdk.triton import (
    AscendOptions,
    RepositoryOptions,
    TritonConfigError,
    read_graph_io,
    render_model,
)
from opsdk.triton._warmup import batch_sizes_formed
from opsdk.triton.testing import triton_server  # noqa: F401
from tests._helpers.triton_models import mlp_model, parse_config


def _warmups(opts: RepositoryOptions, model: object = None) -> list[tuple[str, int, list[list[int]]]]:
    io = read_graph_io(model if model is not None else mlp_model())
    config = parse_config(render_model(io, opts)["config.pbtxt"])
    return [(w.name, w.batch_size, [list(w.inputs[k].dims) for k in sorted(w.inputs)])
            for w in config.model_warmup]  # type: ignore[attr-defined]


def _image_model() -> object:
    """x: [batch, 3, h, w] -> y: [batch, 3] (a global average), two variable dims besides
    the batch, as a detector's input has."""
    node = helper.make_node("ReduceMean", ["x"], ["y"], axes=[2, 3], keepdims=0)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", T.FLOAT, ["b", 3, "h", "w"])],
        [helper.make_tensor_value_info("y", T.FLOAT, ["b", 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_one_entry_per_batch_size_the_batcher_forms() -> None:
    opts = RepositoryOptions("m", max_batch_size=8, preferred_batch_sizes=(4,), warmup=True,
                             operators_path=())
    assert _warmups(opts) == [("opsdk_batch_1", 1, [[16], [8]]),
                              ("opsdk_batch_4", 4, [[16], [8]]),
                              ("opsdk_batch_8", 8, [[16], [8]])]


def test_without_dynamic_batching_one_entry_of_batch_one() -> None:
    opts = RepositoryOptions("m", max_batch_size=8, dynamic_batching=False, warmup=True,
                             operators_path=())
    assert [w[:2] for w in _warmups(opts)] == [("opsdk_batch_1", 1)]


def test_ascend_default_preferred_sizes_are_warmed_up() -> None:
    """npu_ge's config gets powers of two as preferred sizes; each is warmed up."""
    opts = RepositoryOptions("m", target="ascend", max_batch_size=8, warmup=True,
                             ascend=AscendOptions(cann="8.1.RC1"))
    assert [w[1] for w in _warmups(opts)] == [1, 2, 4, 8]


def test_one_entry_per_shape_gear_batch_dim_from_the_gear() -> None:
    opts = RepositoryOptions(
        "m", target="ascend", max_batch_size=4, warmup=True,
        ascend=AscendOptions(cann="8.1.RC1", shape_gears=((1, 224, 224), (4, 320, 480))))
    assert _warmups(opts, _image_model()) == [
        ("opsdk_gear_1_224_224", 1, [[3, 224, 224]]),
        ("opsdk_gear_4_320_480", 4, [[3, 320, 480]]),
    ]


def test_unbatched_gears_keep_every_dim() -> None:
    opts = RepositoryOptions(
        "m", target="ascend", max_batch_size=0, warmup=True,
        ascend=AscendOptions(cann="8.1.RC1", shape_gears=((2, 64, 64), (1, 128, 96))))
    assert _warmups(opts, _image_model()) == [
        ("opsdk_gear_2_64_64", 1, [[2, 3, 64, 64]]),
        ("opsdk_gear_1_128_96", 1, [[1, 3, 128, 96]]),
    ]


def test_gear_batch_above_max_batch_size_is_refused() -> None:
    opts = RepositoryOptions(
        "m", target="ascend", max_batch_size=2, warmup=True,
        ascend=AscendOptions(cann="8.1.RC1", shape_gears=((1, 64, 64), (8, 64, 64))))
    with pytest.raises(TritonConfigError, match=r"m: shape gear 8,64,64 has batch 8 > "
                       r"max_batch_size 2; raise --max-batch-size to 8"):
        render_model(read_graph_io(_image_model()), opts)


def test_gear_giving_inputs_different_batches_is_refused() -> None:
    opts = RepositoryOptions("m", target="ascend", max_batch_size=8, warmup=True,
                             ascend=AscendOptions(cann="8.1.RC1", shape_gears=((1, 2), (4, 4))))
    with pytest.raises(TritonConfigError, match=r"shape gear 1,2 gives the inputs batch "
                       r"sizes \[1, 2\]"):
        render_model(read_graph_io(mlp_model()), opts)


def test_no_warmup_without_the_flag() -> None:
    opts = RepositoryOptions("m", max_batch_size=8, operators_path=())
    assert _warmups(opts) == []
    assert batch_sizes_formed(0, [4], True) == [1]


@pytest.mark.slow
def test_a_real_server_runs_every_warmup_sample(
        tmp_path: Path, triton_server: Any) -> None:  # noqa: F811
    """tritonserver loads the config and runs one warm-up sample per batch size before it
    reports the model ready (its verbose log names each sample)."""
    from opsdk.triton import build_repository

    src = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(), str(src))
    build_repository(src, tmp_path / "repo", RepositoryOptions(
        "mlp", max_batch_size=4, preferred_batch_sizes=(2,), warmup=True, operators_path=()))
    server = triton_server(tmp_path / "repo", log_verbose=1)
    log = server.log_tail(chars=2_000_000)
    for name in ("opsdk_batch_1", "opsdk_batch_2", "opsdk_batch_4"):
        assert re.search(rf"running warmup sample '{name}'", log), name
