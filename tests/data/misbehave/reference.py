"""y = x."""

import numpy as np


def reference(x):  # type: ignore[no-untyped-def]
    return np.array(x, copy=True)
