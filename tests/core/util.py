"""Helpers shared by the core suites: finite differences and NumPy comparisons."""

from __future__ import annotations

import numpy as np


def numerical_gradient(f, args, argnum=0, eps=1e-3):
    """Central finite differences of the scalar function ``f`` in float64."""
    args = [np.asarray(a, np.float64) for a in args]
    x = args[argnum]
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        plus = [a.copy() for a in args]
        minus = [a.copy() for a in args]
        plus[argnum][index] += eps
        minus[argnum][index] -= eps
        grad[index] = (float(f(*plus)) - float(f(*minus))) / (2 * eps)
    return grad


def assert_close(actual, expected, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=rtol, atol=atol)
