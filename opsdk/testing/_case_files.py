"""Case files of Huawei's ops-test-kit (kernel mode CSV): export an operator's cases, import them.

The kernel mode of ops-test-kit (``python3 -m ttk kernel -i cases.csv``) reads one case a
row; every cell holds a Python literal (``"((2, 3),)"``, ``"('float16',)"``, ``{'alpha':
0.5}``). docs/validation.md lists the fields and where they come from. What the format has
no field for (opsdk's distribution, layout, edge values and standard) travels in the
``remark`` cell as ``opsdk: key=value; ...``, which the tool keeps as a free-form note.

Example:
    >>> from opsdk.spec import OpSpec, Input, Output
    >>> s = OpSpec("Neg", domain="com.x", inputs=[Input("x")], outputs=[Output("y")],
    ...            types={"T": ("float32",)})
    >>> text = cases_csv(s, build_cases(s)[5:6])
    >>> [(c.case.id, c.case.shapes) for c in parse_cases(s, text)]
    [('float32-small', ((2, 3, 4),))]
"""

from __future__ import annotations

import ast
import csv
import io
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._text import undecodable
from ..dtypes import to_numpy
from ..errors import CaseFileError, SpecError
from ..spec import OpSpec, TensorType
from ._cases import OpCase, build_cases
from ._generate import DISTRIBUTIONS, LAYOUTS, default_range
from ._standards import AllClose, get_standard, reads_reference, standard_for

__all__ = ["CaseFileError", "FileCase", "FIELDS", "cases_csv", "export_cases",
           "import_cases", "parse_cases", "run_case_file"]

#: The 26 columns of a kernel-mode case file, in the order of ops-test-kit's add.csv example.
FIELDS = (
    "testcase_name", "network_name", "op_name", "input_shapes", "input_dtypes",
    "input_formats", "output_shapes", "output_dtypes", "output_formats", "input_ori_shapes",
    "input_ori_formats", "output_ori_shapes", "output_ori_formats", "attributes",
    "input_data_ranges", "precision_tolerances", "absolute_precision",
    "output_inplace_indexes", "output_shape_unknown_indexes", "is_enabled", "remark",
    "soc_series", "priority", "dump_file_prefix", "manual_input_binaries",
    "manual_golden_binaries",
)
#: Kernel-mode columns of newer versions of the tool that opsdk accepts and does not read.
IGNORED = ("manual_xpu_binaries",)
REQUIRED = ("testcase_name", "op_name", "input_shapes", "input_dtypes", "output_shapes",
            "output_dtypes")
_LAYOUTS = ("contiguous", *LAYOUTS)
#: The value range ops-test-kit draws from when ``input_data_ranges`` gives none.
TOOL_DEFAULT_RANGE = (-2.0, 2.0)
_MARK = "opsdk:"


@dataclass(frozen=True)
class FileCase:
    """One case read from a case file: the opsdk case, its standard and tolerances.

    ``standard`` is the opsdk standard the file names (None: spec.py's, then the dtype's);
    ``tolerances`` the file's per-output ``(rtol, atol)`` (``precision_tolerances``).
    """

    case: OpCase
    standard: str | None = None
    tolerances: tuple[tuple[float, float], ...] | None = None


# ----------------------------------------------------------------------------- export
def _out_types(spec: OpSpec, case: OpCase) -> list[TensorType]:
    types = [None if s is None or d is None else TensorType(tuple(s), d)
             for s, d in zip(case.shapes, case.dtypes, strict=False)]
    return spec.infer(types, spec.resolve_attrs(case.attrs))


def _remark(case: OpCase, standard: str | None) -> str:
    extra = {"distribution": case.distribution, "layout": case.layout,
             "edges": "true" if case.edges else "false"}
    if standard:
        extra["standard"] = standard
    return _MARK + " " + "; ".join(f"{k}={v}" for k, v in extra.items())


def _ranges(spec: OpSpec, case: OpCase) -> tuple[Any, ...]:
    out: list[Any] = []
    for inp, dt in zip(spec.inputs, case.dtypes, strict=False):
        if dt is None:
            out.append(None)
            continue
        lo, hi = case.ranges.get(inp.name) or default_range(dt)
        out.append((float(lo), float(hi)))
    return tuple(out)


