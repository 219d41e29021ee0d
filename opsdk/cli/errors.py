"""Errors of the ``opsdk`` command's own checks, exported from :mod:`opsdk.cli`.

Example:
    >>> from opsdk.cli import OutputPathError
    >>> issubclass(OutputPathError, ValueError)
    True
"""

from __future__ import annotations

from ..errors import OpsdkError

__all__ = ["OutputPathError", "IsolationArgError", "CaseFileArgError"]


class OutputPathError(ValueError, OpsdkError):
    """An output path given on the command line cannot be written."""


class IsolationArgError(ValueError, OpsdkError):
    """An option that needs a worker process was given with ``--no-isolate``."""


class CaseFileArgError(ValueError, OpsdkError):
    """An option that cannot go with ``--cases`` or ``--export-cases``."""
