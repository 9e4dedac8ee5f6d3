"""ember.scipy.integrate.trapezoid against SciPy, with its gradient."""

from __future__ import annotations

import numpy as np
import scipy.integrate

import ember.numpy as enp
from ember.scipy import integrate
from ember.test_util import check_grads
from tests.core.util import assert_close

RNG = np.random.default_rng(5)


def _close(actual, expected, rtol=1e-4, atol=1e-5):
    assert_close(actual, expected, rtol=rtol, atol=atol)


def test_trapezoid_matches_scipy():
    y = RNG.normal(size=(4, 3)).astype(np.float32)
    x = np.array([0.0, 1.0, 3.0, 4.5], np.float32)
    _close(integrate.trapezoid(y, x, axis=0), scipy.integrate.trapezoid(y, x, axis=0))
    _close(integrate.trapezoid(y, dx=0.5), scipy.integrate.trapezoid(y, dx=0.5))
    _close(integrate.trapezoid(y.T, y.T), scipy.integrate.trapezoid(y.T, y.T))
    assert integrate.trapezoid(np.arange(4)).dtype == enp.float32
    check_grads(lambda y, x: integrate.trapezoid(y, x, axis=0), (y, x), order=1)
