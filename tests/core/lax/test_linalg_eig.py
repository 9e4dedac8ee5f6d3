"""The general eigenproblem's algorithm (lax/linalg_eig.py), the generic path of the ``eig``
and complex ``schur`` primitives, for one matrix."""

from __future__ import annotations

import numpy as np

import ember
from ember._src.lax import linalg_eig
from tests.core.util import assert_same_multiset


def _complex(n, seed):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, n)) + 1j * rng.normal(size=(n, n))).astype(np.complex64)


def test_complex_schur_is_triangular_and_reconstructs():
    a = _complex(5, 0)
    t, z = (np.asarray(x) for x in ember.jit(linalg_eig.complex_schur_single)(a))
    assert np.all(np.tril(t, -1) == 0)
    np.testing.assert_allclose(z @ t @ z.conj().T, a, atol=1e-4)
    assert_same_multiset(np.diag(t), np.linalg.eigvals(a), 1e-4)


def test_left_and_right_eigenvectors_in_geevs_normalisation():
    a = _complex(4, 1)
    w, vl, vr = (
        np.asarray(x) for x in ember.jit(lambda m: linalg_eig.eig_single(m, True, True))(a)
    )
    np.testing.assert_allclose(a @ vr, vr * w, atol=1e-4)
    np.testing.assert_allclose(vl.conj().T @ a, w[:, None] * vl.conj().T, atol=1e-4)
    for v in (vl, vr):
        np.testing.assert_allclose(np.linalg.norm(v, axis=0), 1, rtol=1e-5)
        lead = v[np.abs(v).argmax(axis=0), np.arange(4)]
        np.testing.assert_allclose(lead.imag, 0, atol=1e-6)
        assert np.all(lead.real > 0)


def test_a_matrix_the_iteration_cannot_finish_is_nan():
    a = _complex(3, 2)
    a[1, 2] = np.nan
    w, vr = (np.asarray(x) for x in ember.jit(lambda m: linalg_eig.eig_single(m, False, True))(a))
    assert np.all(np.isnan(w)) and np.all(np.isnan(vr))
    t, z = (np.asarray(x) for x in ember.jit(linalg_eig.complex_schur_single)(a))
    assert np.all(np.isnan(t)) and np.all(np.isnan(z))


def test_one_by_one_and_empty_matrices():
    one = np.array([[2.0 + 1.0j]], np.complex64)
    w, vl, vr = (np.asarray(x) for x in linalg_eig.eig_single(one, True, True))
    assert w.tolist() == [2.0 + 1.0j] and vl.tolist() == vr.tolist() == [[1.0]]
    empty = np.zeros((0, 0), np.complex64)
    assert [np.shape(x) for x in linalg_eig.eig_single(empty, True, False)] == [(0,), (0, 0)]
