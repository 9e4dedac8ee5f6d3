"""The Jacobi SVD scales matrices whose squared norms would overflow or underflow."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp


@pytest.mark.parametrize("magnitude", [8.25e18, 3e-30])
def test_singular_values_of_huge_and_tiny_float32_matrices(magnitude):
    # 8.25e18 squared, summed over a row, overflows float32: the singular values were NaN.
    x = (np.array([[1.0, 1.0, 1.0, 1.0, 1.0], [1.0, 0.5, 2.0, 1.0, 1.0]]) * magnitude).astype(
        np.float32
    )
    want = np.linalg.svd(x.astype(np.float64), compute_uv=False)
    for svdvals in (enp.linalg.svdvals, ember.jit(enp.linalg.svdvals)):
        np.testing.assert_allclose(np.asarray(svdvals(x)), want, rtol=1e-5)
    u, s, vh = enp.linalg.svd(x, full_matrices=False)
    np.testing.assert_allclose(np.asarray(s), want, rtol=1e-5)
    rebuilt = (np.asarray(u, np.float64) * np.asarray(s, np.float64)) @ np.asarray(vh, np.float64)
    np.testing.assert_allclose(rebuilt, x, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(u).T @ np.asarray(u), np.eye(2), atol=1e-5)


def test_a_constant_huge_matrix_has_one_nonzero_singular_value():
    s = np.asarray(enp.linalg.svdvals(np.full((2, 5), 8.249635e18, np.float32)))
    assert np.isfinite(s).all() and s[0] == pytest.approx(np.sqrt(10) * 8.249635e18, rel=1e-5)
    assert s[1] <= 1e-5 * s[0]


def test_zero_and_non_finite_matrices_are_left_unscaled():
    np.testing.assert_array_equal(np.asarray(enp.linalg.svdvals(np.zeros((3, 2), np.float32))), 0)
    assert np.isnan(np.asarray(enp.linalg.svdvals(np.array([[np.inf, 1.0], [2.0, 3.0]])))).all()
