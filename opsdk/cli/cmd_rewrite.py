"""``opsdk rewrite in.onnx -o out.onnx``: fuse chains or swap standard ops for opsdk ones.

Examples::

  opsdk rewrite resnet.onnx -o resnet_fused.onnx --fuse conv-bn-relu
  opsdk rewrite resnet.onnx --fuse conv-bn-relu --report          # decisions only, no file
  opsdk rewrite vit.onnx -o vit_npu.onnx --replace Gelu --target ascend
  opsdk rewrite flow.onnx -o flow_npu.onnx --replace GridSample
  opsdk rewrite llama.onnx -o llama_llm.onnx --replace RmsNorm,Rope,Swiglu   # operators' names
  opsdk rewrite stn_opset20.onnx -o stn18.onnx --opset 18       # for a runtime reading <= 18

A rewrite happens only where it pays: for --target ascend, Conv+BatchNormalization+Relu stays
as it is (ATC fuses it on the AI Core); for --target cpu (default) a chain is fused only in
the shape classes where FusedConvBnRelu was measured faster than ONNX Runtime, and then the
whole model is timed before and after under opsdk's Session (on --input-shape, else the
first sizing that runs): the fusions are kept only if the fused model is faster.
--report lists every candidate with the decision and the reason.

--replace NAME with an operator's name (not an ONNX op type) folds each place the operator's
decomposition is computed (its fallback function, and the forms spec.py adds with
@SPEC.register_pattern) into one node of it, whatever spellings the exporter chose (casts,
x*x or Pow, Div or Reciprocal, operand order, ReduceMean axes, rotate-half with Slice or
Split); ONNX Runtime then runs the original and the result (the operators as their fallback
functions) on probe inputs, and the folds are kept only when they agree.

--opset N takes the model down to ai.onnx opset N after the other rewrites (ATC of CANN 8
reads up to 18): ops the older opset lacks are expanded (Gelu, AffineGrid), GridSample 20
becomes GridSample 16, the rest goes through onnx.version_converter, and ONNX Runtime must
give the same outputs for both models on probe inputs.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ._grammar import add_shape_option
from ._numbers import opset


def register(sub: Any) -> None:
    from ..onnx import FUSIONS
    from ._io import probe_value

    p = sub.add_parser(
        "rewrite",
        help="fuse Conv-BN-Relu chains or replace standard ops by opsdk operators",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("model", help="the input .onnx file")
    p.add_argument("-o", "--output", help="the .onnx file to write (optional with --report)")
    p.add_argument("--target", choices=("cpu", "ascend"), default="cpu",
                   help="where the model runs: decides which rewrites pay (default cpu)")
    p.add_argument("--report", action="store_true",
                   help="list each candidate, the decision and the reason")
    p.add_argument("--force-fuse", action="store_true",
                   help="fuse on the CPU even in the shape classes measured slower")
    p.add_argument("--no-measure", action="store_true",
                   help="cpu: decide per convolution only, without timing the whole model")
    add_shape_option(p, "cpu: the input shape to time the model on (default: the first "
                     "sizing of its dynamic dims that runs)")
    p.add_argument("--probe-values", action="append", type=probe_value, default=[],
                   metavar="NAME=V", help="cpu: the value to fill a value input with when "
                   "timing (e.g. sr=16000; default: a constant the graph compares it with)")
    p.add_argument("--fuse", action="append", default=[], choices=FUSIONS,
                   help="a fusion to apply (repeatable)")
    p.add_argument("--replace", action="append", default=[], metavar="OP",
                   help="standard op to replace by the opsdk operator whose spec.onnx_op is "
                   "OP, or an operator's name (NAME or DOMAIN::NAME) whose decompositions to "
                   "fold (repeatable, or comma-separated)")
    p.add_argument("--opset", type=opset, metavar="N",
                   help="take the model down to ai.onnx opset N (after the other rewrites)")
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")
    p.add_argument("--json", action="store_true", help="print the records as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import SpecError
    from ..onnx import ModelError, check_model, load_model, rewrite, save_model
    from ._io import check_output_file

    if not args.fuse and not args.replace and args.opset is None:
        raise SpecError("nothing to do: pass --fuse conv-bn-relu, --replace OP and/or "
                        "--opset N")
    if args.opset is not None and not 7 <= args.opset <= _onnx_opset():
        raise SpecError(f"--opset {args.opset}: give an ai.onnx opset from 7 to {_onnx_opset()}")
    if not args.output and not args.report:
        raise SpecError("pass -o OUT.onnx to write the rewritten model, or --report alone")
    replace = [op for item in args.replace for op in item.split(",") if op]
    if args.output:
        from .._written import check_output

        check_output_file(args.output, "-o")  # its folder exists or can
        check_output(args.output, args.force)  # before the work: a symlink, a file
    source = load_model(args.model)
    measure = args.target == "cpu" and args.fuse and not args.force_fuse and not args.no_measure
    pays = _timer(source, args) if measure else None
    result = rewrite(source, fuse=args.fuse, replace=replace, native=_native(args.target),
                     force=args.force_fuse, pays=pays)
    if args.opset is not None:
        result = _lower(source, result, args)
    if args.report and not args.json:
        _print_report(result.records, args.target)
    if not args.output:  # --report alone: nothing written
        if args.json:
            print(json.dumps({"output": None, "target": args.target,
                              "records": [r.__dict__ for r in result.records]}, indent=2))
        return 0
    try:
        check_model(result.model)
    except ModelError as e:  # write anyway only if ONNX rejected the input already
        try:
            check_model(source)
        except ModelError:
            print(f"note: ONNX's checks reject the input model too: {e}", file=sys.stderr)
        else:
            raise ModelError(f"the rewritten model fails ONNX's checks: {e}") from None
    path = save_model(result.model, args.output, force=args.force)
    if args.json:
        print(json.dumps({
            "output": str(path),
            "changed": result.changed,
            "records": [r.__dict__ for r in result.records],
        }, indent=2))
        return 0
    # the opset's outcome ends the last line in every mode (the records above it may be
    # the --report's, or many); a model left at its opset is said there alone
    opset = [r for r in result.records if r.node == "the model"
             and r.action in ("converted", "skipped")]
    if not args.report:
        for r in result.records:
            if r.node != "the model" or r.action != "skipped":
                print(f"{r.action:9} {r.node}: {r.detail}")
    print(f"wrote {path}: {result.changed} rewrite(s)"
          + (f", {'the model ' if opset[0].action == 'skipped' else ''}{opset[0].detail}"
             if opset else ""))
    return 0


def _onnx_opset() -> int:
    import onnx

    return int(onnx.defs.onnx_opset_version())


def _lower(source: Any, result: Any, args: argparse.Namespace) -> Any:
    """--opset: the rewritten model taken down, checked on the original's probe inputs when
    ONNX Runtime can run the original."""
    from ..onnx import RewriteRecord, RewriteResult, lower_opset, probe_feeds, runnable_shapes

    values = dict(args.probe_values)
    # comparable with ONNX Runtime alone only while the model holds no opsdk node
    shapes = None if result.changed else runnable_shapes(source, values)
    feeds = None
    if shapes is not None:
        sizes = {(k, a): int(d) for k, v in shapes.items() for a, d in enumerate(v)}
        feeds = probe_feeds(source, sizes, values, random=True)
    lowered = lower_opset(result.model, args.opset, feeds)
    records = result.records + lowered.records
    if feeds is None and any(r.action == "converted" for r in lowered.records):
        why = ("the model holds opsdk nodes after the other rewrites" if result.changed else
               "ONNX Runtime runs the original on no probe input (give --probe-values)")
        records.append(RewriteRecord("the model", "unchecked",
                                     f"outputs not compared with the original's: {why}"))
    return RewriteResult(lowered.model, records)


def _timer(source: Any, args: argparse.Namespace) -> Any:
    """The whole-model check: times the model before and after the fusions (called only when
    a chain was fused) on --input-shape, else the first sizing ONNX Runtime runs."""
    from ..errors import SpecError
    from ..onnx import time_models
    from ..onnx._probe import _inputs, probe_feeds, runnable_shapes
    from .cmd_export import parse_shapes

    given = parse_shapes(args.shape, "--input-shape")
    inputs = [vi.name for vi in _inputs(source)]
    for name, dims in given.items():
        if name not in inputs:
            raise SpecError(f"--input-shape {name}: the model has no input {name!r}; its "
                            f"inputs: {', '.join(inputs)}")
        if not all(isinstance(d, int) and d > 0 for d in dims):
            raise SpecError(f"--input-shape {name}={','.join(map(str, dims))}: give positive "
                            "integer dims (the shape to time the model on)")
    values = dict(args.probe_values)

    def pays(before: Any, after: Any) -> Any:
        found = runnable_shapes(source, values, sizes=(224, 64, 32, 640))
        if found is None and set(given) != set(inputs):
            raise SpecError(
                "timing the whole model before and after the fusions: ONNX Runtime runs it on "
                "no probe sizing; give the shape it runs on with --input-shape NAME=D0,D1,... "
                "for every input (and --probe-values for value inputs), or pass --no-measure "
                "to decide per convolution only")
        shapes = dict(found or {})
        shapes.update({k: tuple(int(d) for d in v) for k, v in given.items()})
        sizes = {(n, axis): int(d) for n, dims in shapes.items() for axis, d in enumerate(dims)}
        return time_models(before, after, probe_feeds(source, sizes, values, random=True))

    return pays


def _native(target: str) -> dict[str, str]:
    """Fusions the target's compiler does itself (kept, not rewritten)."""
    if target != "ascend":
        return {}
    from ..ascend.parser import ATC_NATIVE_FUSIONS

    return dict(ATC_NATIVE_FUSIONS)


def _print_report(records: list[Any], target: str) -> None:
    """Each candidate, the decision and the reason; then the count per decision."""
    print(f"rewrite report for target {target}:")
    for r in records:
        decision = {"fused": "rewrite", "replaced": "rewrite", "refused": "keep (refused)",
                    "skipped": "keep (no match)",
                    "measured": "rewrite (the whole model measured faster)",
                    "expanded": "rewrite (opset)", "adapted": "rewrite (opset)",
                    "unchecked": "unchecked",
                    "converted": "rewrite (opset)", "checked": "checked"}.get(r.action,
                                                                               r.action)
        print(f"  {r.node}\n      decision: {decision}\n      reason:   {r.detail}")
    counts: dict[str, int] = {}
    for r in records:
        counts[r.action] = counts.get(r.action, 0) + 1
    print("  " + ", ".join(f"{n} {a}" for a, n in sorted(counts.items())) if counts
          else "  no candidates")
    if target == "cpu" and counts.get("fused") and not counts.get("measured"):
        print("  note: decided per convolution only (--no-measure or --force-fuse); each fused "
              "node also splits ONNX Runtime's part of the graph under opsdk's Session, which "
              "on small tensors can cost more than the kernel saves (docs/onnx.md, Rewrites)")