def _row(spec: OpSpec, case: OpCase, standard: str | None) -> dict[str, str]:
    outs = _out_types(spec, case)
    shapes = tuple(None if s is None else tuple(int(d) for d in s) for s in case.shapes)
    n_in, n_out = len(shapes), len(outs)
    std = standard_for(outs[0].dtype if outs else "float32", spec.standard, standard)
    tol = ""
    if isinstance(std, AllClose):
        tol = repr(tuple(std.tolerances(t.dtype) for t in outs))
    oshapes = tuple(tuple(int(d) for d in t.shape) for t in outs)  # type: ignore[arg-type]
    values = {
        "testcase_name": case.id, "network_name": "", "op_name": spec.snake_name,
        "input_shapes": repr(shapes), "input_dtypes": repr(tuple(case.dtypes)),
        "input_formats": repr(("ND",) * n_in), "output_shapes": repr(oshapes),
        "output_dtypes": repr(tuple(t.dtype for t in outs)),
        "output_formats": repr(("ND",) * n_out), "input_ori_shapes": repr(shapes),
        "input_ori_formats": repr(("ND",) * n_in), "output_ori_shapes": repr(oshapes),
        "output_ori_formats": repr(("ND",) * n_out), "attributes": repr(dict(case.attrs)),
        "input_data_ranges": repr(_ranges(spec, case)), "precision_tolerances": tol,
        "absolute_precision": "1e-08", "output_inplace_indexes": "()",
        "output_shape_unknown_indexes": "()", "is_enabled": "True",
        "remark": _remark(case, standard), "soc_series": "", "priority": "0",
        "dump_file_prefix": "", "manual_input_binaries": "()", "manual_golden_binaries": "()",
    }
    return values


def cases_csv(spec: OpSpec, cases: Sequence[OpCase] | None = None,
              standard: str | None = None) -> str:
    """The case file text of ``cases`` (default: every case :func:`build_cases` gives).

    ``standard`` (an opsdk standard name) is recorded in each row's remark; without it
    the spec's standard applies on import, as it does in ``opsdk test``.

    Example:
        >>> from opsdk.spec import OpSpec, Input, Output
        >>> s = OpSpec("Neg", domain="com.x", inputs=[Input("x")], outputs=[Output("y")],
        ...            types={"T": ("float16",)})
        >>> print(cases_csv(s, build_cases(s)[5:6]).splitlines()[1][:58])
        float16-small,,neg,"((2, 3, 4),)","('float16',)","('ND',)"
    """
    if standard:
        get_standard(standard)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
    w.writeheader()
    for c in build_cases(spec) if cases is None else cases:
        w.writerow(_row(spec, c, standard))
    return buf.getvalue()


def export_cases(spec: OpSpec, path: str | os.PathLike[str], cases: Sequence[OpCase] | None
                 = None, *, standard: str | None = None, force: bool = False) -> Path:
    """Write ``spec``'s cases to the ops-test-kit case file ``path`` (an existing file
    only with ``force``; see :func:`opsdk._written.write_output`).

    Example:
        >>> import tempfile
        >>> from opsdk.spec import OpSpec, Input, Output
        >>> s = OpSpec("Neg", domain="com.x", inputs=[Input("x")], outputs=[Output("y")],
        ...            types={"T": ("float32",)})
        >>> p = export_cases(s, Path(tempfile.mkdtemp()) / "neg.csv")
        >>> len(import_cases(s, p)) == len(build_cases(s))
        True
    """
    from .._written import write_output

    return write_output(path, cases_csv(spec, cases, standard), force=force,
                        flag="--export-cases")


# ----------------------------------------------------------------------------- import
class _Row:
    """One row being read: its cells and where it is, for messages."""

    def __init__(self, source: str, line: int, cells: Mapping[str, str | None]):
        self.source, self.line, self.cells = source, line, cells
        self.name = (cells.get("testcase_name") or "").strip() or f"auto_testcase_name_{line}"

    def fail(self, field: str, expected: str, actual: Any, fix: str) -> CaseFileError:
        return CaseFileError(
            f"{self.source}: line {self.line}, case {self.name!r}, field {field!r}: expected "
            f"{expected}, got {actual!r}; {fix}")

    def text(self, field: str) -> str:
        return (self.cells.get(field) or "").strip()

    def literal(self, field: str, default: Any = None) -> Any:
        text = self.text(field)
        if not text:
            return default
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            raise self.fail(field, "a Python literal such as \"((2, 3),)\"", text,
                            "quote strings ('float16') and wrap the cell in double quotes "
                            "when it holds commas") from None


