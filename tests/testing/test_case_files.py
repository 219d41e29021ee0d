"""Case files of Huawei's ops-test-kit: export, import, the same cases and verdicts."""

from __future__ import annotations

import csv
import doctest
import io
from pathlib import Path
from typing import Any

import pytest

import opsdk.testing._case_files as mod
from opsdk.cli import main
from opsdk.registry import OperatorInfo, find_operator
from opsdk.testing import (
    CaseFileError,
    build_cases,
    export_cases,
    import_cases,
    open_device,
    run_case,
    run_case_file,
)
from opsdk.testing._case_files import FIELDS, cases_csv, parse_cases

OP = "thresholded_relu"
# The header of ops-test-kit's kernel-mode example (docs/Kernel guide, add.csv), 26 columns.
HEADER = ("testcase_name,network_name,op_name,input_shapes,input_dtypes,input_formats,"
          "output_shapes,output_dtypes,output_formats,input_ori_shapes,input_ori_formats,"
          "output_ori_shapes,output_ori_formats,attributes,input_data_ranges,"
          "precision_tolerances,absolute_precision,output_inplace_indexes,"
          "output_shape_unknown_indexes,is_enabled,remark,soc_series,priority,"
          "dump_file_prefix,manual_input_binaries,manual_golden_binaries")
# Rows written by hand in the documented shape: literals in cells, double quotes around
# cells with commas, empty cells for defaults, a dict of attributes.
HAND_WRITTEN = HEADER + "\n" + "\n".join([
    'thresholded_relu_01,,thresholded_relu,"((128, 1024),)","(\'float32\',)","(\'ND\',)",'
    '"((128, 1024),)","(\'float32\',)","(\'ND\',)","((128, 1024),)","(\'ND\',)",'
    '"((128, 1024),)","(\'ND\',)",{},"((-1, 1),)","((0.001, 0.001),)",1e-8,(),(),True,,,0,,(),()',
    'thresholded_relu_02,resnet,thresholded_relu,"((969, 7),)","(\'float16\',)","(\'ND\',)",'
    '"((969, 7),)","(\'float16\',)","(\'ND\',)",,,,,"{\'alpha\': 0.5}","((0, 3),)",,,,,True,'
    'alpha below the data,,1,,,',
    'thresholded_relu_03,,thresholded_relu,"((4,),)","(\'float16\',)",,"((4,),)",'
    '"(\'float16\',)",,,,,,,,,,,,False,,,0,,,',
]) + "\n"


@pytest.fixture(scope="module")
def info() -> OperatorInfo:
    return find_operator(OP)


@pytest.fixture(scope="module")
def kernel(info: OperatorInfo) -> Any:
    return open_device("cpu", Path(info.folder), info.spec, {})


def test_export_writes_the_formats_columns_and_one_row_per_case(info, tmp_path: Path) -> None:
    path = export_cases(info.spec, tmp_path / "t.csv")
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    assert tuple(rows[0]) == FIELDS == tuple(HEADER.split(","))
    assert [r["testcase_name"] for r in rows] == [c.id for c in build_cases(info.spec)]
    small = next(r for r in rows if r["testcase_name"] == "float16-small")
    assert (small["op_name"], small["input_shapes"], small["input_dtypes"]) == (
        "thresholded_relu", "((2, 3, 4),)", "('float16',)")
    assert (small["output_shapes"], small["input_data_ranges"]) == ("((2, 3, 4),)",
                                                                     "((-5.0, 5.0),)")


def test_round_trip_gives_the_same_cases(info, tmp_path: Path) -> None:
    path = export_cases(info.spec, tmp_path / "t.csv", standard="ulp:1")
    got = import_cases(info.spec, path)
    assert [f.case for f in got] == build_cases(info.spec)
    assert {f.standard for f in got} == {"ulp:1"}
    edge = next(f.case for f in got if f.case.id == "float32-edge")
    assert edge.edges and edge.shapes == ((8, 16),)


@pytest.mark.parametrize("mode", [None, "force_fp16"])
def test_round_trip_gives_the_same_verdicts(info, kernel, tmp_path: Path,
                                            mode: str | None) -> None:
    path = export_cases(info.spec, tmp_path / "t.csv")
    here = [run_case(info.spec, kernel, c, seed=3, standard="exact", precision_mode=mode)
            for c in build_cases(info.spec)]
    back = run_case_file(OP, path, seed=3, standard="exact", precision_mode=mode)
    assert [(r.case, r.passed) for r in back] == [(r.case, r.passed) for r in here]
    assert [r.inputs for r in back] == [r.inputs for r in here]
    if mode:  # float32 cases lowered to float16 fail `exact`: both sides see it
        assert 0 < sum(not r.passed for r in back) < len(back)


