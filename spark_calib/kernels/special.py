"""erf and erfc over arrays (NumPy has none; the math module's are exact to a few ulp)."""

from __future__ import annotations

import math

import numpy as np


def erf(x: np.ndarray) -> np.ndarray:
    """math.erf elementwise; NaN stays NaN."""
    values = np.asarray(x, dtype=float)
    return np.array([math.erf(v) for v in values.ravel()], dtype=float).reshape(values.shape)


def erfc(x: np.ndarray) -> np.ndarray:
    """math.erfc elementwise; NaN stays NaN."""
    values = np.asarray(x, dtype=float)
    return np.array([math.erfc(v) for v in values.ravel()], dtype=float).reshape(values.shape)
