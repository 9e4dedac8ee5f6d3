"""The real Schur form's algorithm (lax/linalg_schur.py), the generic path of the ``schur``
primitive for real matrices: LAPACK gees's quasi-triangular form, for one matrix."""

from __future__ import annotations

import numpy as np

import ember
from ember._src.lax import linalg_schur
from tests.core.util import assert_same_multiset


def test_a_rotation_stays_one_block_in_standard_form():
    a = np.array([[1.0, -4.0], [1.0, 1.0]], np.float32)  # eigenvalues 1 +- 2i
    t, z = (np.asarray(x) for x in ember.jit(linalg_schur.real_schur_single)(a))
    np.testing.assert_allclose(t[0, 0], t[1, 1], atol=1e-6)  # equal diagonal entries
    assert t[0, 1] * t[1, 0] < 0
    np.testing.assert_allclose(z @ t @ z.T, a, atol=1e-5)
    np.testing.assert_allclose(z.T @ z, np.eye(2), atol=1e-6)


def test_real_and_complex_eigenvalues_together():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(6, 6)).astype(np.float64)
    with ember.config.option("enable_x64", True):
        t, z = (np.asarray(x) for x in ember.jit(linalg_schur.real_schur_single)(a))
    assert np.all(np.tril(t, -2) == 0)
    sub = np.diag(t, -1)
    assert np.all((sub[:-1] == 0) | (sub[1:] == 0))  # 2 x 2 blocks never overlap
    np.testing.assert_allclose(z @ t @ z.T, a, atol=1e-12)
    assert_same_multiset(np.linalg.eigvals(t), np.linalg.eigvals(a), 1e-10)


def test_a_matrix_with_inf_is_nan():
    a = np.array([[1.0, 2.0, 0.0], [np.inf, 1.0, 3.0], [0.0, 1.0, 2.0]], np.float32)
    t, z = (np.asarray(x) for x in ember.jit(linalg_schur.real_schur_single)(a))
    assert np.all(np.isnan(t)) and np.all(np.isnan(z))