def test_a_standard_reading_a_reference_device_gets_one(info, tmp_path: Path) -> None:
    # Edge-value cases left out: cross-device's arithmetic on Inf warns (_methods.py).
    plain = [c for c in build_cases(info.spec) if not c.edges]
    path = export_cases(info.spec, tmp_path / "t.csv", plain, standard="cross-device:L2")
    results = run_case_file(OP, path)
    assert results and all(r.passed for r in results)
    names = {c.standard for r in results for c in r.comparisons}
    assert names == {"cross-device"}


def test_a_hand_written_file_imports_and_runs(info, tmp_path: Path) -> None:
    path = tmp_path / "hand.csv"
    path.write_text(HAND_WRITTEN)
    got = import_cases(info.spec, path)
    assert [f.case.id for f in got] == ["thresholded_relu_01", "thresholded_relu_02"]
    first, second = (f.case for f in got)
    assert (first.shapes, first.dtypes, first.ranges) == (((128, 1024),), ("float32",),
                                                          {"x": (-1.0, 1.0)})
    assert got[0].tolerances == ((0.001, 0.001),) and got[0].standard is None
    assert second.attrs == {"alpha": 0.5} and second.ranges == {"x": (0.0, 3.0)}
    results = run_case_file(OP, path)
    assert [r.passed for r in results] == [True, True]


@pytest.mark.parametrize("op", ["gelu", "softmax", "layer_normalization", "grid_sample",
                                "fused_conv_bn_relu"])
def test_every_shipped_operators_cases_round_trip(op: str) -> None:
    spec = find_operator(op).spec
    got = parse_cases(spec, cases_csv(spec, standard="cosine:0.001"))
    assert [f.case for f in got] == build_cases(spec)
    assert {f.standard for f in got} == {"cosine:0.001"}


def test_several_inputs_one_dtype_and_an_absent_optional_input() -> None:
    spec = find_operator("layer_normalization").spec
    text = ("testcase_name,op_name,input_shapes,input_dtypes,output_shapes,output_dtypes,"
            "attributes\n"
            'ln_01,layer_normalization,"((2, 3, 40), (40,), None)","(\'float16\',)",'
            '"((2, 3, 40), (2, 3, 1), (2, 3, 1))","(\'float16\', \'float32\', \'float32\')",'
            '"{\'axis\': -1}"\n')
    case = parse_cases(spec, text)[0].case
    assert case.dtypes == ("float16", "float16", None)
    assert case.shapes == ((2, 3, 40), (40,), None) and case.attrs == {"axis": -1}
    bad = text.replace("(40,), None)", "None, None)")
    with pytest.raises(CaseFileError, match=r"case 'ln_01', field 'input_shapes': expected "
                       r"a shape for the required input 'Scale'"):
        parse_cases(spec, bad)


def test_the_documented_basic_example_imports(info) -> None:
    """The kernel guide's basic example: a flat output shape and no quoting of {}."""
    text = ("testcase_name,op_name,input_shapes,input_dtypes,output_shapes,output_dtypes,"
            "attributes\n"
            'thresholded_relu_01,thresholded_relu,"((128,1024),)","(\'float32\',)",'
            '"(128,1024)","(\'float32\',)",\n')
    case = parse_cases(info.spec, text)[0].case
    assert case.shapes == ((128, 1024),) and case.attrs == {}


def test_an_unknown_column_is_refused(info) -> None:
    text = _one_row(input_data_range="((0, 1),)")
    with pytest.raises(CaseFileError, match=r"x\.csv: unknown column\(s\) "
                       r"\['input_data_range'\].*fix the spelling"):
        parse_cases(info.spec, text, "x.csv")


def test_an_empty_range_is_the_tools_default(info) -> None:
    text = HEADER.split(",input_formats")[0] + ",output_shapes,output_dtypes\n" \
        'a,,thresholded_relu,"((3,),)","(\'float32\',)","((3,),)","(\'float32\',)"\n'
    assert parse_cases(info.spec, text)[0].case.ranges == {"x": (-2.0, 2.0)}


def _one_row(**cells: str) -> str:
    row = {"testcase_name": "bad_01", "op_name": OP, "input_shapes": "((2, 3),)",
           "input_dtypes": "('float32',)", "output_shapes": "((2, 3),)",
           "output_dtypes": "('float32',)", **cells}
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(row), lineterminator="\n")
    w.writeheader()
    w.writerow(row)
    return buf.getvalue()


