"""ATC's own Conv+BatchNorm fusion, applied before the precision rules.

For inference ATC folds a BatchNormalization into the convolution that feeds it (the weights
are rescaled in float32 before any lowering; :data:`opsdk.ascend.parser.ATC_NATIVE_FUSIONS`),
so a BatchNorm's running variance, which may exceed float16's range, is never stored in
float16 there. The emulation folds the same pairs: a Conv whose only reader is a
BatchNormalization in inference mode, with constant weights and statistics.
"""

from __future__ import annotations

from collections import Counter

import onnx
from onnx import numpy_helper

from ...onnx import FreshNames, GraphConstants, fold_batch_norm, remove_dead_constants

__all__ = ["fold_conv_batch_norm"]


def _bn_ok(bn: onnx.NodeProto) -> bool:
    training = any(a.name == "training_mode" and a.i for a in bn.attribute)
    return (bn.op_type == "BatchNormalization" and bn.domain in ("", "ai.onnx")
            and len(bn.input) == 5 and len([o for o in bn.output if o]) == 1 and not training)


def fold_conv_batch_norm(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list[str]]:
    """A copy of ``model`` with each Conv -> BatchNormalization pair folded into the Conv,
    and the names of the folded BatchNormalization nodes.

    Example:
        >>> # see tests/ascend/test_model_precision.py::test_atc_folds_batch_norm_into_its_conv
    """
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    consts = GraphConstants(g)
    uses = Counter(t for n in g.node for t in n.input) + Counter(o.name for o in g.output)
    producer = {t: n for n in g.node for t in n.output}
    folded, gone = [], set()
    fresh = FreshNames(g)
    for bn in list(g.node):
        conv = producer.get(bn.input[0]) if _bn_ok(bn) else None
        if conv is None or conv.op_type != "Conv" or uses[conv.output[0]] != 1:
            continue
        w = consts.value(conv.input[1])
        has_b = len(conv.input) > 2 and bool(conv.input[2])
        b = consts.value(conv.input[2]) if has_b else None
        scale, bias, mean, var = (consts.value(t) for t in bn.input[1:])
        if w is None or (has_b and b is None) or scale is None or bias is None or \
                mean is None or var is None:
            continue
        eps = next((a.f for a in bn.attribute if a.name == "epsilon"), 1e-5)
        w2, b2 = fold_batch_norm(w, b, scale, bias, mean, var, eps)
        base = f"opsdk_precision/{conv.name or conv.output[0]}/bn_folded"
        w_name, b_name = fresh(f"{base}_w"), fresh(f"{base}_b")
        g.initializer.extend([numpy_helper.from_array(w2, w_name),
                              numpy_helper.from_array(b2, b_name)])
        conv.input[1] = w_name
        if has_b:
            conv.input[2] = b_name
        else:
            conv.input.append(b_name)
        conv.output[0] = bn.output[0]
        gone.add(id(bn))
        folded.append(bn.name or bn.output[0])
    kept = [n for n in g.node if id(n) not in gone]
    del g.node[:]
    g.node.extend(kept)
    remove_dead_constants(g)
    return m, folded
