"""ember.scipy.linalg.eigh_tridiagonal against SciPy, with JAX's answers and errors pinned."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl

import ember
from ember.scipy import linalg
from tests.core.util import assert_close

D = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
E = np.array([1.0, 1.0, 1.0], np.float32)


def test_eigenvalues_match_jax_and_scipy():
    w = linalg.eigh_tridiagonal(D, E, eigvals_only=True)
    assert w.dtype == np.float32
    # JAX 0.10's documented answer
    assert_close(w, [0.2547188, 1.8227171, 3.1772828, 4.745281], rtol=1e-6)
    rng = np.random.default_rng(0)
    d, e = rng.normal(size=9), rng.normal(size=8)
    with ember.config.option("enable_x64", True):
        w = linalg.eigh_tridiagonal(d, e, eigvals_only=True)
        assert w.dtype == np.float64
        assert_close(w, sl.eigh_tridiagonal(d, e, eigvals_only=True), rtol=1e-12, atol=1e-13)


def test_selected_index_range():
    w = linalg.eigh_tridiagonal(D, E, eigvals_only=True, select="i", select_range=(1, 2))
    assert_close(w, [1.8227171, 3.1772828], rtol=1e-6)
    expected = sl.eigh_tridiagonal(D, E, eigvals_only=True, select="i", select_range=(1, 2))
    assert_close(w, expected, rtol=1e-5)
    w, v = linalg.eigh_tridiagonal(D, E, select="i", select_range=(3, 3))
    assert w.shape == (1,) and v.shape == (4, 1)


def test_eigenvectors_satisfy_the_eigenproblem():
    w, v = linalg.eigh_tridiagonal(D, E)
    t = np.diag(D) + np.diag(E, 1) + np.diag(E, -1)
    v = np.asarray(v)
    assert_close(t @ v, v * np.asarray(w), atol=1e-5, rtol=0)
    assert_close(v.T @ v, np.eye(4), atol=1e-5, rtol=0)


def test_complex_hermitian_input():
    d = np.array([1.0, 2.0, 3.0], np.complex64)
    e = np.array([1j, 1 + 1j], np.complex64)
    w = linalg.eigh_tridiagonal(d, e, eigvals_only=True)
    assert w.dtype == np.float32
    assert_close(w, [0.13919425, 1.7458984, 4.1149073], rtol=1e-5)  # JAX's answer
    w, v = linalg.eigh_tridiagonal(d, e)
    t = np.diag(d) + np.diag(e, 1) + np.diag(e.conj(), -1)
    v = np.asarray(v)
    assert v.dtype == np.complex64
    assert_close(t @ v, v * np.asarray(w), atol=1e-5, rtol=0)


def test_tolerance_and_small_sizes():
    coarse = linalg.eigh_tridiagonal(D, E, eigvals_only=True, tol=0.1)
    assert_close(coarse, [0.2547188, 1.8227171, 3.1772828, 4.745281], atol=0.1, rtol=0)
    one = np.array([5.0], np.float32)
    assert_close(linalg.eigh_tridiagonal(one, np.zeros(0, np.float32), eigvals_only=True), [5.0])
    w, v = linalg.eigh_tridiagonal(one, np.zeros(0, np.float32))
    assert_close(v, [[1.0]])


def test_vmap_and_jit():
    batch = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], np.float32)
    ones = np.ones(2, np.float32)
    w = ember.vmap(lambda d: linalg.eigh_tridiagonal(d, ones, eigvals_only=True))(batch)
    # JAX's answers
    assert_close(w, [[0.26794922, 2.0, 3.7320509], [-1.4142135, 0.0, 1.4142135]], atol=1e-6)
    jitted = ember.jit(lambda d, e: linalg.eigh_tridiagonal(d, e, eigvals_only=True))
    assert_close(jitted(D, E), [0.2547188, 1.8227171, 3.1772828, 4.745281], rtol=1e-6)


def test_errors_match_jax():
    with pytest.raises(TypeError, match="same dtype"):
        linalg.eigh_tridiagonal(D, E.astype(np.int32))
    with pytest.raises(TypeError, match="Only float32 and float64"):
        linalg.eigh_tridiagonal(D.astype(np.int32), E.astype(np.int32))
    with pytest.raises(ValueError, match="select_range must be specified"):
        linalg.eigh_tridiagonal(D, E, select="i")
    with pytest.raises(ValueError, match="empty index range"):
        linalg.eigh_tridiagonal(D, E, select="i", select_range=(2, 1))
    with pytest.raises(NotImplementedError, match="select='v'"):
        linalg.eigh_tridiagonal(D, E, select="v", select_range=(0.0, 1.0))
    with pytest.raises(ValueError, match="select must have a value"):
        linalg.eigh_tridiagonal(D, E, select="x")
