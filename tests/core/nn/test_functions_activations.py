"""The rest of jax.nn's activations against NumPy formulas, and JAX's derivatives at the
kinks."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.test_util import check_grads
from tests.core.util import assert_close


def _softplus(x):
    return np.logaddexp(x, 0)


NUMPY = {
    "hard_sigmoid": lambda x: np.clip(x + 3, 0, 6) / 6,
    "hard_silu": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "hard_swish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "identity": lambda x: x,
    "mish": lambda x: x * np.tanh(_softplus(x)),
    "soft_sign": lambda x: x / (np.abs(x) + 1),
    "sparse_plus": lambda x: np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4)),
    "sparse_sigmoid": lambda x: np.clip(x + 1, 0, 2) / 2,
    "squareplus": lambda x: (x + np.sqrt(x * x + 4)) / 2,
    "tanh": np.tanh,
}


@pytest.fixture
def points(rng):
    special = [-3.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 3.0, 20.0, -20.0]
    return np.concatenate([rng.normal(size=30) * 3, special]).astype(np.float32)


@pytest.mark.parametrize("name", sorted(NUMPY))
def test_activations_against_numpy(points, name):
    fn = getattr(nn, name)
    want = NUMPY[name](points.astype(np.float64))
    assert_close(fn(points), want, rtol=1e-5, atol=2e-7)
    moderate = np.abs(points) <= 5  # float16 cancels badly in x + sqrt(x*x + b) below that
    half = np.asarray(fn(points.astype(np.float16)))
    assert half.dtype == np.float16
    assert_close(half[moderate], want[moderate], rtol=2e-3, atol=2e-3)
    assert_close(ember.jit(fn)(points), fn(points))
    assert_close(ember.vmap(fn)(points.reshape(5, 8)), fn(points).reshape(5, 8))
    special = np.array([np.inf, -np.inf, np.nan], np.float32)
    with np.errstate(invalid="ignore"):
        expected = NUMPY[name](special.astype(np.float64))
    if name not in ("mish", "squareplus", "hard_silu", "hard_swish"):
        np.testing.assert_array_equal(np.asarray(fn(special)), expected.astype(np.float32))


@pytest.mark.parametrize("name", sorted(set(NUMPY) - {"identity"}))
def test_activation_gradients(rng, name):
    x = rng.uniform(-4, 4, size=6).astype(np.float32)
    x = x[np.all(np.abs(x[:, None] - np.array([-3, -1, 1, 3])) > 0.05, axis=1)]  # off kinks
    check_grads(getattr(nn, name), (x,), order=1, rtol=2e-2)


def test_gradients_at_the_kinks_match_jax():
    x = np.array([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 20.0], np.float32)
    grad_sum = lambda f: ember.grad(lambda v: f(v).sum())(x)
    # Pinned from jax.grad of the same sums.
    assert_close(grad_sum(nn.sparse_plus), [0, 0, 0.25, 0.5, 0.75, 1, 1, 1])
    assert_close(grad_sum(nn.hard_silu), [0, 1 / 6, 1 / 3, 0.5, 2 / 3, 5 / 6, 1, 1])


def test_relu_family_kinks_match_jax():
    """Derivatives at the kinks are JAX's (0 for relu at 0 and relu6 at 0 and 6, 1 for
    hard_tanh at -1 and 1), and NaN passes through."""
    x = np.array([-1.0, 0.0, 1.0, 6.0, -0.0, np.nan], np.float32)
    for fn, want in ((nn.relu, [0, 0, 1, 1, 0, 0]), (nn.relu6, [0, 0, 1, 0, 0, 0]),
                     (nn.hard_tanh, [1, 1, 1, 0, 1, 1])):  # fmt: skip
        assert_close(ember.vmap(ember.grad(fn))(x), want)
        assert np.isnan(np.asarray(fn(x))[-1])
    np.testing.assert_array_equal(np.asarray(nn.relu6(np.array([-2, 3, 9]))), [0, 3, 6])
    check_grads(nn.relu6, (np.array([-1.0, 2.0, 7.0], np.float32),), order=2)


def test_mish_and_log1mexp_match_jax():
    x = np.array([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 20.0], np.float32)
    assert_close(
        nn.mish(x),
        [-0.14564745, -0.30340144, -0.22074378, 0.0, 0.37524524, 0.86509848, 2.98653555, 20.0],
    )
    y = np.array([1e-4, 0.5, 0.7, 1.0, 5.0, 30.0], np.float32)
    want = [-9.21039009, -0.93275213, -0.68634099, -0.45867515, -0.00676075, -9.3576229e-14]
    assert_close(nn.log1mexp(y), want, rtol=1e-6, atol=0)
    # Both branches agree with float64 (where 1 - exp(-y) still holds enough digits).
    want = np.log(-np.expm1(-y[:5].astype(np.float64)))
    assert_close(nn.log1mexp(y[:5]), want, rtol=1e-6, atol=0)
    check_grads(nn.log1mexp, (np.array([0.3, 0.69, 0.7, 4.0], np.float32),), order=1)


def test_squareplus_b_and_identity_of_lists():
    x = np.array([-2.0, 0.0, 2.0], np.float32)
    assert_close(nn.squareplus(x, b=0.5), (x + np.sqrt(x * x + 0.5)) / 2)
    assert_close(nn.identity([1.0, 2.0]), [1.0, 2.0])


@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), (0, True), ((0, 1), False)])
def test_logmeanexp(rng, axis, keepdims):
    x = rng.normal(size=(3, 4)).astype(np.float32) * 4
    x64 = x.astype(np.float64)
    want = np.log(np.mean(np.exp(x64), axis=axis, keepdims=keepdims))
    assert_close(nn.logmeanexp(x, axis=axis, keepdims=keepdims), want, rtol=1e-5)
    where = rng.random((3, 4)) < 0.6
    where[:, 0] = True
    masked = np.where(where, np.exp(x64), 0).sum(axis=axis, keepdims=keepdims)
    count = where.sum(axis=axis, keepdims=keepdims)
    got = nn.logmeanexp(x, axis=axis, where=where, keepdims=keepdims)
    assert_close(got, np.log(masked / count), rtol=1e-5)
    check_grads(lambda v: nn.logmeanexp(v, axis=axis), (x,), order=1)
