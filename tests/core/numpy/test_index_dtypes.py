"""The dtype of every index-returning ember.numpy function, with and without x64: JAX's
answers (JAX 0.10.2), pinned as literals. Most follow the default integer type; a few keep
int32 under x64 as JAX's do (searchsorted, digitize, argpartition, lax.top_k)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax

_X = np.array([[3.0, 0.0, 2.0], [1.0, 5.0, 0.0]], np.float32)
_F = np.array([3.0, 1.0, 2.0, 1.0], np.float32)

# name -> (function, dtype without x64, dtype with x64)
_CASES = {
    "argmax": (lambda: enp.argmax(_X), "int32", "int64"),
    "argmin": (lambda: enp.argmin(_X, axis=0), "int32", "int64"),
    "nanargmax": (lambda: enp.nanargmax(_X), "int32", "int64"),
    "argsort": (lambda: enp.argsort(_F), "int32", "int64"),
    "argsort_descending": (lambda: enp.argsort(_F, descending=True), "int32", "int64"),
    "argsort_int8": (lambda: enp.argsort(np.array([3, 1], np.int8)), "int32", "int64"),
    "argpartition": (lambda: enp.argpartition(_F, 1), "int32", "int32"),
    "nonzero": (lambda: enp.nonzero(_X)[0], "int32", "int64"),
    "nonzero_size": (lambda: enp.nonzero(_X, size=5)[1], "int32", "int64"),
    "flatnonzero": (lambda: enp.flatnonzero(_X), "int32", "int64"),
    "argwhere": (lambda: enp.argwhere(_X), "int32", "int64"),
    "argwhere_size": (lambda: enp.argwhere(_X, size=2), "int32", "int64"),
    "where_one_argument": (lambda: enp.where(_X)[0], "int32", "int64"),
    "searchsorted": (lambda: enp.searchsorted(_F, 2.0), "int32", "int32"),
    "digitize": (lambda: enp.digitize(_F, np.array([1.0, 2.0])), "int32", "int32"),
    "unique_index": (lambda: enp.unique(_F, return_index=True)[1], "int32", "int64"),
    "unique_inverse": (lambda: enp.unique(_F, return_inverse=True)[1], "int32", "int64"),
    "unique_counts": (lambda: enp.unique(_F, return_counts=True)[1], "int32", "int64"),
    "unique_size_index": (
        lambda: enp.unique(_F, return_index=True, size=4)[1], "int32", "int64"),
    "unique_size_inverse": (
        lambda: enp.unique(_F, return_inverse=True, size=4)[1], "int32", "int64"),
    "unique_size_counts": (
        lambda: enp.unique(_F, return_counts=True, size=4)[1], "int32", "int64"),
    "tril_indices": (lambda: enp.tril_indices(3)[0], "int32", "int64"),
    "triu_indices": (lambda: enp.triu_indices(3)[1], "int32", "int64"),
    "tril_indices_from": (lambda: enp.tril_indices_from(_X)[0], "int32", "int64"),
    "triu_indices_from": (lambda: enp.triu_indices_from(_X)[0], "int32", "int64"),
    "diag_indices": (lambda: enp.diag_indices(3)[0], "int32", "int64"),
    "diag_indices_from": (lambda: enp.diag_indices_from(np.ones((3, 3)))[0], "int32", "int64"),
    "mask_indices": (lambda: enp.mask_indices(3, enp.triu)[0], "int32", "int64"),
    "indices": (lambda: enp.indices((2, 3)), "int32", "int64"),
    "unravel_index": (lambda: enp.unravel_index(np.array([3, 4]), (2, 3))[0], "int32", "int64"),
    "ravel_multi_index": (
        lambda: enp.ravel_multi_index((np.array([1]), np.array([2])), (2, 3)), "int32", "int64"),
    "lexsort": (lambda: enp.lexsort((_F, _F)), "int32", "int64"),
    "bincount": (lambda: enp.bincount(np.array([0, 1, 1])), "int32", "int64"),
    "histogram": (lambda: enp.histogram(_F.tolist(), 3)[0], "float32", "float64"),
    "histogram_float32": (lambda: enp.histogram(_F, 3)[0], "float32", "float32"),
    "histogram_int_weights": (
        lambda: enp.histogram(_F.tolist(), 3, weights=[1, 2, 3, 4])[0], "float32", "float64"),
    "histogram2d": (lambda: enp.histogram2d(_F, _F, 2)[0], "int32", "int64"),
    "histogramdd": (lambda: enp.histogramdd(np.stack([_F, _F], 1), 2)[0], "int32", "int64"),
    "count_nonzero": (lambda: enp.count_nonzero(_X), "int32", "int64"),
    "count_nonzero_axis": (lambda: enp.count_nonzero(_X, axis=0), "int32", "int64"),
    "intersect1d_indices": (
        lambda: enp.intersect1d(_F, _F, return_indices=True)[1], "int32", "int64"),
    "lax_top_k": (lambda: lax.top_k(_F, 2)[1], "int32", "int32"),
    "lax_approx_max_k": (lambda: lax.approx_max_k(_F, 2)[1], "int32", "int32"),
    "lax_approx_min_k": (lambda: lax.approx_min_k(_F, 2)[1], "int32", "int32"),
    "ix_boolean": (lambda: enp.ix_(np.array([True, False, True]))[0], "int32", "int64"),
    "lax_argmax_int32": (lambda: lax.argmax(_F, 0, np.int32), "int32", "int32"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(_CASES))
def test_index_dtype_without_x64(name):
    fn, want, _ = _CASES[name]
    assert str(fn().dtype) == want


@pytest.mark.parametrize("name", sorted(_CASES))
def test_index_dtype_with_x64(name):
    fn, _, want = _CASES[name]
    with ember.config.option("enable_x64", True):
        assert str(fn().dtype) == want


def test_x64_index_values_are_unchanged():
    """The wider index types carry the same positions (traced paths included)."""
    with ember.config.option("enable_x64", True):
        x = np.array([0.0, 2.0, 0.0, 1.0, 2.0])
        np.testing.assert_array_equal(enp.argsort(x, descending=True), [1, 4, 3, 0, 2])
        np.testing.assert_array_equal(enp.nonzero(x, size=4, fill_value=-1)[0], [1, 3, 4, -1])
        values, index, inverse, counts = enp.unique(
            x, return_index=True, return_inverse=True, return_counts=True, size=4
        )
        np.testing.assert_array_equal(index, [0, 3, 1, 0])
        np.testing.assert_array_equal(inverse, [0, 2, 0, 1, 2])
        np.testing.assert_array_equal(counts, [2, 1, 2, 0])
        np.testing.assert_array_equal(enp.lexsort((x, -x)), [1, 4, 3, 0, 2])
        counts, _ = enp.histogramdd(np.stack([x, x], 1), 2)
        np.testing.assert_array_equal(counts, [[2, 0], [0, 3]])


def test_histogram_weights_and_dtype_follow_the_data():
    counts, edges = enp.histogram([3.0, 1.0, 2.0, 1.0], 3, weights=[1, 2, 3, 4])
    np.testing.assert_allclose(counts, [6.0, 3.0, 1.0])  # JAX's answer
    np.testing.assert_allclose(edges, [1.0, 5 / 3, 7 / 3, 3.0], rtol=1e-6)
    counts, edges = enp.histogram(_F.astype(np.float16), 3)
    assert counts.dtype == edges.dtype == np.float16
    np.testing.assert_array_equal(counts, [2.0, 1.0, 1.0])
