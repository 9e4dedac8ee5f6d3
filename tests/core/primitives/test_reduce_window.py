"""reduce_window (sum/max/min pooling): XLA against the reference, gradients, vmap."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import lax
from ember.test_util import check_grads
from tests.core.util import assert_close

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


def _numpy_windows(x, init, combine, window, strides, padding, base_dilation, window_dilation):
    """A direct loop over XLA's definition: dilate, pad with init, fold each window."""
    shape = [(n - 1) * bd + 1 for n, bd in zip(x.shape, base_dilation)]
    dilated = np.full(shape, init, x.dtype)
    dilated[tuple(slice(None, None, bd) for bd in base_dilation)] = x
    padded = np.pad(dilated, padding, constant_values=init)
    spans = [(k - 1) * wd + 1 for k, wd in zip(window, window_dilation)]
    out_shape = [(n - s) // st + 1 for n, s, st in zip(padded.shape, spans, strides)]
    out = np.empty(out_shape, x.dtype)
    for index in np.ndindex(*out_shape):
        acc = np.asarray(init, x.dtype)
        for offset in np.ndindex(*window):
            where = tuple(i * st + o * wd for i, st, o, wd in
                          zip(index, strides, offset, window_dilation))  # fmt: skip
            acc = combine(acc, padded[where])
        out[index] = acc
    return out


def test_generic_computations_against_a_numpy_loop():
    cfg = CONFIGS["dilated"]
    padding = cfg["padding"]
    args = (cfg["window_dimensions"], cfg["window_strides"], padding)
    dil = (cfg["base_dilation"], cfg["window_dilation"])
    got = lax.reduce_window(X, 1.0, lax.mul, *args, *dil)
    assert_close(got, _numpy_windows(X, 1.0, np.multiply, *args, *dil), rtol=1e-5, atol=1e-6)
    # a computation ember does not recognise takes the same path as any other
    soft = lax.reduce_window(X, 0.0, lambda a, b: lax.add(a, lax.mul(b, b)), *args, *dil)
    assert_close(soft, _numpy_windows(X, 0.0, lambda a, b: a + b * b, *args, *dil), rtol=1e-5)
    ints = (X * 10).astype(np.int32)
    ored = lax.reduce_window(ints, 0, lax.bitwise_or, (1, 2, 2), (1, 1, 1), "SAME")
    padding = ((0, 0), (0, 1), (0, 1))
    want = _numpy_windows(ints, 0, np.bitwise_or, (1, 2, 2), (1, 1, 1), padding, (1,) * 3, (1,) * 3)
    assert_close(ored, want)
    assert_close(ember.jit(lambda v: lax.reduce_window(v, 1.0, lax.mul, *args, *dil))(X), got)


def test_tuple_operands_pool_values_with_their_indices():
    x = X[0]
    index = np.arange(x.size, dtype=np.int32).reshape(x.shape)

    def argmax_pair(a, b):
        take = lax.gt(b[0], a[0])
        return lax.select(take, b[0], a[0]), lax.select(take, b[1], a[1])

    values, where = lax.reduce_window(
        (x, index), (-np.inf, np.int32(-1)), argmax_pair, (2, 2), (2, 2), "VALID"
    )
    blocks = x[:6, :6].reshape(3, 2, 3, 2).transpose(0, 2, 1, 3).reshape(3, 3, 4)
    assert_close(values, blocks.max(-1))
    picked = np.asarray(where)
    assert_close(x.reshape(-1)[picked], blocks.max(-1))
    with pytest.raises(ValueError, match="2 operands but 1 init"):
        lax.reduce_window((x, index), (0.0,), argmax_pair, (2, 2), (2, 2), "VALID")


def test_generic_computations_differentiate_and_batch():
    def window_product(v):
        return lax.reduce_window(v, 1.0, lax.mul, (2, 2), (1, 1), "SAME")

    check_grads(window_product, (X[0],), order=2, atol=5e-2, rtol=5e-2)
    batched = ember.vmap(window_product)(X)
    assert_close(batched, np.stack([np.asarray(window_product(x)) for x in X]), rtol=1e-6)
    with pytest.raises(TypeError, match="init value"):
        lax.reduce_window(X, np.ones(2, np.float32), lax.mul, (1, 2, 2), (1, 1, 1), "VALID")
