"""Collectives over a named vmap axis: values, nesting, differentiation, errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import lax
from tests.core.util import assert_close, numerical_gradient

X = np.arange(6.0, dtype=np.float32).reshape(3, 2)


def over_i(fn, *args, **kwargs):
    return ember.vmap(fn, axis_name="i", **kwargs)(*args)


def test_reductions():
    assert_close(over_i(lambda v: lax.psum(v, "i"), X), np.broadcast_to(X.sum(0), X.shape))
    assert_close(over_i(lambda v: lax.pmean(v, "i"), X), np.broadcast_to(X.mean(0), X.shape))
    assert_close(over_i(lambda v: lax.pmax(v, "i"), X), np.broadcast_to(X.max(0), X.shape))
    assert_close(over_i(lambda v: lax.pmin(v, "i"), X), np.broadcast_to(X.min(0), X.shape))
    # an unbatched operand is the same on every member
    assert_close(over_i(lambda v: lax.psum(2.0, "i") + 0 * v, X), np.full(X.shape, 6.0))


def test_axis_index_and_size():
    assert_close(over_i(lambda v: lax.axis_index("i"), X), [0, 1, 2])
    assert over_i(lambda v: v * 0 + lax.axis_size("i"), X)[0, 0] == 3


def test_all_gather_and_psum_scatter():
    gathered = over_i(lambda v: lax.all_gather(v, "i"), X)
    assert gathered.shape == (3, 3, 2)
    assert_close(gathered[1], X)
    assert_close(over_i(lambda v: lax.all_gather(v, "i", tiled=True), X)[2], X.reshape(-1))
    assert_close(over_i(lambda v: lax.all_gather(v, "i", axis=1), X)[0], X.T)
    ones = np.ones((3, 3), np.float32)
    assert_close(over_i(lambda v: lax.psum_scatter(v, "i"), ones), [3.0, 3.0, 3.0])
    tiled = over_i(lambda v: lax.psum_scatter(v, "i", tiled=True), np.ones((3, 6), np.float32))
    assert tiled.shape == (3, 2)


def test_nested_axes_and_jit():
    y = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    both = ember.vmap(ember.vmap(lambda v: lax.psum(v, ("i", "j")), axis_name="j"), axis_name="i")
    assert_close(both(y), np.full((3, 4), y.sum()))
    outer = ember.vmap(ember.vmap(lambda v: lax.psum(v, "i"), axis_name="j"), axis_name="i")
    assert_close(outer(y), np.broadcast_to(y.sum(0), y.shape))
    centred = ember.jit(ember.vmap(lambda v: v - lax.pmean(v, "i"), axis_name="i"))(X)
    assert_close(centred, X - X.mean(0))


def test_gradients_through_collectives():
    def f(x):
        return ember.vmap(lambda v: ((v / lax.psum(v, "i")).sum()) ** 2, axis_name="i")(x).sum()

    def f_np(x):
        return sum((v / x.sum(0)).sum() ** 2 for v in x)

    assert_close(ember.grad(f)(X + 1), numerical_gradient(f_np, [X + 1]), rtol=1e-3, atol=1e-4)

    def g(x):
        return ember.vmap(lambda v: (lax.all_gather(v, "i") ** 2).sum(), axis_name="i")(x).sum()

    assert_close(ember.grad(g)(X), 6 * X)


def test_unbound_axis_name_is_reported_at_the_users_line():
    with pytest.raises(ember.errors.UnboundAxisError, match=r"'k'.*test_collectives.py"):
        lax.psum(1.0, "k")
    with pytest.raises(NameError, match="axis names in scope: 'i'"):
        over_i(lambda v: lax.psum(v, "j"), X)
