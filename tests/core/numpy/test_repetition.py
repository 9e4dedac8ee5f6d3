"""tile, repeat and roll against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import ember.numpy as enp
from tests.core.util import assert_matches_numpy

X = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)

CASES = {
    "tile": lambda m: m.tile(X, (2, 1, 3)),
    "repeat": lambda m: m.repeat(X, 2, axis=1),
    "repeat_counts": lambda m: m.repeat(X, [1, 0, 2], axis=0),
    "roll": lambda m: m.roll(X, 2, axis=1),
    "roll_flat": lambda m: m.roll(X, -5),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy(name):
    assert_matches_numpy(CASES[name])


def test_negative_repeats_and_reps_are_value_errors():
    """NumPy refuses them; ember used to hand XLA a negative dimension (a compile error)."""
    with pytest.raises(ValueError, match="repeats may not be negative, got -1"):
        enp.repeat(enp.ones(3), -1)
    with pytest.raises(ValueError, match="repeats may not contain negative values"):
        enp.repeat(enp.ones(3), np.array([1, -1, 2]))
    with pytest.raises(ValueError, match=r"tile: reps may not be negative, got \(2, -1\)"):
        enp.tile(enp.ones(3), (2, -1))
    assert enp.tile(enp.ones(3), 0).shape == (0,)
