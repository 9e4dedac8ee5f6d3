"""Array indexing, take/take_along_axis and x.at[...] updates, against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.test_util import check_grads

from .util import assert_close

X = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)

INDICES = [
    (np.array([1, 0]),),
    (slice(None), [2, 0, 1]),
    (slice(None), slice(None), [3, -1]),
    ([0, 1], [2, 0]),
    ([0, 1], slice(None), [2, 3]),
    (Ellipsis, [1, 2]),
    (X > 10,),
    (0, X[0] > 3),
    (slice(None), np.array([[0, 1], [2, 0]])),
    (1, [0, 2], slice(1, 3)),
    ([1], slice(None, None, -1), [0]),
    ([[0], [1]], [[0, 1, 2]]),
]


@pytest.mark.parametrize("index", INDICES, ids=lambda i: str(i)[:40])
def test_getitem_matches_numpy(index):
    got = enp.asarray(X)[index]
    np.testing.assert_array_equal(np.asarray(got), X[index])


def test_traced_indices_under_jit_and_vmap():
    i = np.array([2, 0])
    assert_close(ember.jit(lambda a, i: a[:, i])(X, i), X[:, i])
    assert_close(ember.jit(lambda a, i: a[1, i, :2])(X, i), X[1, i, :2])
    assert_close(ember.vmap(lambda a, k: a[k])(X, np.array([1, 2])), [X[0, 1], X[1, 2]])
    assert_close(ember.jit(lambda a, i: a[i])(X, np.array([-1])), X[[-1]])


@pytest.mark.parametrize(
    "index,method,value",
    [
        ((0, [1, 2]), "set", -1.0),
        ((slice(None), 1), "add", 100.0),
        ((X > 20,), "set", 0.0),
        (([0, 0], [1, 1]), "add", 1.0),  # repeated indices accumulate, as np.add.at
        ((1, slice(None), 0), "multiply", 3.0),
        ((0,), "min", 5.0),
        ((0,), "max", 5.0),
    ],
)
def test_at_updates_match_numpy(index, method, value):
    got = getattr(enp.asarray(X).at[index], method)(value)
    expected = X.copy()
    if method == "set":
        expected[index] = value
    elif method == "add":
        np.add.at(expected, index, value)
    elif method == "multiply":
        expected[index] *= value
    else:
        expected[index] = getattr(np, f"{method}imum")(expected[index], value)
    np.testing.assert_array_equal(np.asarray(got), expected)
    assert enp.asarray(X).at[index].get().shape == X[index].shape


def test_gradients_through_indexing_and_updates():
    g = ember.grad(lambda a: (a[[0, 0, 1], 1] ** 2).sum())(X)
    expected = np.zeros_like(X)
    expected[0, 1] = 4 * X[0, 1]
    expected[1, 1] = 2 * X[1, 1]
    assert_close(g, expected)
    dv = ember.grad(lambda v: (enp.asarray(X).at[0, 0].set(v) * 2).sum())(np.ones(4, np.float32))
    assert_close(dv, [2.0] * 4)
    dx = ember.grad(lambda a: a.at[0, 0].set(0.0).sum())(X)
    assert float(np.asarray(dx)[0, 0].sum()) == 0.0 and float(np.asarray(dx).sum()) == 20.0


def test_take_and_take_along_axis():
    a = enp.asarray(X)
    got = enp.take(a, np.array([0, 5, 30]))
    assert_close(got[:2], [0.0, 5.0])
    assert np.isnan(np.asarray(got)[2])  # out of range: fill mode, as JAX
    assert_close(enp.take(a, np.array([1, 3]), axis=2, mode="clip"), np.take(X, [1, 3], axis=2))
    assert_close(enp.take(a, np.array([-1, 4]), axis=1, mode="wrap"), np.take(X, [2, 1], axis=1))
    order = np.argsort(-X, axis=2)
    assert_close(enp.take_along_axis(a, order, 2), np.take_along_axis(X, order, 2))


def test_vmap_of_dynamic_slices_with_batched_starts():
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    got = ember.vmap(lambda i: lax.dynamic_slice(x, (i, 1), (2, 2)))(np.array([0, 1, 5]))
    assert_close(got, [x[0:2, 1:3], x[1:3, 1:3], x[1:3, 1:3]])  # starts clamp, as XLA's
    update = np.full((1, 2), -1.0, np.float32)
    got = ember.vmap(lambda a, i: lax.dynamic_update_slice(a, update, (i, 3)))(
        np.stack([x, x]), np.array([0, 2])
    )
    assert_close(got[0, 0], [0, 1, -1, -1])
    assert_close(got[1, 2], [8, 9, -1, -1])


def test_bad_indices_are_reported():
    a = enp.asarray(X)
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 3"):
        a[:, [0, 3]]
    with pytest.raises(IndexError, match="None"):
        a[None, [0, 1]]
    with pytest.raises(ember.errors.ConcretizationTypeError, match="boolean index mask"):
        ember.jit(lambda v: v[v > 3])(X)
    with pytest.raises(ValueError, match="do not broadcast"):
        a.at[0, [0, 1]].set(np.ones(3, np.float32))


def test_set_with_duplicate_indices_differentiates_through_the_winner():
    # Which duplicate wins is the backend's choice; forward and reverse mode must agree with
    # the value (the losers and the overwritten entries get no derivative).
    a = np.arange(8, dtype=np.float32)
    v = np.array([10.0, 20.0, 30.0, 40.0], np.float32)
    idx = np.array([1, 7, 7, 1])

    def f(a, v):
        return enp.asarray(a).at[idx].set(v)

    out = np.asarray(f(enp.asarray(a), v))
    won = [i for i in range(4) if out[idx[i]] == v[i]]
    assert len(won) == 2
    d_v = np.asarray(ember.grad(lambda a, v: (f(a, v) * np.arange(8.0)).sum(), argnums=1)(a, v))
    want = np.zeros(4, np.float32)
    want[won] = idx[won]
    np.testing.assert_array_equal(d_v, want)
    d_a = np.asarray(ember.grad(lambda a: f(a, v).sum())(a))
    np.testing.assert_array_equal(d_a, np.isin(np.arange(8), idx, invert=True).astype(np.float32))
    check_grads(f, (a, v), order=2, modes=("fwd", "rev"))
