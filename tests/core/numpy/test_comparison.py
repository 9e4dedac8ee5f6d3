"""isclose, allclose and array_equal (and array_equiv) against NumPy, with NaNs and mixed
dtypes."""

from __future__ import annotations

import numpy as np
import pytest

import ember.numpy as enp
from tests.core.util import assert_matches_numpy

X = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
XN = X.copy()
XN[0, 1] = np.nan
XN[2, :] = np.nan

CASES = {
    "isclose": lambda m: m.isclose(X, X + 1e-7),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy(name):
    assert_matches_numpy(CASES[name])


def test_whole_array_comparisons():
    assert bool(enp.allclose(X, X + 1e-9))
    assert bool(enp.array_equal(X, X)) and not bool(enp.array_equal(X, X[:2]))
    assert bool(enp.array_equal(XN, XN, equal_nan=True)) and not bool(enp.array_equal(XN, XN))


# Mixed dtypes: the comparison helpers promote (complex with float, int with float, bool) as
# JAX does; the answers below are JAX's.
_C = np.array([1 + 0j, np.inf + 0j, complex(np.nan, 1), complex(1, -np.inf)], np.complex64)


def test_closeness_and_equality_helpers_promote_mixed_dtypes():
    assert bool(enp.allclose(enp.array([1 + 0j]), enp.array([1.0])))
    assert not bool(enp.allclose(enp.array([1 + 1e-3j]), enp.array([1.0])))
    got = enp.isclose(_C, np.array([1.0, np.inf, np.nan, 1.0], np.float32), equal_nan=True)
    np.testing.assert_array_equal(np.asarray(got), [True, True, True, False])
    np.testing.assert_array_equal(
        np.asarray(enp.isclose(enp.array([1, 2]), enp.array([1.0, 2.00001]))), [True, True]
    )
    np.testing.assert_array_equal(
        np.asarray(enp.isclose(enp.array([True, False]), enp.array([1.0, 0.5]))), [True, False]
    )
    assert bool(enp.array_equal(enp.array([1, 2]), enp.array([1.0, 2.0])))
    assert bool(
        enp.array_equal(enp.array([1 + 0j, np.nan]), enp.array([1.0, np.nan]), equal_nan=True)
    )
    assert bool(enp.array_equal(enp.array([True, False]), enp.array([1, 0])))
    assert bool(enp.array_equiv(enp.array([1 + 0j]), enp.array([[1], [1.0]])))
