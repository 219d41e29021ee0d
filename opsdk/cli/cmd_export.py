"""``opsdk export MyOp -o my_op.onnx``: a checked single-op ONNX model of an operator.

Examples::

  opsdk export ThresholdedRelu -o trelu.onnx --shape x=N,3,224,224 --attr alpha=0.5
  opsdk export GridSample -o gs.onnx --dtype float16 --opset 15
  opsdk export ThresholdedRelu -o trelu_any_runtime.onnx --with-function
"""

from __future__ import annotations

import argparse
import ast
from typing import Any

from ..errors import SpecError
from ._grammar import add_shape_option, named_shapes
from ._numbers import opset


def register(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="write a single-op ONNX model of an operator",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("op", help="operator: MyOp, my_op, domain::MyOp or a folder")
    p.add_argument("-o", "--output", required=True, help="the .onnx file to write")
    p.add_argument("--opset", type=opset, default=None, help="ai.onnx opset (default 15)")
    add_shape_option(p, "a dim that is not a number is symbolic (N)")
    p.add_argument("--dtype", action="append", default=[], metavar="[NAME=]DTYPE",
                   help="dtype of every input, or of one input (NAME=DTYPE). Repeatable")
    p.add_argument("--attr", action="append", default=[], metavar="NAME=VALUE",
                   help="attribute value (Python literal: 0.5, [1,1], 'linear'). Repeatable")
    p.add_argument("--with-function", action="store_true",
                   help="embed the spec's fallback function so any ONNX runtime can run it")
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")
    p.set_defaults(func=run)


def _pairs(items: list[str], flag: str) -> list[tuple[str, str]]:
    out = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise SpecError(f"{flag} {item!r}: expected NAME=VALUE, e.g. {flag} x=1,3,224,224"
                            if flag.endswith("shape") else
                            f"{flag} {item!r}: expected NAME=VALUE, e.g. {flag} alpha=0.5")
        out.append((name.strip(), value.strip()))
    return out


def parse_shapes(items: list[str], flag: str = "--shape") -> dict[str, tuple[int | str, ...]]:
    """``x=1,3,N`` (or ``x:1,3,N``) -> {"x": (1, 3, "N")}; errors name ``flag``."""
    shapes: dict[str, tuple[int | str, ...]] = {}
    for name, value in named_shapes(items, flag):
        dims: list[int | str] = []
        for d in value.split(",") if value.strip() else ():  # empty: a scalar
            d = d.strip()
            if not d:
                raise SpecError(f"{flag} {name}={value}: empty dim; give every dim, e.g. "
                                f"{flag} {name}=1,3,224,224")
            if d.lstrip("-").isdigit():
                dims.append(int(d))
            elif d.isidentifier():
                dims.append(d)
            else:
                raise SpecError(
                    f"{flag} {name}={value}: dim {d!r} is neither an integer nor a symbolic "
                    f"name (letters, digits, '_'); e.g. {flag} x=N,16"
                )
        if any(isinstance(d, int) and not 0 <= d < 2**63 for d in dims):
            raise SpecError(
                f"{flag} {name}={value}: integer dims are 0 to 2**63-1; use a symbolic name "
                "(N) for a dim you do not know"
            )
        shapes[name] = tuple(dims)
    return shapes


def parse_attrs(items: list[str]) -> dict[str, Any]:
    """``alpha=0.5`` -> {"alpha": 0.5}; non-literals are kept as strings."""
    attrs: dict[str, Any] = {}
    for name, value in _pairs(items, "--attr"):
        try:
            attrs[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            attrs[name] = value
    return attrs


def _dtypes(items: list[str]) -> str | dict[str, str] | None:
    if not items:
        return None
    plain = [i for i in items if "=" not in i]
    named = dict(_pairs([i for i in items if "=" in i], "--dtype"))
    if plain and named:
        raise SpecError("--dtype: give either one DTYPE for all inputs or NAME=DTYPE pairs")
    if len(plain) > 1:
        raise SpecError(f"--dtype given {len(plain)} times without input names")
    return plain[0] if plain else named


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .._written import check_output
    from ..onnx import DEFAULT_OPSET, export_model, save_model
    from ._io import check_output_file

    check_output_file(args.output, "-o")  # its folder exists or can
    check_output(Path(args.output), args.force)  # before the work: a symlink, a file
    model = export_model(
        args.op,
        shapes=parse_shapes(args.shape),
        dtype=_dtypes(args.dtype),
        attrs=parse_attrs(args.attr),
        opset=DEFAULT_OPSET if args.opset is None else args.opset,
        with_function=args.with_function,
    )
    path = save_model(model, args.output, force=args.force)
    node = model.graph.node[0]
    ins = ", ".join(f"{i.name}{_shape(i)}" for i in model.graph.input)
    outs = ", ".join(f"{o.name}{_shape(o)}" for o in model.graph.output)
    extra = " + fallback function" if model.functions else ""
    print(f"wrote {path}: {node.domain}::{node.op_type} ({ins}) -> ({outs}){extra}")
    return 0


def _shape(vi: Any) -> str:
    import onnx

    tt = vi.type.tensor_type
    dims = [
        str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?")
        for d in tt.shape.dim
    ]
    return f": {onnx.TensorProto.DataType.Name(tt.elem_type).lower()}[{','.join(dims)}]"
