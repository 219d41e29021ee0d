"""``opsdk new MyOp``: scaffold an operator folder from the template.

Outside opsdk's checkout, in a folder that is no operator project yet, it starts one there:
``operators/`` and a ``pyproject.toml`` whose wheel (``opsdk package``) depends on opsdk.
In a project (or below it) the operator joins the project's ``operators/``. Inside opsdk's
own checkout the operator joins the set opsdk ships, and the command says so.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..scaffold import IoDecl, new_operator, parse_attrs, parse_io
from ..spec import REQUIRED, Attr

HELP = """\
examples:
  opsdk new MyOp --inputs x:float16,float32 --outputs y --attrs threshold:float=0.5 \\
      --domain com.example
  opsdk new MyGridSample --like onnx:GridSample
  opsdk new MyRmsNorm --like llm:rms_norm     (also llm:add_rms_norm, llm:swiglu,
      llm:rotary_embedding, llm:dequant_swiglu_quant, onnx:RMSNormalization: complete
      operators, green unedited)

where: in a folder outside opsdk's checkout the first `opsdk new` makes it an operator
project (operators/ and pyproject.toml); opsdk finds its operators from anywhere inside it
(elsewhere: OPSDK_OPERATORS_PATH=<project>/operators). Inside opsdk's checkout an operator
joins the set opsdk ships.

