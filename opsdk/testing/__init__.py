"""Numerical validation of operators: inputs, precision standards, reports, checks.

The facade of opsdk's testing tools:

* input generation: :func:`generate` (uniform, normal and msopst's distributions),
  :func:`edge_values`, :func:`inject_edges`, :func:`non_contiguous`;
* precision standards as named objects: ``STANDARDS`` (msopst, double-thousandths,
  mere-mare, allclose, exact, and the comparison methods of Huawei's operator tester: ulp,
  cosine, mixed, requant, quant, cross-device), :func:`get_standard` (``"ulp:4"`` sets a
  method's parameter), :func:`standard_for`, :func:`ulp_distance`, :func:`ulp_histogram`;
* :func:`compare`, which reports each rule's verdict (:class:`Check`), and the
  :class:`Report` (HTML with plots, or JSON);
* ATC precision-mode emulation: :class:`PrecisionMode`, :func:`kernel_dtypes`;
* the test matrix of a spec (:func:`build_cases`) and :func:`run_case`;
* case files of Huawei's ops-test-kit: :func:`export_cases`, :func:`import_cases`,
  :func:`run_case_file`;
* :func:`check`, exposed as ``opsdk.check``;
* :func:`validate_cross`: every case through the kernel built for aarch64, under qemu;
* :func:`op_tests`, which an operator's ``test_<op>.py`` calls to get its tests;
* ONNX conformance: :func:`onnx_node_cases` and :func:`run_onnx_case`; ONNX Runtime's
  operator test vectors: :func:`ort_vector_cases` and :func:`run_vector_case`.

Example:
    >>> import numpy as np
    >>> from opsdk.testing import compare, get_standard
    >>> compare(np.float16([1, 2]), np.float16([1, 2]), get_standard("exact")).passed
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..ascend.precision import PRECISION_MODES, PRECISION_MODES_V2, PrecisionMode, kernel_dtypes
from ._case_files import CaseFileError, FileCase, export_cases, import_cases, run_case_file
from ._cases import OpCase, build_cases, case_seed, make_inputs, sample_cases
from ._check import CheckReport, Sample, check
from ._compare import Check, Comparison, Mismatch, compare
from ._conformance import OnnxNodeCase, onnx_node_cases, run_onnx_case
from ._cross import CrossValidation, validate_cross
from ._devices import DEVICES, open_device
from ._generate import DISTRIBUTIONS, edge_values, generate, inject_edges, non_contiguous
from ._methods import (
    PARAMETRISED,
    Cosine,
    CrossDevice,
    Mixed,
    Quant,
    Requant,
    Ulp,
    ulp_distance,
    ulp_histogram,
)
from ._ort_vectors import VectorCase, find_vectors, ort_vector_cases, run_vector_case
from ._report import Report
from ._runner import CaseResult, reference_outputs, run_case
from ._standard_base import tiny
from ._standards import (
    DEFAULT_STANDARD,
    STANDARDS,
    AllClose,
    DoubleThousandths,
    Exact,
    MereMare,
    Msopst,
    Standard,
    Verdict,
    get_standard,
    reads_reference,
    standard_for,
    standard_name,
)


def op_tests(
    test_file: str | Path,
    *,
    folder: str | Path | None = None,
    not_followed: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The pytest test functions of an operator, generated from its spec.

    An operator's ``test_<op>.py`` is ``globals().update(op_tests(__file__))``;
    ``not_followed`` maps ONNX Runtime test vectors the operator deliberately does not
    follow to the reason (run as strict xfails). See
    :mod:`opsdk.testing._optests` and docs/validation.md. (pytest is imported only here.)

    Example:
        >>> from opsdk.testing import op_tests
        >>> globals().update(op_tests(__file__))  # doctest: +SKIP
    """
    from ._optests import op_tests as _op_tests

    return _op_tests(test_file, folder=folder, not_followed=not_followed)


__all__ = [
    "PARAMETRISED",
    "sample_cases",
    "reads_reference",
    "standard_name",
    "tiny",
    "AllClose",
    "Cosine",
    "CrossDevice",
    "Mixed",
    "Quant",
    "Requant",
    "Ulp",
    "ulp_distance",
    "ulp_histogram",
    "CaseFileError",
    "CaseResult",
    "FileCase",
    "export_cases",
    "import_cases",
    "run_case_file",
    "Check",
    "CheckReport",
    "CrossValidation",
    "Comparison",
    "DEFAULT_STANDARD",
    "DEVICES",
    "DISTRIBUTIONS",
    "DoubleThousandths",
    "Exact",
    "MereMare",
    "Mismatch",
    "Msopst",
    "OnnxNodeCase",
    "OpCase",
    "PRECISION_MODES",
    "PRECISION_MODES_V2",
    "PrecisionMode",
    "Report",
    "STANDARDS",
    "Sample",
    "Standard",
    "Verdict",
    "build_cases",
    "case_seed",
    "check",
    "compare",
    "edge_values",
    "generate",
    "get_standard",
    "inject_edges",
    "kernel_dtypes",
    "make_inputs",
    "non_contiguous",
    "onnx_node_cases",
    "op_tests",
    "ort_vector_cases",
    "find_vectors",
    "VectorCase",
    "run_vector_case",
    "open_device",
    "reference_outputs",
    "run_case",
    "run_onnx_case",
    "standard_for",
    "validate_cross",
]
