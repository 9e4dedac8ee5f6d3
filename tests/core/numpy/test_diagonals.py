"""tril and triu against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from tests.core.util import assert_matches_numpy

X = np.random.default_rng(0).normal(size=(4, 5)).astype(np.float32)

CASES = {
    "tril": lambda m: m.tril(X, 1),
    "triu": lambda m: m.triu(X, -1),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy(name):
    assert_matches_numpy(CASES[name], equal_nan=False)
