"""polyval, roots and polyfit against NumPy: roots in any order, with and without stripping
zeros, its gradient, float64 and complex data."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import errors
from tests.core.util import assert_close, assert_matches_numpy, assert_same_multiset

X = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)

CASES = {
    "polyval": lambda m: m.polyval(np.array([1.0, -2.0, 3.0]), X),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy(name):
    assert_matches_numpy(CASES[name])


@pytest.mark.parametrize(
    "p",
    [
        [1.0, -3.0, 2.0],
        [2.0, 0.0, 0.0, 2.0],  # cube roots of -1
        [0.0, 0.0, 1.0, 2.0, 5.0, 0.0, 0.0],  # leading zeros stripped, trailing give zero roots
        [1.0, -6.0, 11.0, -6.0],
        [1, 0, 4],  # integers
        [3.0],
        [0.0, 0.0],
        [],
    ],
)
def test_roots_matches_numpy(p):
    found = np.asarray(enp.roots(np.array(p)))
    assert found.dtype == np.complex64
    assert_same_multiset(found, np.roots(p), 1e-4)


def test_roots_without_stripping():
    p = np.array([0.0, 1.0, 2.0, 3.0, 0.0], np.float32)
    found = np.asarray(ember.jit(lambda q: enp.roots(q, strip_zeros=False))(p))
    assert found.shape == (4,) and np.isnan(found[-1])  # one leading zero: one undefined root
    assert_same_multiset(found[:-1], np.roots(p), 1e-5)
    assert np.isnan(np.asarray(enp.roots(np.zeros(3), strip_zeros=False))).all()


def test_roots_gradient():
    # a simple root r of p moves by dr/dp_i = -r^(n-1-i) / p'(r)
    p = np.array([1.0, -3.0, 2.0], np.float32)
    largest = ember.jit(ember.grad(lambda q: enp.max(enp.real(enp.roots(q, strip_zeros=False)))))
    assert_close(largest(p), [-4.0, -2.0, -1.0], rtol=1e-4)


def test_roots_errors():
    with pytest.raises(errors.ConcretizationTypeError, match="strip_zeros=False"):
        ember.jit(enp.roots)(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="vector"):
        enp.roots(np.ones((2, 2)))


def test_polyfit_of_complex_data_matches_numpy():
    # the solve must use u^H (u^T gave wrong coefficients) and residuals are real
    x = np.arange(5.0) + 1j * np.array([0, 1, 0, -1, 2.0])
    y = np.array([1, 2, 5, 10, 3.0]) + 1j * np.arange(5)
    with ember.config.option("enable_x64", True):
        got = enp.polyfit(x, y, 2, full=True)
        want = np.polyfit(x, y, 2, full=True)
        for g, w in zip(got[:4], want[:4]):
            assert_close(g, w, rtol=1e-9, atol=1e-12)
        assert np.asarray(got[1]).dtype == np.float64
        assert np.asarray(got[2]).dtype == np.int64  # JAX's rank dtype under x64
        assert np.asarray(enp.linalg.lstsq(x[:, None], y)[2]).dtype == np.int64
