"""Deprecated alias of :mod:`opsdk.ascend.ascendc`, kept for one release."""

import warnings

from opsdk.ascend.ascendc import *  # noqa: F403
from opsdk.ascend.ascendc import __all__  # noqa: F401

warnings.warn(
    "opsdk.cann.ascendc is deprecated and will be removed in the next release; import "
    "opsdk.ascend.ascendc",
    DeprecationWarning,
    stacklevel=2,
)
