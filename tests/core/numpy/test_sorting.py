"""sort, argsort, top_k and cumulative operations against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from tests.core.util import assert_close


@pytest.fixture
def x(rng):
    values = rng.normal(size=(3, 7)).astype(np.float32)
    values[0, 2] = np.nan
    values[1, 1] = values[1, 4]  # a tie: stability decides
    return values


@pytest.mark.parametrize("axis", [-1, 0, None])
def test_sort_and_argsort_match_numpy(x, axis):
    np.testing.assert_array_equal(np.asarray(enp.sort(x, axis=axis)), np.sort(x, axis=axis))
    got = np.asarray(enp.argsort(x, axis=axis))
    np.testing.assert_array_equal(got, np.argsort(x, axis=axis, kind="stable"))


def test_descending_and_multi_key_sort(x):
    finite = np.nan_to_num(x)
    order = np.asarray(enp.argsort(finite, descending=True))
    np.testing.assert_array_equal(order, np.argsort(-finite, kind="stable"))
    keys = np.array([2, 1, 2, 1], np.int32)
    values = np.array([10.0, 20.0, 30.0, 40.0], np.float32)
    sorted_keys, sorted_values = lax.sort_key_val(keys, values)
    assert_close(sorted_keys, [1, 1, 2, 2])
    assert_close(sorted_values, [20.0, 40.0, 10.0, 30.0])


def test_top_k(x):
    values, indices = lax.top_k(np.nan_to_num(x), 3)
    expected = np.argsort(-np.nan_to_num(x), kind="stable")[:, :3]
    np.testing.assert_array_equal(np.asarray(indices), expected)
    assert_close(values, np.take_along_axis(np.nan_to_num(x), expected, 1))


def test_sort_gradient_and_vmap(x):
    row = np.nan_to_num(x[1])
    weights = np.arange(7.0, dtype=np.float32)
    grad = ember.grad(lambda v: (enp.sort(v) * weights).sum())(row)
    expected = np.zeros(7, np.float32)
    expected[np.argsort(row, kind="stable")] = weights
    assert_close(grad, expected)
    assert_close(ember.vmap(enp.sort)(np.nan_to_num(x)), np.sort(np.nan_to_num(x), axis=1))


@pytest.mark.parametrize("axis", [0, 1, None])
def test_cumulative_ops(x, axis):
    finite = np.nan_to_num(x)
    assert_close(enp.cumsum(finite, axis=axis), np.cumsum(finite, axis=axis), rtol=1e-5, atol=1e-5)
    small = finite / 4 + 1
    assert_close(enp.cumprod(small, axis=axis), np.cumprod(small, axis=axis), rtol=1e-5)


def test_lax_cumulative_reverse_and_gradients():
    v = np.array([1.0, 3.0, 2.0, 5.0, 4.0], np.float32)
    assert_close(lax.cummax(v, 0), np.maximum.accumulate(v))
    assert_close(lax.cummin(v, 0, reverse=True), np.minimum.accumulate(v[::-1])[::-1])
    assert_close(lax.cumsum(v, 0, reverse=True), np.cumsum(v[::-1])[::-1])
    assert_close(ember.grad(lambda a: enp.cumsum(a).sum())(v), [5.0, 4.0, 3.0, 2.0, 1.0])
    assert_close(enp.cumsum(np.array([True, True, False])), [1, 2, 2])


_NAN = np.nan
_COMPLEX = np.array(
    [2 + 0j, complex(1, _NAN), complex(_NAN, 0), 1 + 1j, 1 - 1j, complex(_NAN, -1),
     complex(0, _NAN), -0.0 + 0j, 0j, 1 + 0j],
    np.complex64,
)  # fmt: skip


@pytest.mark.parametrize("jit", [False, True])
def test_complex_sort_is_lexicographic_with_nans_last(jit):
    """Real part, then imaginary part, each with NaNs last: JAX's order (NumPy instead puts
    every value holding a NaN last)."""
    wrap = ember.jit if jit else (lambda f: f)
    got = np.asarray(wrap(enp.sort)(_COMPLEX))
    want = np.array(
        [0j, 0j, complex(0, _NAN), 1 - 1j, 1 + 0j, 1 + 1j, complex(1, _NAN), 2 + 0j,
         complex(_NAN, -1), complex(_NAN, 0)],
        np.complex64,
    )  # fmt: skip
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(wrap(enp.argsort)(_COMPLEX), [7, 8, 6, 4, 9, 3, 1, 0, 5, 2])
    three = np.array([3j, 1 + 0j, 1j], np.complex64)
    np.testing.assert_array_equal(lax.sort(three), [1j, 3j, 1 + 0j])
    np.testing.assert_array_equal(enp.sort(three, descending=True), [1 + 0j, 3j, 1j])
    np.testing.assert_array_equal(enp.sort_complex(three), [1j, 3j, 1 + 0j])
    np.testing.assert_array_equal(enp.partition(three, 1)[1], 3j)
    np.testing.assert_array_equal(enp.argpartition(three, 1)[1], 0)
    with pytest.raises(ValueError, match="complex"):  # as JAX: no natural order to interpolate
        enp.median(three)


def test_complex_unique_lexsort_and_batched_sort():
    values, inverse, counts = enp.unique(
        np.array([1 + 1j, 1 + 1j, 2j, 1 + 1j, complex(_NAN, 0)], np.complex64),
        return_inverse=True,
        return_counts=True,
    )
    np.testing.assert_array_equal(values, np.array([2j, 1 + 1j, complex(_NAN, 0)], np.complex64))
    np.testing.assert_array_equal(inverse, [1, 1, 0, 1, 2])
    np.testing.assert_array_equal(counts, [1, 3, 1])
    keys = (np.array([1j, 0j, 2j]), np.array([1 + 0j, 1 + 0j, 0j]))
    np.testing.assert_array_equal(enp.lexsort(keys), [2, 1, 0])
    rows = np.array([[2 + 1j, 2 - 1j, 1j], [5j, -1 + 0j, 4j]], np.complex64)
    got = ember.vmap(enp.sort)(rows)
    np.testing.assert_array_equal(got, [[1j, 2 - 1j, 2 + 1j], [-1 + 0j, 4j, 5j]])


def test_complex_sort_gradient_follows_the_permutation():
    def f(x):
        return enp.sort(x.astype(np.complex64) * (1 + 1j)).real[0]

    np.testing.assert_array_equal(ember.grad(f)(np.array([3.0, 1.0, 2.0], np.float32)), [0, 1, 0])


def test_complex_max_and_min_order_lexicographically():
    """XLA's CPU maximum of complex numbers compares real parts only; the reduction
    compares the imaginary parts on ties (JAX's answers), and NaNs propagate."""
    c = np.array([1 + 2j, 1 + 3j, 0 + 5j, 2 - 1j, 2 - 3j], np.complex64)
    assert complex(enp.max(c)) == 2 - 1j
    assert complex(enp.min(c)) == 5j
    assert complex(enp.max(c[:2])) == 1 + 3j
    assert complex(enp.min(c[1::-1])) == 1 + 2j
    np.testing.assert_array_equal(enp.max(c[:4].reshape(2, 2), axis=1), [1 + 3j, 2 - 1j])
    assert complex(enp.ptp(c[:4])) == 2 - 6j
    assert np.isnan(complex(enp.max(np.array([1 + 1j, complex(_NAN, 0), 3 + 0j]))))
    assert complex(enp.nanmax(np.array([1 + 1j, complex(_NAN, 0), 3 + 0j]))) == 3 + 0j


def test_complex_arg_extrema_and_top_k_are_refused_as_in_jax():
    c = np.array([1 + 2j, 1 + 3j], np.complex64)
    with pytest.raises(TypeError, match="argmax does not accept complex"):
        enp.argmax(c)
    with pytest.raises(TypeError, match="argmin does not accept complex"):
        enp.nanargmin(c)
    with pytest.raises(ValueError, match="top_k is not compatible with complex"):
        lax.top_k(c, 1)
    with pytest.raises(ValueError, match="indices must have an integer type"):
        enp.take(np.arange(5), np.array([1.5]))