def _per_input(row: _Row, field: str, value: Any, n: int) -> tuple[Any, ...]:
    """A tuple with one entry per input; a 1-tuple fills every position (the format's
    broadcasting rule)."""
    if not isinstance(value, tuple | list):
        value = (value,)
    if len(value) == 1 and n > 1:
        value = tuple(value) * n
    if len(value) != n:
        raise row.fail(field, f"{n} entries, one per input of the spec", value,
                       "list the inputs in spec.py's order, None for an absent optional one")
    return tuple(value)


def _shape(row: _Row, field: str, s: Any) -> tuple[int, ...] | None:
    if s is None:
        return None
    if isinstance(s, int):
        s = (s,)
    if not isinstance(s, tuple | list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in s):
        raise row.fail(field, "a shape of non-negative ints such as (2, 3)", s,
                       "write concrete dims (the tool derives dynamic shapes itself)")
    return tuple(s)


def _shapes(row: _Row, field: str, n: int) -> tuple[tuple[int, ...] | None, ...]:
    """One shape per tensor; a single tensor's shape may be written flat: ``(128, 1024)``."""
    value = row.literal(field)
    flat = isinstance(value, tuple | list) and bool(value) and all(
        isinstance(d, int) and not isinstance(d, bool) for d in value)
    if flat and n == 1:
        value = (tuple(value),)
    return tuple(_shape(row, field, s) for s in _per_input(row, field, value, n))


def _inputs(row: _Row, spec: OpSpec) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    n = len(spec.inputs)
    shapes = _shapes(row, "input_shapes", n)
    raw = row.literal("input_dtypes")
    dtypes = _per_input(row, "input_dtypes", raw, n)
    if isinstance(raw, tuple | list) and len(raw) == 1:  # a filled-in dtype skips absent inputs
        dtypes = tuple(None if s is None else d for s, d in zip(shapes, dtypes, strict=True))
    for inp, s, d in zip(spec.inputs, shapes, dtypes, strict=True):
        if (s is None) != (d is None):
            raise row.fail("input_dtypes", f"None exactly where input_shapes has None "
                           f"(input {inp.name!r})", d, "give both or neither")
        if s is None and not inp.optional:
            raise row.fail("input_shapes", f"a shape for the required input {inp.name!r}",
                           None, "only optional inputs may be None")
    combos = spec.dtype_combinations()
    if not any(all(d is None or d == c for d, c in zip(dtypes, combo, strict=False))
               for combo in combos):
        allowed = ", ".join(str(c) for c in combos)
        raise row.fail("input_dtypes", f"one of the spec's combinations {allowed}", dtypes,
                       "use a dtype spec.py's types allow")
    return shapes, dtypes


def _attrs(row: _Row, spec: OpSpec) -> dict[str, Any]:
    attrs = row.literal("attributes", {})
    if not isinstance(attrs, dict):
        raise row.fail("attributes", "a dict such as {'alpha': 0.5}", attrs,
                       "write the attributes as a dict")
    known = [a.name for a in spec.attrs]
    unknown = sorted(set(attrs) - set(known))
    if unknown:
        raise row.fail("attributes", f"names among {known}", unknown,
                       "use spec.py's attribute names")
    try:
        spec.resolve_attrs(attrs)
    except SpecError as e:
        raise row.fail("attributes", "values spec.py accepts", attrs, str(e)) from None
    return dict(attrs)


def _dtype_bounds(dtype: str) -> tuple[float, float]:
    """The finite values of ``dtype`` (inputs are drawn in it)."""
    np_dtype = to_numpy(dtype)
    if dtype == "bfloat16":
        import ml_dtypes

        info: Any = ml_dtypes.finfo(np_dtype)
    else:
        info = np.finfo(np_dtype) if np_dtype.kind == "f" else np.iinfo(np_dtype)
    return float(info.min), float(info.max)


