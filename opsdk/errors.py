"""One exception hierarchy for opsdk.

Every error derives from :class:`OpsdkError`, and most also derive from the builtin
a caller would expect, so ``except ValueError`` keeps working.

Errors of one wing live in that wing's errors module (``opsdk.onnx.errors``,
``opsdk.ascend.errors``, ``opsdk.triton._errors``, ``opsdk.cli.errors``,
``opsdk.torch.errors``) and are exported from its face; warnings derive from
:class:`OpsdkWarning`. ``tests/test_errors_tree.py`` enforces both.

Example:
    >>> from opsdk.errors import OpsdkError, SpecError
    >>> issubclass(SpecError, ValueError) and issubclass(SpecError, OpsdkError)
    True
"""

from __future__ import annotations

__all__ = [
    "OpsdkError",
    "TextFileError",
    "ChannelJunk",
    "SpecError",
    "ScaffoldError",
    "BuildError",
    "KernelError",
    "KernelCrash",
    "RegistrationMismatch",
    "ValidationError",
    "OperatorNotFound",
    "DeviceUnavailable",
    "ManifestError",
    "UnsafePath",
    "OutputExistsError",
    "FetchError",
    "CrossTargetError",
    "CaseFileError",
    "PreprocessError",
    "SysrootError",
    "OpsdkWarning",
]


class OpsdkError(Exception):
    """Base class of every error opsdk raises."""


class SpecError(ValueError, OpsdkError):
    """An operator spec, or a call's inputs/attributes, disagree with the spec."""


class ScaffoldError(ValueError, OpsdkError):
    """`opsdk new` was given an invalid name or a target that already exists."""


class BuildError(RuntimeError, OpsdkError):
    """Compiling or linking an operator's kernel failed."""


class KernelError(RuntimeError, OpsdkError):
    """A C++ kernel threw an exception while running."""


class KernelCrash(KernelError):
    """A kernel run in a worker process crashed (a signal), hit a sanitizer error, wrote
    outside its outputs or ran past its time limit; the worker is gone, the caller is not."""


class RegistrationMismatch(SpecError):
    """The C++ REGISTER_CUSTOM_OP registration disagrees with spec.py."""


class ValidationError(AssertionError, OpsdkError):
    """A kernel's output did not meet its precision standard or another check."""

    def __init__(self, message: str, report: object | None = None) -> None:
        super().__init__(message)
        self.report = report


class OperatorNotFound(LookupError, OpsdkError):
    """No operator folder or installed operator wheel defines the requested op."""


class DeviceUnavailable(RuntimeError, OpsdkError):
    """The requested device (npu, triton, ...) is not available on this host."""


class ManifestError(RuntimeError, OpsdkError):
    """An installed operator package was built for a different environment."""


class UnsafePath(ValueError, OpsdkError):
    """A path leaves the folder opsdk was given, or goes through a symlink."""


class OutputExistsError(FileExistsError, OpsdkError):
    """The output file exists and ``--force`` (``force=True``) was not given."""


class FetchError(RuntimeError, OpsdkError):
    """The wheel could not be downloaded (registry unreachable, no such version, ...)."""


class CrossTargetError(ValueError, OpsdkError):
    """An unknown machine target."""


class CaseFileError(ValueError, OpsdkError):
    """A case file opsdk cannot read: names the file, row, case, field and the fix."""


class PreprocessError(SpecError):
    """A preprocessing declaration or image that cannot work; the message names the field."""


class SysrootError(BuildError):
    """The target's Debian packages cannot be had here."""


class OpsdkWarning(UserWarning):
    """Base class of every warning opsdk gives (``-W error::opsdk.errors.OpsdkWarning``)."""


class TextFileError(ValueError, OpsdkError):
    """A text file a user wrote cannot be read (missing, a folder, or not UTF-8)."""


class ChannelJunk(OSError, OpsdkError):
    """Bytes on a worker's channel that are no message of the worker: its kernel wrote to a
    file descriptor it does not own (the channel's socket)."""

    def __init__(self, junk: bytes) -> None:
        super().__init__(f"{len(junk)} bytes that are no message: {junk[:40]!r}")
        self.junk = junk
