"""NumPy reference of ThresholdedRelu."""

import numpy as np


def reference(x: np.ndarray, *, alpha: float = 1.0) -> np.ndarray:
    """y = x where x > alpha else 0, computed in the input's dtype."""
    return np.where(x > alpha, x, np.zeros_like(x))
