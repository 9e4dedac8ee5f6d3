"""reduce_window (sum/max/min pooling): XLA against the reference, gradients, vmap."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import lax
from ember.test_util import check_grads

from .util import assert_close

rng = np.random.default_rng(0)
X = rng.normal(size=(2, 7, 6)).astype(np.float32)

CONFIGS = {
    "pool_2x2": {"window_dimensions": (1, 2, 2), "window_strides": (1, 2, 2), "padding": "VALID"},
    "same_3x3": {"window_dimensions": (1, 3, 3), "window_strides": (1, 1, 1), "padding": "SAME"},
    "dilated": {
        "window_dimensions": (1, 2, 3),
        "window_strides": (1, 2, 1),
        "padding": ((0, 0), (1, 2), (0, 1)),
        "base_dilation": (1, 2, 1),
        "window_dilation": (1, 1, 2),
    },
}
MONOIDS = {"add": (lax.add, 0.0), "max": (lax.max, -np.inf), "min": (lax.min, np.inf)}


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("monoid", sorted(MONOIDS))
def test_against_reference_and_gradients(monoid, config):
    computation, init = MONOIDS[monoid]
    if monoid != "add" and config == "dilated":
        pytest.skip("some windows see only padding there: their max is -inf")

    def pool(v):
        return lax.reduce_window(v, init, computation, **CONFIGS[config])

    here = ember.jit(pool)(X)
    there = ember.jit(pool, device=ember.devices("reference")[0])(X)
    assert_close(here, there, rtol=1e-6, atol=1e-6)
    check_grads(pool, (X,), order=1, atol=5e-2, rtol=5e-2)


def test_average_and_max_pooling_against_numpy():
    avg = lax.reduce_window(X, 0.0, lax.add, (1, 2, 2), (1, 2, 2), "VALID") / 4
    assert_close(avg, X[:, :6, :6].reshape(2, 3, 2, 3, 2).mean(axis=(2, 4)), rtol=1e-6)
    top = lax.reduce_window(X, -np.inf, lax.max, (1, 2, 2), (1, 2, 2), "VALID")
    assert_close(top, X[:, :6, :6].reshape(2, 3, 2, 3, 2).max(axis=(2, 4)))
    assert ember.vmap(lambda v: lax.reduce_window(v, -np.inf, lax.max, (2, 2), (2, 2), "VALID"))(
        X
    ).shape == (2, 3, 3)
    # the gradient of a global max is one-hot at the argmax
    grad = ember.grad(
        lambda v: lax.reduce_window(v, -np.inf, lax.max, (7, 6), (1, 1), "VALID").sum()
    )
    g = np.asarray(grad(X[0]))
    assert g.sum() == 1.0 and g.reshape(-1)[np.argmax(X[0])] == 1.0
