"""Errors and warnings of the Ascend wing, exported from :mod:`opsdk.ascend`.

A fact of the wing's bottom floor: it imports only :mod:`opsdk.errors`.

Example:
    >>> from opsdk.ascend import CannArgError
    >>> issubclass(CannArgError, ValueError)
    True
"""

from __future__ import annotations

from ..errors import OpsdkError, OpsdkWarning, SpecError

__all__ = ["CannArgError", "AippError", "PackageClash", "ProjectExists", "HeadersUnavailable",
           "GenerateRefused", "AscendcModelWarning", "KernelFileError"]


class CannArgError(ValueError, OpsdkError):
    """An argument of `opsdk cann` / `opsdk atc` is not one CANN accepts."""


class AippError(CannArgError):
    """A declaration AIPP cannot run as written; the message names the cfg field."""


class PackageClash(CannArgError):
    """Two operators, or two packages, would take the same name on the host."""


class ProjectExists(FileExistsError, OpsdkError):
    """The output folder holds files that opsdk may not overwrite."""


class HeadersUnavailable(RuntimeError, OpsdkError):
    """No CANN headers could be found or fetched."""


class GenerateRefused(SpecError):
    """The decomposition is outside what the generator handles; the message says why."""


class AscendcModelWarning(OpsdkWarning):
    """A kernel passed the model with a finding that is benign on the chip (e.g. two blocks
    writing the same bytes with the same values)."""


class KernelFileError(OpsdkError):
    """A kernel file or its arguments cannot run on the model (names the entry, the parameter,
    expected vs actual and the fix)."""