@pytest.mark.parametrize("cells, match", [
    ({"op_name": "relu"}, r"'op_name': expected 'thresholded_relu', got 'relu'"),
    ({"input_shapes": "((2, 3)"}, r"'input_shapes': expected a Python literal"),
    ({"input_shapes": "((2, -3),)"}, r"'input_shapes': expected a shape of non-neg"),
    ({"input_shapes": "((2, 3), (3,))"}, r"'input_shapes': expected 1 entries, one per input"),
    ({"input_dtypes": "('int8',)"}, r"'input_dtypes': expected one of the spec's combin"),
    ({"attributes": "{'beta': 1.0}"}, r"'attributes': expected names among \['alpha'\]"),
    ({"attributes": "{'alpha': 'high'}"}, r"'attributes': expected values spec.py accepts"),
    ({"output_shapes": "((3, 2),)"}, r"'output_shapes': expected \(2, 3\) for output 'y'"),
    ({"output_dtypes": "('float16',)"}, r"'output_dtypes': expected 'float32' for output"),
    ({"input_data_ranges": "((1, -1),)"}, r"'input_data_ranges': expected \(min, max\) with"),
    ({"input_data_ranges": "((-1e400, 1e400),)"}, r"'input_data_ranges': expected \(min, max\) "
     r"within float32's range \[-3.40282e\+38, 3.40282e\+38\] for input 'x'"),
    ({"precision_tolerances": "(0.001,)"}, r"'precision_tolerances': expected one \(rtol"),
    ({"remark": "opsdk: standard=nearly"}, r"'remark': expected standard= an opsdk standard"),
    ({"remark": "opsdk: layout=diagonal"}, r"'remark': expected layout one of contiguous"),
    ({"input_dtypes": ""}, r"'input_dtypes': expected a value \(a required field"),
])
def test_malformed_rows_are_refused_naming_the_case_and_field(info, cells: dict[str, str],
                                                              match: str) -> None:
    with pytest.raises(CaseFileError, match=r"bad\.csv: line 2, case 'bad_01', field " + match):
        parse_cases(info.spec, _one_row(**cells), "bad.csv")


def test_a_case_file_that_is_not_utf8_is_refused_naming_the_file_and_byte(
        info, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "latin.csv"
    path.write_bytes(_one_row(remark="caf\xe9").encode("latin-1"))
    with pytest.raises(CaseFileError, match=r"case file .*latin\.csv: byte \d+ \(0xe9\) is not "
                       r"UTF-8 \(invalid continuation byte\); save the file as UTF-8"):
        import_cases(info.spec, path)
    assert main(["test", OP, "--cases", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("opsdk test: error: case file ") and err.count("\n") == 1


def test_a_file_without_the_required_columns_is_refused(info) -> None:
    with pytest.raises(CaseFileError, match=r"t\.csv: the header lacks the required field"
                       r"\(s\) \['input_shapes', 'input_dtypes'"):
        parse_cases(info.spec, "testcase_name,op_name,output_shapes,output_dtypes\n", "t.csv")


def test_duplicate_names_and_missing_files_are_refused(info, tmp_path: Path) -> None:
    text = _one_row() + _one_row().splitlines()[1] + "\n"
    with pytest.raises(CaseFileError, match=r"line 3, case 'bad_01', field 'testcase_name': "
                       r"expected a name no other row has"):
        parse_cases(info.spec, text, "dup.csv")
    with pytest.raises(CaseFileError, match=r"none\.csv: cannot read the case file"):
        import_cases(info.spec, tmp_path / "none.csv")


def test_cli_exports_runs_and_refuses_to_overwrite(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t.csv"
    assert main(["test", OP, "--export-cases", str(out), "--standard", "exact"]) == 0
    assert "wrote 40 cases of ThresholdedRelu" in capsys.readouterr().out
    before = out.read_text()
    assert main(["test", OP, "--export-cases", str(out)]) != 0
    assert "exists; pass --force" in capsys.readouterr().err and out.read_text() == before
    assert main(["test", OP, "--cases", str(out), "--report", str(tmp_path / "r.json")]) == 0
    printed = capsys.readouterr().out
    assert "40 passed, 0 failed" in printed and (tmp_path / "r.json").is_file()
    assert main(["test", OP, "--cases", str(out), "-k", "float16"]) != 0
    assert "-k float16: pytest arguments do not apply to --cases" in capsys.readouterr().err
    assert main(["test", OP, "--cases", str(out), "--timeout", "5"]) != 0
    assert "--timeout cannot go with --cases" in capsys.readouterr().err


def test_cli_reports_a_failing_case_and_exits_nonzero(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "f.csv"
    spec = find_operator(OP).spec
    cases = [c for c in build_cases(spec) if c.id == "float32-small"]
    path.write_text(cases_csv(spec, cases, standard="exact"))
    assert main(["test", OP, "--cases", str(path), "--precision-mode", "force_fp16"]) == 1
    assert "ThresholdedRelu [float32-small] on cpu FAILED" in capsys.readouterr().out


def test_the_modules_examples_run() -> None:
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 8 and result.failed == 0
