"""quantile, percentile and median against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from tests.core.util import assert_matches_numpy

X = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)

CASES = {
    "quantile": lambda m: m.quantile(X, 0.3, axis=1),
    "quantile_vector": lambda m: m.quantile(X, np.array([0.1, 0.9]), axis=0),
    "percentile": lambda m: m.percentile(X, 75),
    "median": lambda m: m.median(X, axis=0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy(name):
    assert_matches_numpy(CASES[name])