def _data_ranges(row: _Row, spec: OpSpec, dtypes: tuple[Any, ...]) -> dict[str, Any]:
    raw = row.literal("input_data_ranges")
    if raw is None:
        raw = ((None, None),)
    if isinstance(raw, tuple | list) and len(raw) == 2 and all(
            isinstance(v, int | float) for v in raw):
        raw = (tuple(raw),)
    ranges: dict[str, tuple[float, float]] = {}
    for inp, r, d in zip(spec.inputs, _per_input(row, "input_data_ranges", raw,
                                                 len(spec.inputs)), dtypes, strict=True):
        if d is None or d == "bool":
            continue
        if r is None or tuple(r[:2]) == (None, None):
            r = TOOL_DEFAULT_RANGE  # the format's default for an empty range
        ok = isinstance(r, tuple | list) and len(r) >= 2 and all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in r[:2])
        if not ok or r[0] > r[1]:
            raise row.fail("input_data_ranges", f"(min, max) with min <= max for input "
                           f"{inp.name!r}", r, "write a closed interval such as (-1, 1)")
        lo, hi = _dtype_bounds(d)
        if not (lo <= r[0] and r[1] <= hi and math.isfinite(float(r[1]) - float(r[0]))):
            raise row.fail("input_data_ranges", f"(min, max) within {d}'s range [{lo:g}, "
                           f"{hi:g}] for input {inp.name!r}, its width a finite double", r,
                           "write a narrower interval such as (-1, 1)")
        if (float(r[0]), float(r[1])) != default_range(d):  # opsdk's default: left implicit
            ranges[inp.name] = (float(r[0]), float(r[1]))
    return ranges


def _outputs(row: _Row, spec: OpSpec, case: OpCase) -> None:
    """The file's output shapes and dtypes must be what the spec infers for the inputs."""
    try:
        want = _out_types(spec, case)
    except SpecError as e:
        raise row.fail("input_shapes", "shapes the spec's inference accepts",
                       row.text("input_shapes"), str(e)) from None
    n = len(spec.outputs)
    shapes = _shapes(row, "output_shapes", n)
    dtypes = _per_input(row, "output_dtypes", row.literal("output_dtypes"), n)
    for out, t, s, d in zip(spec.outputs, want, shapes, dtypes, strict=True):
        exp = tuple(int(x) for x in t.shape)  # type: ignore[arg-type]
        if s != exp:
            raise row.fail("output_shapes", f"{exp} for output {out.name!r} (spec.py's "
                           "inference)", s, "fix the row, or the shape function")
        if d != t.dtype:
            raise row.fail("output_dtypes", f"{t.dtype!r} for output {out.name!r} (spec.py's "
                           "inference)", d, "fix the row, or spec.py's types")


def _extras(row: _Row) -> dict[str, str]:
    text = row.text("remark")
    if not text.startswith(_MARK):
        return {}
    out: dict[str, str] = {}
    for part in text[len(_MARK):].split(";"):
        key, sep, value = part.strip().partition("=")
        if part.strip() and not sep:
            raise row.fail("remark", "opsdk: key=value; ... entries", part.strip(),
                           "write key=value (distribution, layout, edges, standard)")
        if sep:
            out[key.strip()] = value.strip()
    choices = {"distribution": tuple(DISTRIBUTIONS), "layout": _LAYOUTS,
               "edges": ("true", "false")}
    for key, allowed in choices.items():
        if key in out and out[key] not in allowed:
            raise row.fail("remark", f"{key} one of {', '.join(allowed)}", out[key],
                           f"fix the {key}= entry")
    if "standard" in out:
        try:
            get_standard(out["standard"])
        except SpecError as e:
            raise row.fail("remark", "standard= an opsdk standard", out["standard"],
                           str(e)) from None
    return out


def _tolerances(row: _Row) -> tuple[tuple[float, float], ...] | None:
    raw = row.literal("precision_tolerances")
    if raw is None:
        return None
    if not isinstance(raw, tuple | list) or not all(
            isinstance(p, tuple | list) and len(p) == 2 for p in raw):
        raise row.fail("precision_tolerances", "one (rtol, atol) pair per output", raw,
                       "write e.g. \"((0.001, 0.001),)\"")
    return tuple((float(a), float(b)) for a, b in raw)


def _read_row(row: _Row, spec: OpSpec) -> FileCase | None:
    for f in REQUIRED:
        if not row.text(f):
            raise row.fail(f, "a value (a required field of the format)", "",
                           f"fill {f!r}")
    if row.text("op_name") != spec.snake_name:
        raise row.fail("op_name", repr(spec.snake_name), row.text("op_name"),
                       f"this file is not {spec.name}'s, or its op_name is misspelt")
    if row.literal("is_enabled", True) is False:
        return None
    shapes, dtypes = _inputs(row, spec)
    extras = _extras(row)
    case = OpCase(row.name, dtypes, shapes, _attrs(row, spec),
                  distribution=extras.get("distribution", "uniform"),
                  ranges=_data_ranges(row, spec, dtypes), edges=extras.get("edges") == "true",
                  layout=extras.get("layout", "contiguous"))
    _outputs(row, spec, case)
    return FileCase(case, extras.get("standard"), _tolerances(row))


