"""Reference of Probe: only the parts that do not depend on memory addresses."""

import numpy as np


def reference(x, bias=None, *, mode="info", scale=1.0, axes=(0,), flag=False, count=3,
              weights=(0.5,)):
    return np.array([0, x.ndim, 0, x.size, bias is not None, int(flag), count, len(axes)])
