"""Array indexing, take/take_along_axis and x.at[...] updates, against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.test_util import check_grads
from tests.core.util import assert_close

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
    with pytest.raises(ember.errors.ConcretizationTypeError, match="boolean index mask"):
        ember.jit(lambda v: v[v > 3])(X)
    # an IndexError too, as JAX's NonConcreteBooleanIndexError is
    with pytest.raises(IndexError, match="boolean index mask"):
        ember.jit(lambda v: v[v > 3])(X)
    with pytest.raises(ember.errors.NonConcreteBooleanIndexError):
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


def test_at_modes_and_keywords_follow_jax():
    x = enp.arange(5.0)
    assert_close(x.at[10].add(10), np.arange(5.0))  # dropped
    assert_close(x.at[20].add(10, mode="clip"), [0, 1, 2, 3, 14])
    assert float(x.at[20].get(mode="clip")) == 4.0
    assert np.isnan(float(x.at[20].get(mode="fill")))
    assert float(x.at[20].get(mode="fill", fill_value=-1)) == -1.0
    assert_close(x.at[-1].set(99), [0, 1, 2, 3, 99])
    assert_close(x.at[-1].set(99, wrap_negative_indices=False, mode="drop"), np.arange(5.0))
    ints = enp.arange(4).at[np.array([0, 5, -1])].get(mode="fill")
    assert_close(ints, [0, np.iinfo(np.int32).min, 3])
    clipped = ember.jit(lambda v, i: v.at[i].set(7.0, mode="clip"))(x, 9)
    assert_close(clipped, [0, 1, 2, 3, 7])
    assert_close(x.at[1:3].subtract(1), [0, 0, 1, 3, 4])
    assert_close(x.at[np.array([0, 2])].power(2), [0, 1, 4, 3, 4])
    assert_close(x.at[np.array([1, 3])].apply(lambda v: v * 3), [0, 3, 2, 9, 4])
    sorted_unique = x.at[np.array([1, 3])].multiply(
        2.0, unique_indices=True, indices_are_sorted=True
    )
    assert_close(sorted_unique, [0, 2, 2, 6, 4])
    with pytest.raises(ValueError, match="mode must be one of"):
        x.at[1].set(1.0, mode="wrap")


def test_min_max_multiply_updates_differentiate():
    a = np.array([1.0, 5.0, 3.0, 2.0], np.float32)
    v = np.array([4.0, 0.5, 7.0], np.float32)
    idx = np.array([0, 1, 0])
    for method in ("max", "min"):
        check_grads(lambda a, v, m=method: getattr(enp.asarray(a).at[idx], m)(v), (a, v), order=1)
    # a tie between the operand and an update shares the derivative, as JAX does
    tie = ember.grad(lambda a: enp.asarray(a).at[np.array([0])].max(np.float32(1.0)).sum())(a)
    assert_close(tie, [0.5, 1, 1, 1])
    unique = np.array([0, 2, 3])
    check_grads(
        lambda a, v: enp.asarray(a).at[unique].multiply(v, unique_indices=True), (a, v), order=1
    )
    assert_close(ember.grad(lambda a: enp.asarray(a).at[idx].multiply(v).sum())(a), [28, 0.5, 1, 1])
    with pytest.raises(NotImplementedError, match="unique_indices=True"):
        ember.grad(lambda v: enp.asarray(a).at[idx].multiply(v).sum())(v)


@pytest.mark.parametrize("jit", [False, True])
def test_take_modes_treat_negative_and_large_indices_as_jax(jit):
    """'clip' clamps without counting negatives from the end; 'wrap' is modulo the size;
    'fill' counts negatives from the end and fills the rest (JAX's answers)."""
    a = np.arange(5.0, dtype=np.float32)
    i = np.array([-1, 7, -6, 2], np.int32)

    def take(a, i, mode, axis=None):
        fn = lambda a, i: enp.take(a, i, axis=axis, mode=mode)
        return np.asarray(ember.jit(fn)(a, i) if jit else fn(a, i))

    np.testing.assert_array_equal(take(a, i, "clip"), [0.0, 4.0, 0.0, 2.0])
    np.testing.assert_array_equal(take(a, i, "wrap"), [4.0, 2.0, 4.0, 2.0])
    np.testing.assert_array_equal(take(a, i, "fill"), [4.0, np.nan, np.nan, 2.0])
    grid = np.arange(10.0, dtype=np.float32).reshape(2, 5)
    np.testing.assert_array_equal(
        take(grid, i, "clip", axis=1), [[0.0, 4.0, 0.0, 2.0], [5.0, 9.0, 5.0, 7.0]]
    )
    np.testing.assert_array_equal(take(a, i.astype(np.int8), "clip"), [0.0, 4.0, 0.0, 2.0])
    np.testing.assert_array_equal(take(a, np.array([9, 3], np.uint8), "wrap"), [4.0, 3.0])
    # take_along_axis and .at[].get count negatives from the end before clipping.
    np.testing.assert_array_equal(enp.take_along_axis(a, i, 0, mode="clip"), [4, 4, 0, 2])
    np.testing.assert_array_equal(enp.asarray(a).at[i].get(mode="clip"), [4, 4, 0, 2])


def test_take_keeps_64_bit_indices_whole():
    with ember.config.option("enable_x64", True):
        big = np.array([2**32 + 1, -(2**32)], np.int64)
        np.testing.assert_array_equal(enp.take(np.arange(5), big, mode="clip"), [4, 0])
        np.testing.assert_array_equal(enp.take(np.arange(5.0), big, mode="wrap"), [2.0, 4.0])
        # Out of range: filled (JAX narrows the first to int32 and picks entry 1).
        np.testing.assert_array_equal(enp.take(np.arange(5.0), big), [np.nan, np.nan])


# None (newaxis) mixed with integer arrays, masks and integers: a None is a new size-1 axis
# that separates the advanced indices on either side (which then go first), as in NumPy.
_X4 = np.arange(120.0, dtype=np.float32).reshape(2, 3, 4, 5)
_I, _J = np.array([0, 1]), np.array([[2], [0]])
_M2 = np.zeros((2, 3), bool)
_M2[0, 1] = _M2[1, 2] = True
NEWAXIS_INDICES = [
    (None, _I),
    (None, np.array([True, False])),
    (_I, None, slice(1, None)),
    (Ellipsis, None, _I),
    (None, _I, _J),
    (_I, None, _J),
    (slice(None), None, np.array([True, False, True])),
    (None, Ellipsis, _I, None),
    (None, 0, _I),
    (_I, 0, None),
    (None, _M2),
    (_M2, None),
    (None, None, _I, None, slice(None), _J),
    (slice(None), _I, None, slice(1, 3), _J),
    (Ellipsis, _I, None, slice(None)),
    (1, None, np.array([True, False, True]), None),
]


@pytest.mark.parametrize("index", NEWAXIS_INDICES, ids=lambda i: str(i)[:40])
def test_none_with_advanced_indices_matches_numpy(index):
    a = enp.asarray(_X4)
    got = a[index]
    assert got.shape == _X4[index].shape
    np.testing.assert_array_equal(np.asarray(got), _X4[index])
    want = _X4.copy()
    want[index] = -1.0
    np.testing.assert_array_equal(np.asarray(a.at[index].set(-1.0)), want)
    want = _X4.copy()
    np.add.at(want, index, 1.0)
    np.testing.assert_array_equal(np.asarray(a.at[index].add(1.0)), want)
    np.testing.assert_array_equal(np.asarray(a.at[index].get()), _X4[index])


def test_none_with_traced_indices_under_jit_vmap_and_grad():
    i = np.array([2, 0])
    got = ember.jit(lambda a, k: a[None, :, k, None, 1:])(X, i)
    np.testing.assert_array_equal(np.asarray(got), X[None, :, i, None, 1:])
    got = ember.vmap(lambda k: enp.asarray(X)[..., None, k])(np.array([[0, 3], [1, 2]]))
    np.testing.assert_array_equal(
        np.asarray(got), np.stack([X[..., None, [0, 3]], X[..., None, [1, 2]]])
    )
    check_grads(lambda a: a[None, :, i, None] * a[None, :, i, None], (X,), order=1)
    grad = ember.grad(lambda a: a[:, None, i].sum())(X)
    want = np.zeros_like(X)
    np.add.at(want, (slice(None), None, i), 1.0)
    np.testing.assert_array_equal(np.asarray(grad), want)


_EMPTY = np.array([], np.int32)


@pytest.mark.parametrize(
    "shape,index,expected_shape",
    [
        ((0, 0), (_EMPTY, _EMPTY), (0,)),
        ((3,), (_EMPTY,), (0,)),
        ((0,), (_EMPTY,), (0,)),
        ((0, 3), (_EMPTY,), (0, 3)),
        ((0, 3), (_EMPTY, 1), (0,)),
        ((2, 0), (slice(None), _EMPTY), (2, 0)),
        ((0, 2, 0), (_EMPTY, slice(None), _EMPTY), (0, 2)),
        ((2, 3), (_EMPTY[:, None], _EMPTY), (0, 0)),
    ],
)
def test_empty_index_arrays_give_empty_results(shape, index, expected_shape):
    # JAX 0.10.2 (and NumPy) return empty arrays here; a gather of size-1 slices cannot.
    x = enp.zeros(shape)
    assert x[index].shape == expected_shape
    arrays = [i for i in index if isinstance(i, np.ndarray)]

    def pick(v, *traced):
        it = iter(traced)
        return v[tuple(next(it) if isinstance(i, np.ndarray) else i for i in index)]

    jitted = ember.jit(pick)(x, *arrays)  # traced (not concrete) empty index arrays
    assert jitted.shape == expected_shape and jitted.dtype == np.float32
    updated = x.at[index].add(1.0)
    assert updated.shape == shape
    np.testing.assert_array_equal(enp.ones(3).at[_EMPTY].set(5.0), np.ones(3))
    np.testing.assert_array_equal(ember.grad(lambda v: v[_EMPTY].sum())(enp.ones(3)), np.zeros(3))


@pytest.mark.parametrize(
    "index",
    [
        True,
        False,
        np.bool_(True),
        np.array(False),
        (Ellipsis, np.array(False)),
        (np.array(True), 0),
        (True, None),
        (slice(None), True, [0, 2]),
        (1, False),
    ],
)
def test_a_scalar_boolean_index_is_a_new_axis_kept_or_emptied(index):
    # As NumPy and JAX: True is a new axis of length 1, False one of length 0 (an advanced
    # index over that axis), whether given as a bool, a 0-d NumPy array or an ember Array.
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    want = x[index]
    entries = index if isinstance(index, tuple) else (index,)
    as_ember = tuple(enp.asarray(e) if isinstance(e, np.ndarray) else e for e in entries)
    for key in (index, as_ember):
        got = enp.asarray(x)[key]
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_a_scalar_boolean_index_of_a_0d_array_and_in_updates():
    assert enp.asarray(5.0)[enp.asarray(True)].shape == (1,)
    assert enp.asarray(5.0)[False].shape == (0,)
    np.testing.assert_array_equal(enp.arange(3.0).at[True].set(7.0), [7.0, 7.0, 7.0])
    np.testing.assert_array_equal(enp.arange(3.0).at[np.array(False)].set(7.0), [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(ember.jit(lambda v: v[True])(enp.arange(3.0)), [[0, 1, 2]])


def test_a_traced_scalar_boolean_index_is_refused_as_non_concrete():
    with pytest.raises(ember.errors.NonConcreteBooleanIndexError):
        ember.jit(lambda v, b: v[b])(enp.arange(3.0), True)


@pytest.mark.parametrize(
    "shape, mask_shape", [((3,), (0,)), ((1,), (0,)), ((2, 3), (0, 3)), ((2, 3), (2, 0))]
)
def test_an_empty_mask_axis_selects_nothing_from_an_axis_of_any_length(shape, mask_shape):
    # As NumPy and JAX; ember used to say the mask's shape did not match.
    x = np.ones(shape, np.float32)
    mask = np.zeros(mask_shape, bool)
    for key in (mask, enp.asarray(mask)):
        assert enp.asarray(x)[key].shape == x[mask].shape == (0,)


def test_a_mask_of_another_nonzero_length_is_still_refused():
    with pytest.raises(IndexError, match="does not match"):
        enp.ones((2, 3))[np.zeros((1, 3), bool)]