def parse_cases(spec: OpSpec, text: str, source: str = "<case file>") -> list[FileCase]:
    """Read case-file text into opsdk cases (rows with ``is_enabled`` False are skipped).

    Raises CaseFileError naming the source, line, case, field, what was expected and the
    fix, for a missing column, a cell that is no literal, or a case the spec does not
    allow (unknown dtype, attribute or input count; outputs other than spec inference).

    Example:
        >>> from opsdk.spec import OpSpec, Input, Output
        >>> s = OpSpec("Neg", domain="com.x", inputs=[Input("x")], outputs=[Output("y")],
        ...            types={"T": ("float32",)})
        >>> text = ("testcase_name,op_name,input_shapes,input_dtypes,output_shapes,"
        ...         "output_dtypes\\nneg_01,neg,\\"((4, 5),)\\",\\"('float32',)\\","
        ...         "\\"((4, 5),)\\",\\"('float32',)\\"\\n")
        >>> parse_cases(s, text)[0].case.shapes
        ((4, 5),)
    """
    reader = csv.DictReader(io.StringIO(text))
    unknown = [f for f in reader.fieldnames or [] if f not in (*FIELDS, *IGNORED)]
    if unknown:
        raise CaseFileError(
            f"{source}: unknown column(s) {unknown} (a kernel-mode case file has "
            f"{', '.join((*FIELDS, *IGNORED))}); fix the spelling, or drop the column "
            "(the ACLNN, GEIR and E2E modes' columns are not read)")
    missing = [f for f in REQUIRED if f not in (reader.fieldnames or [])]
    if missing:
        raise CaseFileError(
            f"{source}: the header lacks the required field(s) {missing} (it has "
            f"{reader.fieldnames}); the first line must name the columns, e.g. "
            f"{','.join(REQUIRED)}")
    out: list[FileCase] = []
    seen: set[str] = set()
    for cells in reader:
        row = _Row(source, reader.line_num, cells)
        if row.name in seen:
            raise row.fail("testcase_name", "a name no other row has", row.name,
                           "rename one of the rows")
        seen.add(row.name)
        got = _read_row(row, spec)
        if got is not None:
            out.append(got)
    return out


def import_cases(spec: OpSpec, path: str | os.PathLike[str]) -> list[FileCase]:
    """Read the ops-test-kit case file ``path`` as ``spec``'s cases (see :func:`parse_cases`).

    Example:
        >>> import_cases(spec, "thresholded_relu.csv")  # doctest: +SKIP
        [FileCase(case=OpCase(float16-scalar), standard=None, tolerances=None), ...]
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise CaseFileError(undecodable(p, e, "case file")) from None
    except OSError as e:
        raise CaseFileError(f"{p}: cannot read the case file ({e.strerror}); pass an "
                            "existing CSV file") from None
    return parse_cases(spec, text, str(p))


# ----------------------------------------------------------------------------- run
def run_case_file(op: str, path: str | os.PathLike[str], *, device: str = "cpu",
                  seed: int = 0, standard: str | None = None,
                  precision_mode: str | None = None) -> list[Any]:
    """Run the cases of the case file ``path`` on operator ``op`` with opsdk; one
    :class:`~opsdk.testing.CaseResult` per enabled case. ``standard`` overrides the file's;
    ``precision_mode`` emulates ATC's, as in ``opsdk test``.

    Example:
        >>> [r.passed for r in run_case_file("thresholded_relu", "t.csv")]  # doctest: +SKIP
        [True, True, ...]
    """
    from ..registry import find_operator
    from ._devices import open_device
    from ._runner import run_case

    info = find_operator(op)
    cases = import_cases(info.spec, path)
    folder = Path(info.folder)
    executor = open_device(device, folder, info.spec, {})
    # The trusted device of `cross-device` is the cpu build, as in `opsdk test`.
    wants = any(reads_reference(info.spec.standard, standard or fc.standard) for fc in cases)
    trusted = open_device("cpu", folder, info.spec, {}) if wants else None
    return [run_case(info.spec, executor, fc.case, seed=seed, device=device,
                     standard=standard or fc.standard, precision_mode=precision_mode,
                     reference=trusted)
            for fc in cases]
