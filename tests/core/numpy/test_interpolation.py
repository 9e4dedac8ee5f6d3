"""interp against NumPy, and derivatives through interp, median, nansum and a jitted
roll of pad."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from tests.core.util import assert_close, assert_matches_numpy

X = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
XP, FP = np.array([0.0, 1.0, 3.0]), np.array([0.0, 10.0, 30.0])

CASES = {
    "interp": lambda m: m.interp(np.array([-1.0, 0.5, 2.0, 5.0]), XP, FP),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy(name):
    assert_matches_numpy(CASES[name])


def test_gradients_and_jit():
    rolled = ember.jit(lambda v: enp.roll(enp.pad(v, 1, mode="reflect"), 1))(X)
    assert_close(rolled, np.roll(np.pad(X, 1, mode="reflect"), 1))
    g = ember.grad(lambda v: enp.sum(enp.interp(v, XP, FP)))
    assert_close(g(np.array([0.5, 2.0], np.float32)), [10.0, 10.0])
    assert_close(ember.grad(enp.median)(np.array([3.0, 1.0, 2.0], np.float32)), [0, 0, 1])
    # NaN positions get no gradient (the where masks them), as in JAX
    nan_grad = ember.grad(lambda v: enp.nansum(v) * 2.0)(np.array([1.0, np.nan], np.float32))
    assert_close(nan_grad, [2.0, 0.0])
