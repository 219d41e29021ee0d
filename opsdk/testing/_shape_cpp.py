"""The C++ shape function CANN's InferShape runs, held to spec.py and to the kernel.

An operator's CANN project infers output shapes with ``operators/<op>/shape.h`` (NumPy
broadcasting for an elementwise operator) and output dtypes with a rule generated from
spec.py (an output takes an input's dtype, or a fixed one). ``opsdk test`` and ``opsdk check``
compile that shape function into a small driver (real C++ compiler, cached by content under
``$OPSDK_CACHE_DIR/shape``), run it on every generated case and compare it with spec.py's
inference and with the kernel's actual outputs.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import _paths
from ..errors import BuildError, SpecError
from ..spec import OpSpec, TensorType

__all__ = ["ShapeFunction", "shape_function", "missing_reason", "cann_dtypes", "spec_problems",
           "kernel_problems", "Shapes", "ShapeCase", "shape_cases", "ShapeCheck"]

#: One answer of the shape function: the output shapes, or the message it refused with.
Shapes = list[tuple[int, ...]] | str
_DRIVER = Path(__file__).with_name("_shape_driver.cpp")
_RUN_TIMEOUT_S = 300.0  # a bound on a run of the driver, not a measurement


@dataclass(frozen=True)
class ShapeFunction:
    """The compiled driver of one operator's C++ shape function.

    ``source`` is what it runs: the ``shape.h`` path, or ``broadcasting`` (elementwise).
    """

    spec: OpSpec
    source: str
    exe: Path

    def run(self, calls: Sequence[tuple[Sequence[Sequence[int] | None], Mapping[str, Any]]]
            ) -> list[Shapes]:
        """The shapes the C++ function gives for each (input shapes, resolved attributes).

        A crash of the function on one call is that call's answer; the others still run.

        Example:
            >>> fn = shape_function(find_operator("Softmax").folder, spec)  # doctest: +SKIP
            >>> fn.run([([(2, 3)], {"axis": -1})])  # doctest: +SKIP
            [[(2, 3)]]
        """
        lines = [_line(self.spec, shapes, attrs) for shapes, attrs in calls]
        answers: list[Shapes] = []
        while len(answers) < len(lines):
            got, crash = self._run_lines(lines[len(answers):])
            answers += [_parse(g) for g in got]
            if crash and len(answers) < len(lines):
                answers.append(f"the C++ shape function {crash}")
        return answers

    def _run_lines(self, lines: list[str]) -> tuple[list[str], str]:
        try:
            proc = subprocess.run([str(self.exe)], input="\n".join(lines) + "\n",
                                  capture_output=True, text=True, timeout=_RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return [], f"gave no answer within {_RUN_TIMEOUT_S:g} s"
        except OSError as e:  # the cached driver removed or damaged since it was checked
            return [], f"could not run ({self.exe}: {e.strerror or e})"
        got = proc.stdout.splitlines()[: len(lines)]
        if proc.returncode == 0 and len(got) == len(lines):
            return got, ""
        how = (f"signal {-proc.returncode}" if proc.returncode < 0
               else f"exit status {proc.returncode}")
        tail = f": {proc.stderr.strip()[-300:]}" if proc.stderr.strip() else ""
        return got, f"crashed ({how}{tail})"


def _line(spec: OpSpec, shapes: Sequence[Sequence[int] | None], attrs: Mapping[str, Any]) -> str:
    words: list[str] = []
    padded = list(shapes) + [None] * (len(spec.inputs) - len(shapes))
    for s in padded:
        words += ["in", "-1"] if s is None else ["in", str(len(s)), *map(str, s)]
    for a in spec.attrs:
        if a.name not in attrs:
            continue
        v = attrs[a.name]
        if a.type in ("int", "bool"):
            words += ["int", a.name, str(int(v))]
        elif a.type == "float":
            words += ["float", a.name, repr(float(v))]
        elif a.type == "string":
            words += ["string", a.name, "x" + str(v).encode().hex()]
        else:
            words += [a.type, a.name, str(len(v)), *(repr(float(x)) if a.type == "floats"
                                                     else str(int(x)) for x in v)]
    return " ".join(words)


def _parse(answer: str) -> Shapes:
    if not answer.startswith("ok "):
        return answer.removeprefix("error ") or "the C++ shape function gave no answer"
    out = []
    for part in answer[3:].split(";")[:-1]:
        rank, *dims = (int(w) for w in part.split())
        out.append(tuple(dims[:rank]))
    return out


def missing_reason(folder: Path, spec: OpSpec) -> str:
    """Why an operator has no C++ shape function, naming the file to write.

    Example:
        >>> from opsdk.spec import OpSpec, Input, Output
        >>> spec = OpSpec("RmsNorm", domain="com.example", inputs=[Input("x", "float32")],
        ...               outputs=[Output("y", "float32")])
        >>> missing_reason(Path("operators/rms_norm"), spec)[:68]
        'RmsNorm has no C++ shape function: no operators/rms_norm/shape.h, so'
    """
    return (f"{spec.name} has no C++ shape function: no {Path(folder) / 'shape.h'}, so the "
            "InferShape of its CANN project would be the scaffold's TODO (GRAPH_FAILED, ATC "
            "refuses the model); port the shape function of spec.py to that file (see "
            "opsdk/shape_fn.h)")


def shape_function(folder: Path, spec: OpSpec) -> ShapeFunction | None:
    """The compiled C++ shape function of the operator in ``folder`` (built once, cached by
    the content of shape.h, opsdk's shape_fn.h, the driver and the compiler), or None when it
    has none (no shape.h and not elementwise; see :func:`missing_reason`).

    Raises:
        BuildError: the shape function does not compile, with the compiler's message.

    Example:
        >>> fn = shape_function(find_operator("GridSample").folder, spec)  # doctest: +SKIP
    """
    from ..build import _compiler_version, _find_cxx, cache_dir, cache_problem, file_lock

    header = Path(folder) / "shape.h"
    if spec.elementwise:
        source, include = "broadcasting", ""
        macro = f"-DOPSDK_SHAPE_BROADCAST={len(spec.outputs)}"
    elif header.is_file():
        source, include = str(header), header.read_text(encoding="utf-8", errors="replace")
        macro = f"-DOPSDK_SHAPE_OP={spec.name}"
    else:
        return None
    cxx = _find_cxx()
    text = _DRIVER.read_text()
    api = (Path(_paths.include_dir()) / "opsdk" / "shape_fn.h").read_bytes()
    key = hashlib.sha256(b"\0".join([text.encode(), macro.encode(), include.encode(), api,
                                     _compiler_version(cxx).encode()])).hexdigest()
    root = cache_dir() / "shape" / spec.snake_name / key[:16]
    exe = root / "shape_driver"
    if cache_problem(exe, key) is not None:
        try:
            with file_lock(root / ".lock", f"{spec.name}'s C++ shape function"):
                if cache_problem(exe, key) is not None:
                    _compile(cxx, root, text, include, macro, exe, key, spec, source)
        except OSError as e:
            raise BuildError(f"{spec.name}: cannot build its C++ shape function in {root}: "
                             f"{e.strerror or e}; point OPSDK_CACHE_DIR at a folder you can "
                             "write") from None
    return ShapeFunction(spec, source, exe)


def _compile(cxx: str, root: Path, text: str, include: str, macro: str, exe: Path, key: str,
             spec: OpSpec, source: str) -> None:
    from ..build import _write_record

    (root / "driver.cpp").write_text(text)
    (root / "op_shape.h").write_text(include)
    tmp = root / f".shape_driver.{os.getpid()}"
    cmd = [cxx, "-std=c++17", "-O1", macro, f"-I{_paths.include_dir()}", f"-I{root}",
           str(root / "driver.cpp"), "-o", str(tmp)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        raise BuildError(f"{spec.name}: compiling its C++ shape function ({source}) took "
                         "over 600 s") from None
    if proc.returncode != 0:
        raise BuildError(
            f"{spec.name}: its C++ shape function ({source}) does not compile with {cxx}; "
            "CANN's InferShape compiles the same code. Fix it (see opsdk/shape_fn.h):\n"
            + proc.stderr.replace(str(root / "op_shape.h"), source)[-3000:])
    os.replace(tmp, exe)
    _write_record(exe, key)


def cann_dtypes(spec: OpSpec, input_dtypes: Sequence[str | None]) -> list[str]:
    """The output dtypes the CANN project's generated InferDataType sets for these input
    dtypes: each output takes the dtype of the input its spec type comes from, or a fixed one.

    Example:
        >>> from opsdk.registry import find_operator
        >>> cann_dtypes(find_operator("LayerNormalization").spec, ["float16"] * 3)
        ['float16', 'float32', 'float32']
    """
    from ..ascend._op import _out_source
    from ..ascend.spellings import GE_DTYPES

    by_ge = {f"ge::{ge}": name for name, ge in GE_DTYPES.items()}
    out = []
    for _, src in _out_source(spec):
        out.append(str(input_dtypes[src]) if isinstance(src, int) else by_ge.get(src, src))
    return out


def _spec_types(spec: OpSpec, shapes: Sequence[Sequence[int] | None],
                dtypes: Sequence[str | None], attrs: Mapping[str, Any]) -> list[TensorType]:
    types = [None if s is None else TensorType(tuple(s), d or "float32")
             for s, d in zip(shapes, list(dtypes) + [None] * len(shapes), strict=False)]
    return spec.infer(types, attrs)


def spec_problems(fn: ShapeFunction, spec: OpSpec, shapes: Sequence[Sequence[int] | None],
                  dtypes: Sequence[str | None], attrs: Mapping[str, Any],
                  answer: Shapes) -> list[str]:
    """Where the C++ answer on one case differs from spec.py's inference (shapes, dtypes).

    Example:
        >>> spec_problems(fn, spec, [(2, 3)], ["float32"], {"axis": -1}, [(2, 3)])  # doctest: +SKIP
        []
    """
    try:
        want = _spec_types(spec, shapes, dtypes, attrs)
    except SpecError:
        return []  # a case spec.py itself refuses: nothing to hold the C++ function to
    where = f"C++ shape function ({fn.source})"
    if isinstance(answer, str):
        return [f"{where} gives no shapes for a case spec.py infers: {answer}"]
    if len(answer) != len(spec.outputs):
        return [f"{where} gives {len(answer)} output shapes, spec.py declares "
                f"{len(spec.outputs)} outputs (CANN's InferShape fails)"]
    problems = []
    for out, got, tt in zip(spec.outputs, answer, want, strict=True):
        if tuple(got) != tuple(tt.shape):
            problems.append(f"output {out.name!r}: {where} gives shape {list(got)}, spec.py "
                            f"infers {list(tt.shape)}")
    gen = cann_dtypes(spec, list(dtypes) + [None] * (len(spec.inputs) - len(dtypes)))
    for out, got_dt, tt in zip(spec.outputs, gen, want, strict=True):
        if got_dt != tt.dtype:
            problems.append(f"output {out.name!r}: the CANN project's InferDataType gives "
                            f"{got_dt}, spec.py infers {tt.dtype}")
    return problems


def kernel_problems(fn: ShapeFunction, spec: OpSpec, answer: Shapes, dtypes: Sequence[str | None],
                    actual: Sequence[tuple[str, tuple[int, ...]] | None],
                    check_dtypes: bool = True) -> list[str]:
    """Where the kernel's actual outputs ((dtype, shape) each) differ from what the C++
    shape function and the generated InferDataType give on the same case.

    Example:
        >>> kernel_problems(fn, spec, [(2, 3)], ["float32"],
        ...                 [("float32", (2, 3))])  # doctest: +SKIP
        []
    """
    if isinstance(answer, str) or len(answer) != len(spec.outputs):
        return []  # spec_problems says what is wrong with the answer
    gen = cann_dtypes(spec, list(dtypes) + [None] * (len(spec.inputs) - len(dtypes)))
    where = f"C++ shape function ({fn.source})"
    problems = []
    for out, shape, dt, act in zip(spec.outputs, answer, gen, actual, strict=False):
        if act is None:
            continue
        if tuple(shape) != tuple(act[1]):
            problems.append(f"output {out.name!r}: {where} gives shape {list(shape)}, the "
                            f"kernel produced {list(act[1])}")
        if check_dtypes and dt != act[0]:
            problems.append(f"output {out.name!r}: the CANN project's InferDataType gives {dt}, "
                            f"the kernel produced {act[0]}")
    return problems


@dataclass(frozen=True)
class ShapeCase:
    """One call of the shape function: a case id, input shapes and dtypes, resolved attrs."""

    id: str
    shapes: tuple[tuple[int, ...] | None, ...]
    dtypes: tuple[str | None, ...]
    attrs: Mapping[str, Any]


def shape_cases(spec: OpSpec, cases: Sequence[Any]) -> list[ShapeCase]:
    """:class:`ShapeCase` of each generated case (:class:`opsdk.testing.OpCase`).

    Example:
        >>> shape_cases(spec, build_cases(spec))[0].id  # doctest: +SKIP
        'float16-small'
    """
    out = []
    for c in cases:
        try:
            attrs = spec.resolve_attrs(dict(c.attrs))
        except SpecError:
            continue
        out.append(ShapeCase(c.id, tuple(None if s is None else tuple(s) for s in c.shapes),
                             tuple(c.dtypes), attrs))
    return out


@dataclass
class ShapeCheck:
    """The C++ shape function of one operator run once on a set of cases: what
    ``opsdk test`` and ``opsdk check`` hold to spec.py and to the kernel.

    ``fn`` is None with ``reason`` when there is no shape function, or it did not compile
    (``error`` then holds the compiler's message).
    """

    spec: OpSpec
    fn: ShapeFunction | None
    reason: str = ""
    error: str = ""
    cases: tuple[ShapeCase, ...] = ()
    answers: Mapping[str, Shapes] | None = None

    @classmethod
    def of(cls, folder: Path, spec: OpSpec, cases: Sequence[ShapeCase]) -> ShapeCheck:
        """Build (or find cached) and run the shape function of the operator on ``cases``.

        Example:
            >>> cases = shape_cases(spec, build_cases(spec))  # doctest: +SKIP
            >>> ShapeCheck.of(folder, spec, cases).spec_report()  # doctest: +SKIP
            []
        """
        from .._prebuilt import find_manifest

        if find_manifest(Path(folder)) is not None:  # an installed operator wheel
            return cls(spec, None, reason=f"{spec.name} comes prebuilt from an operator wheel, "
                       "which opsdk never compiles: its C++ shape function was checked where "
                       "the wheel was built (opsdk test in its source folder)")
        try:
            fn = shape_function(folder, spec)
        except BuildError as e:
            return cls(spec, None, reason=str(e).splitlines()[0], error=str(e))
        if fn is None:
            return cls(spec, None, reason=missing_reason(folder, spec))
        answers = fn.run([(c.shapes, c.attrs) for c in cases])
        return cls(spec, fn, cases=tuple(cases),
                   answers={c.id: a for c, a in zip(cases, answers, strict=True)})

    def spec_report(self) -> list[str]:
        """Every disagreement with spec.py, one line each: operator, case, output, expected
        vs actual."""
        if self.fn is None:
            return [self.error] if self.error else []
        fn, answers = self.fn, self.answers or {}
        return [f"{self.spec.name} [{c.id}]: {p}" for c in self.cases
                for p in spec_problems(fn, self.spec, c.shapes, c.dtypes, c.attrs, answers[c.id])]

    def kernel_report(self, case_id: str, outputs: Sequence[str],
                      check_dtypes: bool = True) -> list[str]:
        """Where the kernel's outputs on ``case_id`` (described, ``float32[2, 3]``) differ
        from the C++ shape function's and the generated InferDataType's."""
        from ._runner import parse_described

        answer = (self.answers or {}).get(case_id)
        case = next((c for c in self.cases if c.id == case_id), None)
        if self.fn is None or answer is None or case is None:
            return []
        actual = [parse_described(o) for o in outputs]
        return kernel_problems(self.fn, self.spec, answer, case.dtypes, actual, check_dtypes)
