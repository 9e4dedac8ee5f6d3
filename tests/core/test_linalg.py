"""ember.numpy.linalg against numpy.linalg, with gradients through the factorisations."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp

from .util import assert_close

rng = np.random.default_rng(0)
A = rng.normal(size=(4, 4)).astype(np.float32)
B = rng.normal(size=(4, 2)).astype(np.float32)
SPD = (A @ A.T + 4 * np.eye(4)).astype(np.float32)
STACK = rng.normal(size=(3, 4, 4)).astype(np.float32)

CASES = {
    "solve": lambda m: m.linalg.solve(A, B),
    "solve_vector": lambda m: m.linalg.solve(A, B[:, 0]),
    "inv": lambda m: m.linalg.inv(A),
    "det": lambda m: m.linalg.det(A),
    "det_stack": lambda m: m.linalg.det(STACK),
    "slogdet_sign": lambda m: m.linalg.slogdet(STACK)[0],
    "slogdet_log": lambda m: m.linalg.slogdet(STACK)[1],
    "cholesky": lambda m: m.linalg.cholesky(SPD),
    "norm_fro": lambda m: m.linalg.norm(A),
    "norm_1": lambda m: m.linalg.norm(A, 1),
    "norm_inf": lambda m: m.linalg.norm(A, np.inf),
    "norm_axis": lambda m: m.linalg.norm(B, axis=0),
    "matrix_power": lambda m: m.linalg.matrix_power(A, 3),
    "matrix_power_negative": lambda m: m.linalg.matrix_power(A, -2),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy(name):
    assert_close(CASES[name](enp), CASES[name](np), rtol=1e-3, atol=1e-4)


def test_array_api_helpers():
    assert_close(enp.linalg.trace(A), np.trace(A))
    assert_close(enp.linalg.diagonal(STACK, offset=1), np.diagonal(STACK, 1, -2, -1))
    assert_close(enp.linalg.cross(B[:3, 0], B[1:4, 1]), np.cross(B[:3, 0], B[1:4, 1]), rtol=1e-5)
    assert_close(enp.linalg.vector_norm(B, ord=3), np.linalg.norm(B.ravel(), 3), rtol=1e-5)
    assert_close(enp.linalg.cholesky(SPD, upper=True), np.linalg.cholesky(SPD).T, rtol=1e-4)


def test_gradients_and_jit():
    grad_det = ember.grad(enp.linalg.det)(A)
    assert_close(grad_det, np.linalg.det(A) * np.linalg.inv(A).T, rtol=1e-3, atol=1e-3)
    grad_solve = ember.grad(lambda m: enp.linalg.solve(m, B).sum())(A)
    expected = -np.linalg.inv(A).T @ np.ones((4, 2)) @ np.linalg.solve(A, B).T
    assert_close(grad_solve, expected, rtol=1e-3, atol=1e-3)
    assert_close(ember.jit(enp.linalg.inv)(A), np.linalg.inv(A), rtol=1e-3, atol=1e-4)


def test_shape_errors():
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        enp.linalg.inv(B)


TALL = rng.normal(size=(5, 3)).astype(np.float32)
SYM = (A + A.T).astype(np.float32)


def test_qr_eigh_svd():
    q, r = enp.linalg.qr(TALL)
    assert_close(np.asarray(q) @ np.asarray(r), TALL, rtol=1e-4, atol=1e-5)
    assert_close(np.asarray(q).T @ np.asarray(q), np.eye(3), atol=1e-5)
    assert_close(np.abs(np.asarray(r)), np.abs(np.linalg.qr(TALL)[1]), rtol=1e-4, atol=1e-4)
    w, v = enp.linalg.eigh(SYM)
    assert_close(w, np.linalg.eigvalsh(SYM), rtol=1e-4, atol=1e-4)
    assert_close(SYM @ np.asarray(v), np.asarray(v) * np.asarray(w), atol=1e-4)
    u, s, vh = enp.linalg.svd(A)
    assert_close(s, np.linalg.svd(A, compute_uv=False), rtol=1e-4, atol=1e-5)
    assert_close((np.asarray(u) * np.asarray(s)) @ np.asarray(vh), A, atol=1e-4)
    assert_close(enp.linalg.svdvals(TALL.T), np.linalg.svd(TALL.T, compute_uv=False), atol=1e-4)
    assert_close(enp.linalg.pinv(TALL), np.linalg.pinv(TALL), rtol=1e-3, atol=1e-4)
    rank_one = np.outer(np.arange(1.0, 6.0), np.arange(1.0, 4.0)).astype(np.float32)
    assert int(enp.linalg.matrix_rank(rank_one)) == 1 and int(enp.linalg.matrix_rank(TALL)) == 3
    assert_close(enp.linalg.matrix_norm(A, ord=2), np.linalg.norm(A, 2), rtol=1e-4)


def test_eigh_gradient_is_analytic():
    # d(largest eigenvalue)/dA = v v^T for its eigenvector v
    g = np.asarray(ember.grad(lambda m: enp.linalg.eigvalsh(m)[-1])(SYM))
    top = np.linalg.eigh(SYM)[1][:, -1]
    assert_close(g, np.outer(top, top), rtol=1e-3, atol=1e-4)


COMPLEX = (rng.normal(size=(5, 3)) + 1j * rng.normal(size=(5, 3))).astype(np.complex64)
HERMITIAN = (COMPLEX.conj().T @ COMPLEX + np.diag([0.0, 1.0, 3.0])).astype(np.complex64)


def _unitary_error(u):
    u = np.asarray(u)
    return np.abs(u.conj().T @ u - np.eye(u.shape[1])).max()


def test_complex_eigh():
    w, v = enp.linalg.eigh(HERMITIAN)
    assert np.asarray(w).dtype == np.float32
    assert_close(w, np.linalg.eigvalsh(HERMITIAN), rtol=1e-4, atol=1e-4)
    assert_close(HERMITIAN @ np.asarray(v), np.asarray(v) * np.asarray(w), atol=1e-4)
    assert _unitary_error(v) < 1e-5


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_svd_full_and_reduced(shape, dtype):
    a = rng.normal(size=shape) + (1j * rng.normal(size=shape) if dtype == np.complex64 else 0)
    a = a.astype(dtype)
    for full in (True, False):
        u, s, vh = enp.linalg.svd(a, full_matrices=full)
        want_u, want_s, want_vh = np.linalg.svd(a, full_matrices=full)
        assert np.asarray(u).shape == want_u.shape and np.asarray(vh).shape == want_vh.shape
        assert np.asarray(s).dtype == np.float32
        assert_close(s, want_s, rtol=1e-4, atol=1e-5)
        assert _unitary_error(u) < 1e-5 and _unitary_error(np.asarray(vh).conj().T) < 1e-5
        k = min(shape)
        product = (np.asarray(u)[:, :k] * np.asarray(s)) @ np.asarray(vh)[:k]
        assert_close(product, a, atol=1e-4)


def test_svd_of_rank_deficient_matrix_keeps_u_unitary():
    # The zero singular value's column of u is not determined by a: it must still complete an
    # orthonormal basis (numpy/LAPACK do the same).
    a = np.outer(np.arange(1.0, 6.0), [1.0, 2.0, 3.0]).astype(np.float32)
    u, s, vh = enp.linalg.svd(a)
    assert_close(np.asarray(s)[1:], [0.0, 0.0], atol=1e-4)
    assert _unitary_error(u) < 1e-5
    assert_close((np.asarray(u)[:, :3] * np.asarray(s)) @ np.asarray(vh), a, atol=1e-4)


def test_complex_qr_pinv_and_complete_qr():
    for a in (COMPLEX, TALL):
        q, r = enp.linalg.qr(a, mode="complete")
        assert np.asarray(q).shape == (5, 5) and np.asarray(r).shape == (5, 3)
        assert _unitary_error(q) < 1e-5
        assert_close(np.asarray(q) @ np.asarray(r), a, atol=1e-5)
        assert_close(np.tril(np.asarray(r), -1), np.zeros((5, 3)), atol=0)
    assert_close(enp.linalg.pinv(COMPLEX), np.linalg.pinv(COMPLEX), rtol=1e-3, atol=1e-5)
    assert_close(enp.linalg.svdvals(COMPLEX), np.linalg.svdvals(COMPLEX), rtol=1e-4)


def test_complex_eigvalsh_gradient():
    # d(sum of eigenvalues)/dA = identity pairing: the trace is linear; d(top)/dA = conj(v v^H)
    # under JAX's convention for gradients of real functions of complex inputs.
    g = np.asarray(ember.grad(lambda m: enp.linalg.eigvalsh(m)[-1])(HERMITIAN))
    top = np.linalg.eigh(HERMITIAN)[1][:, -1]
    assert_close(g, np.outer(top, top.conj()).conj(), rtol=1e-3, atol=1e-4)