inputs/outputs: NAME[:DTYPE,DTYPE...][?]  ('?' marks an optional input; outputs without
dtypes share the first input's type). attrs: NAME:TYPE[=DEFAULT] with TYPE one of int,
float, bool, string, ints, floats (no default = required).
"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "new",
        help="scaffold a new operator",
        epilog=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("name", help="op type, UpperCamelCase (e.g. MyOp)")
    p.add_argument("--inputs", nargs="+", default=[], metavar="SPEC")
    p.add_argument("--outputs", nargs="+", default=[], metavar="SPEC")
    p.add_argument("--attrs", nargs="+", default=[], metavar="SPEC")
    p.add_argument("--domain", default="com.example", help="ONNX domain (default com.example)")
    p.add_argument("--dir", default=None,
                   help="parent folder (default: the operators/ of the project here, made "
                   "when there is none; ./operators inside opsdk's checkout)")
    p.add_argument("--like", metavar="onnx:OP|llm:PATTERN",
                   help="pre-fill from a standard ONNX op's schema, or start from a complete "
                   "LLM operator (llm:rms_norm, llm:add_rms_norm, llm:swiglu, "
                   "llm:rotary_embedding, llm:dequant_swiglu_quant; onnx:RMSNormalization "
                   "is complete too)")
    p.add_argument(
        "--decomposition", metavar="EXPR",
        help="the operator's math as ONNX calls, e.g. 'Where(Greater(x, alpha), x, Mul(x, 0.1))': "
        "spec.py gets the decomposition, reference.py evaluates it, and op_kernel/ gets the "
        "generated AI Core kernel (Ascend C) when the decomposition is elementwise or reduces "
        "the last axis (ReduceMean(x, axes=-1), ...)")
    p.add_argument(
        "--backward", action="store_true",
        help="spec.py gets a backward (@SPEC.register_backward) for autograd through "
        "opsdk.torch, the template kernel's derivative to replace with the real one")
    p.set_defaults(func=run)


def _from_like(like: str) -> tuple[list[IoDecl], list[IoDecl], list[Attr], str, str]:
    from ..errors import ScaffoldError

    kind, _, op_type = like.partition(":")
    if kind != "onnx" or not op_type:
        raise ScaffoldError(f"--like {like!r}: expected onnx:<OpType>, e.g. onnx:GridSample")
    from ..onnx.like import like_onnx

    info = like_onnx(op_type)
    types = info.get("types", {})

    def io(items: list[dict[str, Any]]) -> list[IoDecl]:
        return [
            IoDecl(i["name"], tuple(types.get(i["type"], (i["type"],))), bool(i.get("optional")))
            for i in items
        ]

    attrs = [Attr(a["name"], a["type"], a.get("default", REQUIRED)) for a in info["attrs"]]
    return io(info["inputs"]), io(info["outputs"]), attrs, info.get("doc", ""), info["op_type"]


def run(args: argparse.Namespace) -> int:
    from .._starters import starter_of

    if args.like and starter_of(args.like) is not None:
        return _run_starter(args)
    inputs: list[IoDecl] = []
    outputs: list[IoDecl] = []
    attrs: list[Attr] = []
    doc = ""
    onnx_op = None
    if args.like:
        inputs, outputs, attrs, doc, onnx_op = _from_like(args.like)
    inputs = parse_io(args.inputs) or inputs
    outputs = parse_io(args.outputs, "--outputs") or outputs
    attrs = parse_attrs(args.attrs) or attrs
    root = _where(args.name, args.dir)
    path = new_operator(
        args.name,
        inputs=inputs,
        outputs=outputs,
        attrs=attrs,
        domain=args.domain,
        root=root,
        doc=doc,
        onnx_op=onnx_op,
        decomposition=args.decomposition,
        backward=args.backward,
    )
    print(f"created {path}/ (spec.py, kernel.cpp, reference.py, test_{path.name}.py, README.md)")
    _warn_builtin(args.name, path)
    if args.decomposition:
        _aicore_kernel(path)
    print(f"next: opsdk build {args.name} && opsdk test {args.name}")
    return 0


def _run_starter(args: argparse.Namespace) -> int:
    """``--like llm:PATTERN`` (or a complete ONNX operator): the starter's complete operator,
    under the given name."""
    from .._starters import new_starter
    from ..errors import ScaffoldError

    given = [f for f in ("inputs", "outputs", "attrs", "decomposition", "backward")
             if getattr(args, f)]
    if given:
        raise ScaffoldError(
            f"--like {args.like}: the starter defines the operator's inputs, outputs, "
            f"attributes, decomposition and backward; drop --{given[0]} and edit "
            "spec.py after it is created"
        )
    path = new_starter(args.name, args.like, domain=args.domain, root=_where(args.name, args.dir))
    files = ", ".join(sorted(p.name for p in path.iterdir()))
    print(f"created {path}/ from {args.like} ({files})")
    _warn_builtin(args.name, path)
    print(f"next: opsdk test {args.name} && opsdk check {args.name}")
    return 0


def _warn_builtin(name: str, path: Path) -> None:
    """Warn when CANN's own operator library has an operator of this type."""
    import sys

    from ..ascend import builtin_clash
    from ..registry import load_spec

    warning = builtin_clash(name, spec=load_spec(path))
    if warning:
        print(f"opsdk new: warning: {warning}", file=sys.stderr)


def _where(name: str, given: str | None) -> Path:
    """The parent folder of the new operator; says where it lands when that matters."""
    from .._workspace import find_project, in_checkout, project_operators_dir, start_project

    here = Path.cwd()
    if given is not None or in_checkout(here):
        root = Path(given or "operators")
        if in_checkout(root.parent if not root.exists() else root):
            print(f"note: {root.resolve()} is in opsdk's own checkout: {name} joins the "
                  "operators opsdk ships (pip install of the checkout bundles it, opsdk list "
                  "shows it as shipped). To keep your operators apart, run opsdk new in a "
                  "folder outside the checkout: it makes an operator project there "
                  "(operators/ and a pyproject.toml whose wheel depends on opsdk)")
        return root
    project = find_project(here)
    if project is not None:
        return project_operators_dir(project)
    if start_project(here, name):
        print(f"started an operator project in {here}: pyproject.toml (its wheel: opsdk "
              "package) and operators/; opsdk finds them from anywhere in this folder")
    else:
        print(f"note: {here / 'pyproject.toml'} has no [tool.opsdk] table, so it was left as "
              "it is; opsdk finds operators/ when it runs in this folder (add [tool.opsdk] "
              "to make it an operator project)")
    return here / "operators"


def _aicore_kernel(path: Path) -> None:
    """Check the decomposition and write the generated AI Core kernel (or say why not)."""
    import shutil

    from ..ascend.ascendc import GenerateRefused, write_kernel_files
    from ..errors import ScaffoldError, SpecError
    from ..onnx import build_function
    from ..registry import load_spec

    try:
        spec = load_spec(path)
        build_function(spec, 21)
    except SpecError as e:
        shutil.rmtree(path)
        raise ScaffoldError(f"{e} (--decomposition; nothing was created)") from None
    try:
        written = write_kernel_files(spec, path)
    except GenerateRefused as e:
        print(f"no AI Core kernel: {e}; on the NPU the operator runs on AI CPU")
        return
    print(f"wrote the generated AI Core kernel: {', '.join(written)} "
          f"(check it: pytest {path} --opsdk-device ascendc-model)")
    print("kernel.cpp (the CPU kernel) is still the template's: port the decomposition to it")
