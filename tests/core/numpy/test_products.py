"""kron and convolve (every mode) against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from tests.core.util import assert_matches_numpy

rng = np.random.default_rng(0)
X = rng.normal(size=(4, 5)).astype(np.float32)
Y = rng.normal(size=(4, 5)).astype(np.float32)
SIGNAL, KERNEL = np.arange(5.0), np.array([1.0, 0.5, 2.0])

CASES = {
    "convolve_full": lambda m: m.convolve(SIGNAL, KERNEL),
    "convolve_same": lambda m: m.convolve(SIGNAL, KERNEL, "same"),
    "convolve_valid": lambda m: m.convolve(SIGNAL, KERNEL, "valid"),
}
# These compare without equal_nan: none of their answers may be NaN.
STRICT_CASES = {
    "kron": lambda m: m.kron(X[:2, :2], Y[:3, :2]),
    "kron_1d": lambda m: m.kron(np.arange(3), np.arange(2)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy(name):
    assert_matches_numpy(CASES[name])


@pytest.mark.parametrize("name", sorted(STRICT_CASES))
def test_kron_matches_numpy(name):
    assert_matches_numpy(STRICT_CASES[name], equal_nan=False)
