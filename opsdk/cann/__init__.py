"""Deprecated alias of :mod:`opsdk.ascend`, kept for one release.

Everything Ascend now lives in one wing, ``opsdk.ascend`` (``opsdk.ascend.ascendc`` for AI
Core kernels). Importing ``opsdk.cann`` warns and gives the same names.

Example:
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     from opsdk.cann import default_origin_op_type
    >>> from opsdk.ascend import default_origin_op_type as new
    >>> default_origin_op_type is new
    True
"""

import warnings

from opsdk.ascend import *  # noqa: F403
from opsdk.ascend import __all__  # noqa: F401

warnings.warn(
    "opsdk.cann is deprecated and will be removed in the next release; import opsdk.ascend",
    DeprecationWarning,
    stacklevel=2,
)
