"""lax.linalg's updates and products: cholesky_update, symmetric_product and
lu_pivots_to_permutation, against NumPy and JAX's pinned answers."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.lax import linalg
from tests.core.util import assert_close

RNG = np.random.default_rng(1)


def _upper_factor(n):
    x = RNG.standard_normal((n, n))
    return np.linalg.cholesky(x @ x.T + n * np.eye(n)).T.astype(np.float32)


def test_cholesky_update_is_the_factor_of_the_updated_matrix():
    r, w = _upper_factor(5), RNG.standard_normal(5).astype(np.float32)
    out = np.asarray(linalg.cholesky_update(r, w), np.float64)
    r64, w64 = r.astype(np.float64), w.astype(np.float64)
    expected = np.linalg.cholesky(r64.T @ r64 + np.outer(w64, w64)).T
    assert np.allclose(np.tril(out, -1), 0)
    assert_close(out, expected, rtol=1e-4, atol=1e-5)


def test_cholesky_update_zero_vector_keeps_the_factor():
    r = _upper_factor(4)
    assert_close(linalg.cholesky_update(r, np.zeros(4, np.float32)), r)


def test_cholesky_update_refuses_mismatched_shapes():
    with pytest.raises(ValueError, match="w_vector"):
        linalg.cholesky_update(_upper_factor(3), np.zeros(4, np.float32))


def test_symmetric_product():
    a = RNG.standard_normal((2, 4, 3)).astype(np.float32)
    c = RNG.standard_normal((2, 4, 4)).astype(np.float32)
    out = linalg.symmetric_product(a, c, alpha=2.0, beta=0.5)
    expected = 2.0 * a @ np.swapaxes(a, -1, -2) + 0.5 * c
    assert_close(out, expected, rtol=1e-5, atol=1e-5)
    # symmetrize_output mirrors the lower triangle into the upper one (c is not symmetric)
    sym = np.asarray(linalg.symmetric_product(a, c, alpha=2.0, beta=0.5, symmetrize_output=True))
    lower = np.tril(expected)
    assert_close(sym, lower + np.swapaxes(np.tril(expected, -1), -1, -2), rtol=1e-5, atol=1e-5)


def test_lu_pivots_to_permutation_matches_jax():
    # JAX 0.10.2: lax.linalg.lu_pivots_to_permutation([[2, 2, 3], [0, 4, 2]], 5)
    out = linalg.lu_pivots_to_permutation(np.array([[2, 2, 3], [0, 4, 2]], np.int32), 5)
    assert np.asarray(out).dtype == np.int32
    assert np.asarray(out).tolist() == [[2, 0, 3, 1, 4], [0, 4, 2, 3, 1]]


def test_lu_pivots_to_permutation_is_lus_permutation():
    a = RNG.standard_normal((5, 5)).astype(np.float32)
    _, pivots, permutation = linalg.lu(a)
    out = ember.jit(lambda p: linalg.lu_pivots_to_permutation(p, 5))(pivots)
    assert np.asarray(out).tolist() == np.asarray(permutation).tolist()


def test_lu_pivots_to_permutation_refuses_too_many_pivots():
    with pytest.raises(ValueError, match="permutation_size"):
        linalg.lu_pivots_to_permutation(np.zeros(4, np.int32), 3)
