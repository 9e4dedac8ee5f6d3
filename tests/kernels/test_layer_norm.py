"""examples/kernels/layer_norm.py: the forward and backward kernels against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from tests.kernels.examples import load

layer_norm = load("layer_norm")


def _numpy_layer_norm(x, w, b, eps=1e-5):
    x = x.astype(np.float64)
    mean = x.mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=-1, keepdims=True) + eps) * w + b


def _numpy_layer_norm_grads(x, w, b, dy, eps=1e-5):
    """The gradients of sum(dy * layer_norm(x)) by hand, in float64."""
    x, dy = x.astype(np.float64), dy.astype(np.float64)
    mean = x.mean(axis=-1, keepdims=True)
    rstd = 1 / np.sqrt(x.var(axis=-1, keepdims=True) + eps)
    x_hat = (x - mean) * rstd
    g = dy * w
    dx = rstd * (g - g.mean(-1, keepdims=True) - x_hat * (g * x_hat).mean(-1, keepdims=True))
    rows = dy.reshape(-1, x.shape[-1])
    return dx, (rows * x_hat.reshape(rows.shape)).sum(0), rows.sum(0)


def _inputs(shape, seed=0):
    rng = np.random.default_rng(seed)
    d = shape[-1]
    x = (rng.normal(size=shape) * 3 + 1).astype(np.float32)
    return x, rng.normal(size=d).astype(np.float32), rng.normal(size=d).astype(np.float32)


@pytest.mark.parametrize(
    "shape, block_rows",
    [((64, 32), 16), ((50, 24), 16), ((3, 7, 40), 8)],  # whole blocks, a padded one, 3-D
)
def test_forward_matches_numpy(shape, block_rows):
    x, w, b = _inputs(shape)
    y = np.asarray(layer_norm.layer_norm(x, w, b, block_rows=block_rows))
    assert y.shape == shape and y.dtype == np.float32
    np.testing.assert_allclose(y, _numpy_layer_norm(x, w, b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape, block_rows", [((64, 32), 16), ((50, 24), 16), ((3, 7, 40), 8)])
def test_gradients_match_numpy(shape, block_rows):
    x, w, b = _inputs(shape, seed=1)
    dy = np.random.default_rng(2).normal(size=shape).astype(np.float32)

    def loss(x, w, b):
        return enp.sum(layer_norm.layer_norm(x, w, b, block_rows=block_rows) * dy)

    dx, dw, db = ember.jit(ember.grad(loss, argnums=(0, 1, 2)))(x, w, b)
    want_dx, want_dw, want_db = _numpy_layer_norm_grads(x, w, b, dy)
    np.testing.assert_allclose(np.asarray(dx), want_dx, rtol=1e-4, atol=1e-5)
    # The padding rows of a partial last block must not reach dw and db.
    np.testing.assert_allclose(np.asarray(dw), want_dw, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(db), want_db, rtol=1e-5, atol=1e-4)


def test_eps_is_used():
    x = np.array([[1.0, -1.0]], np.float32)  # variance 1
    ones, zeros = np.ones(2, np.float32), np.zeros(2, np.float32)
    y = np.asarray(layer_norm.layer_norm(x, ones, zeros, eps=3.0))
    np.testing.assert_allclose(y, [[0.5, -0.5]], rtol=1e-6)


def test_rejects_weights_of_the_wrong_size():
    x, w, b = _inputs((4, 8))
    with pytest.raises(ValueError, match="must both be \\(8,\\)"):
        layer_norm.layer_norm(x, w[:4], b)
