"""unique, isin (every method), union1d, intersect1d and setdiff1d against NumPy, and the
static sizes they need under jit (with cumulative_sum's include_initial)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from tests.core.util import assert_matches_numpy

rng = np.random.default_rng(0)
X = rng.normal(size=(4, 5)).astype(np.float32)
A = np.array([5, 1, 3, 3, 7])
B = np.array([3, 4, 5, 9])
U = np.array([3, 1, 2, 3, 1, 5])

CASES = {
    "unique": lambda m: m.unique(U),
}
# These compare without equal_nan: none of their answers may be NaN.
STRICT_CASES = {
    "isin": lambda m: m.isin(A, B),
    "union1d": lambda m: m.union1d(A, B),
    "intersect1d": lambda m: m.intersect1d(A, B),
    "setdiff1d": lambda m: m.setdiff1d(A, B),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy(name):
    assert_matches_numpy(CASES[name])


@pytest.mark.parametrize("name", sorted(STRICT_CASES))
def test_set_operations_match_numpy(name):
    assert_matches_numpy(STRICT_CASES[name], equal_nan=False)


def test_cumulative_sum_and_static_sizes():
    got = enp.cumulative_sum(X, axis=1, include_initial=True)
    expected = np.concatenate([np.zeros((4, 1)), np.cumsum(X, 1)], 1)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5, atol=1e-5)
    inter = ember.jit(lambda a, b: enp.intersect1d(a, b, size=4, fill_value=-1))(A, B)
    np.testing.assert_array_equal(np.asarray(inter), [3, 5, -1, -1])
    diff = ember.jit(lambda a, b: enp.setdiff1d(a, b, size=3, fill_value=0))(A, B)
    np.testing.assert_array_equal(np.asarray(diff), [1, 7, 0])
    union = ember.jit(lambda a, b: enp.union1d(a, b, size=8, fill_value=0))(A, B)
    np.testing.assert_array_equal(np.asarray(union), [1, 3, 4, 5, 7, 9, 0, 0])
    with pytest.raises(ember.errors.ConcretizationTypeError, match="size="):
        ember.jit(enp.intersect1d)(A, B)


_RNG = np.random.default_rng(7)
_ISIN_CASES = [
    (_RNG.integers(0, 50, (4, 5)), _RNG.integers(0, 50, 30)),
    (np.array([np.nan, 0.0, -0.0, 1.5, np.inf]), np.array([0.0, np.nan, np.inf, 2.0])),
    (np.array([1 + 2j, 3j, 1 - 2j]), np.array([3j, 1 + 2j])),
    (np.array([True, False]), np.array([True])),
    (np.arange(5, dtype=np.uint8), np.array([3, 250], np.uint8)),
    (np.arange(3), np.array([], np.int32)),
    (np.array([], np.float32), np.arange(3.0)),
    (np.arange(6).reshape(2, 3), 4),
    (np.arange(3), np.array([1.0, 2.5])),
    # more pairs than "auto" compares: it sorts and searches instead
    (_RNG.integers(0, 2000, (40, 50)), _RNG.integers(0, 2000, 300)),
]


@pytest.mark.parametrize("method", ["auto", "compare_all", "binary_search", "sort"])
@pytest.mark.parametrize("case", range(len(_ISIN_CASES)))
def test_isin_methods_match_numpy(method, case):
    a, b = _ISIN_CASES[case]
    for invert in (False, True):
        expected = np.isin(a, b, invert=invert)
        got = enp.isin(a, b, invert=invert, method=method)
        assert got.dtype == np.bool_ and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)
        jitted = ember.jit(lambda x, y, inv=invert: enp.isin(x, y, invert=inv, method=method))
        np.testing.assert_array_equal(jitted(a, b), expected)


def test_isin_rejects_unknown_method():
    with pytest.raises(ValueError, match="method must be one of"):
        enp.isin(np.arange(3), np.arange(2), method="hash")
