"""searchsorted and digitize: every method against NumPy, NaNs and complex values in sort's
order, and JAX's answers pinned where NumPy has none."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from tests.core.util import assert_matches_numpy

_METHODS = ["scan", "scan_unrolled", "sort", "compare_all"]
_NAN = np.nan


@pytest.mark.parametrize("method", _METHODS)
@pytest.mark.parametrize("side", ["left", "right"])
def test_every_method_matches_numpy_for_many_lengths(method, side):
    rng = np.random.default_rng(0)
    for n in [0, 1, 2, 5, 8, 17]:
        a = np.sort(rng.integers(0, 6, n)).astype(np.float32)  # many ties
        v = np.arange(-1, 7, 0.5, dtype=np.float32).reshape(4, 4)
        got = enp.searchsorted(a, v, side=side, method=method)
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, np.searchsorted(a, v, side=side), err_msg=f"n={n}")


@pytest.mark.parametrize("method", _METHODS)
def test_nans_sort_last(method):
    """NumPy's and JAX's answer: NaN goes after every number, among the NaNs for 'left'."""
    a = np.array([1.0, 2.0, 2.0, 3.0, _NAN, _NAN], np.float32)
    v = np.array([[_NAN, 0.5, 2.0], [3.0, 4.0, -0.0]], np.float32)
    left = enp.searchsorted(a, v, method=method)
    right = enp.searchsorted(a, v, side="right", method=method)
    np.testing.assert_array_equal(left, [[4, 0, 1], [3, 4, 0]])
    np.testing.assert_array_equal(right, [[6, 0, 3], [4, 4, 0]])
    np.testing.assert_array_equal(left, np.searchsorted(a, v))
    np.testing.assert_array_equal(right, np.searchsorted(a, v, side="right"))
    brief = enp.searchsorted(np.array([1.0, 2.0, _NAN]), np.array([_NAN, 1.5, 3.0]), method=method)
    np.testing.assert_array_equal(brief, [2, 1, 2])
    infinities = enp.searchsorted(
        np.array([-np.inf, 1.0, np.inf, _NAN]), np.array([np.inf, -np.inf, _NAN]), side="right",
        method=method,
    )  # fmt: skip
    np.testing.assert_array_equal(infinities, [3, 1, 4])
    zeros = enp.searchsorted(np.array([-0.0, 0.0, 1.0]), np.array([0.0, -0.0]), side="right")
    np.testing.assert_array_equal(zeros, [2, 2])


@pytest.mark.parametrize("method", _METHODS)
def test_complex_values_compare_lexicographically(method):
    a = np.array([1j, 1 + 0j, 1 + 1j], np.complex64)
    v = np.array([0j, 1 + 0.5j, 2 + 0j, complex(1, _NAN)], np.complex64)
    np.testing.assert_array_equal(enp.searchsorted(a, v, method=method), [0, 2, 3, 3])
    right = enp.searchsorted(a, np.array([1j, 1 + 0j], np.complex64), side="right", method=method)
    np.testing.assert_array_equal(right, [1, 2])


@pytest.mark.parametrize("method", _METHODS)
def test_integer_bool_scalar_sorter_jit_and_vmap(method):
    def search(a, v, **kw):
        return enp.searchsorted(a, v, method=method, **kw)

    np.testing.assert_array_equal(search(np.array([1, 3, 5]), np.array([0, 3, 6])), [0, 1, 3])
    uint = search(np.array([1, 3, 5], np.uint8), np.array([0, 3, 6], np.uint8), side="right")
    np.testing.assert_array_equal(uint, [0, 2, 3])
    np.testing.assert_array_equal(search(np.array([False, True, True]), np.array([True])), [1])
    assert int(search(np.array([1.0, 2.0, 2.0, 3.0]), 2.0, side="right")) == 3
    unsorted = np.array([3.0, 1.0, 2.0])
    sorter = np.array([1, 2, 0])
    np.testing.assert_array_equal(search(unsorted, np.array([2.5, 0.0]), sorter=sorter), [2, 0])
    a = np.array([1.0, 2.0, 2.0, 3.0, _NAN], np.float32)
    v = np.array([_NAN, 2.0, 0.0], np.float32)
    np.testing.assert_array_equal(ember.jit(search)(a, v), [4, 1, 0])
    rows = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    np.testing.assert_array_equal(ember.vmap(search)(rows, np.array([2.5, 4.5])), [2, 1])


def test_default_search_is_a_logarithmic_loop():
    """The default method loops ceil(log2(n + 1)) times over the queries; it never builds
    the (queries x values) comparison."""
    jaxpr = ember.make_jaxpr(lambda a, v: enp.searchsorted(a, v))(np.zeros(1000), np.zeros(7))
    text = str(jaxpr)
    assert "length=10" in text
    assert "1000]" not in text.replace("f32[1000]", "")


def test_bad_arguments_are_reported():
    with pytest.raises(ValueError, match="1-dimensional"):
        enp.searchsorted(np.ones((2, 2)), 1.0)
    with pytest.raises(ValueError, match="side='middle'"):
        enp.searchsorted(np.ones(2), 1.0, side="middle")
    with pytest.raises(ValueError, match="method='fast'"):
        enp.searchsorted(np.ones(2), 1.0, method="fast")
    with pytest.raises(ValueError, match="method='fast'"):
        enp.digitize(np.ones(2), np.ones(2), method="fast")


@pytest.mark.parametrize("method", [None, *_METHODS])
def test_digitize_increasing_decreasing_and_empty_bins(method):
    x = np.array([0.5, 1.0, 2.5, _NAN, 4.0])
    up, down = np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])
    np.testing.assert_array_equal(enp.digitize(x, up, method=method), [0, 1, 2, 3, 3])
    np.testing.assert_array_equal(enp.digitize(x, up, True, method=method), [0, 0, 2, 3, 3])
    # JAX's answers for decreasing bins (a NaN lands in bin 0 there).
    np.testing.assert_array_equal(enp.digitize(x, down, method=method), [3, 2, 1, 0, 0])
    np.testing.assert_array_equal(enp.digitize(x, down, True, method=method), [3, 3, 1, 0, 0])
    np.testing.assert_array_equal(enp.digitize(x[:4], up), np.digitize(x[:4], up))
    np.testing.assert_array_equal(enp.digitize(x[:3], down), np.digitize(x[:3], down))
    empty = enp.digitize(np.array([0.5, 1.0]), np.zeros(0), method=method)
    assert empty.dtype == np.int32
    np.testing.assert_array_equal(empty, [0, 0])


# searchsorted of a random matrix into its own sorted values.
_X = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
_S = np.sort(_X.ravel())
SORTED_CASES = {
    "searchsorted": lambda m: m.searchsorted(_S, _X),
    "searchsorted_right": lambda m: m.searchsorted(_S, _S[3:6], side="right"),
}


@pytest.mark.parametrize("name", sorted(SORTED_CASES))
def test_searchsorted_of_a_random_matrix_matches_numpy(name):
    assert_matches_numpy(SORTED_CASES[name])
