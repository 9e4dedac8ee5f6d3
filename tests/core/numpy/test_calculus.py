"""diff against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from tests.core.util import assert_matches_numpy

X = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)

CASES = {
    "diff": lambda m: m.diff(X, n=2, axis=1),
    "diff_prepend": lambda m: m.diff(X, prepend=0.0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy(name):
    assert_matches_numpy(CASES[name])
