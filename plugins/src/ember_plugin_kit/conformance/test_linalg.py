"""Conformance checks of linear algebra: the factorisations a backend lowers generically or
overrides with its own library (LAPACK, cuSOLVER, ...), checked through what they promise —
reconstructions, orthogonality, triangularity, NumPy's eigenvalues and singular values —
rather than entry by entry, since vectors are defined only up to a phase.

Each runs under ``jit`` on the platform's device in float32, on a small stack of matrices (a
batch, as models use them), and the gradients are checked against central differences.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember_plugin_kit.conformance.checks import central_difference, on_device

RTOL = 2e-4
ATOL = 2e-4


def _on(device, f, *args):
    """``f`` run on ``device``, its results as NumPy arrays."""
    return ember.tree_util.tree_map(np.asarray, on_device(device, f, *args))


def _matrices(shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def _positive_definite(batch, n, seed=0):
    a = _matrices((batch, n, n), seed)
    return (a @ a.transpose(0, 2, 1) + n * np.eye(n, dtype=np.float32)).astype(np.float32)


def _close(got, want, rtol=RTOL, atol=ATOL):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def test_cholesky_and_a_failed_matrix(platform_device):
    a = _positive_definite(3, 5)
    a[1] = -a[1]  # not positive definite: that matrix (only) comes back as NaN
    factor = _on(platform_device, enp.linalg.cholesky, a)
    for i in (0, 2):
        _close(factor[i] @ factor[i].T, a[i], rtol=1e-4, atol=1e-3)
        np.testing.assert_array_equal(np.triu(factor[i], 1), 0)
    assert np.isnan(factor[1]).all()


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose_a", [False, True])
def test_triangular_solve(platform_device, lower, transpose_a):
    a = _matrices((2, 4, 4)) + 4 * np.eye(4, dtype=np.float32)
    a = np.tril(a) if lower else np.triu(a)
    b = _matrices((2, 4, 3), seed=1)

    def solve(a, b):
        return lax.linalg.triangular_solve(
            a, b, left_side=True, lower=lower, transpose_a=transpose_a
        )

    x = _on(platform_device, solve, a, b)
    op = a.transpose(0, 2, 1) if transpose_a else a
    _close(op @ x, b)


def test_solve_inv_det_slogdet(platform_device):
    a = _matrices((3, 6, 6)) + 3 * np.eye(6, dtype=np.float32)
    b = _matrices((3, 6, 2), seed=1)
    x, inv, det, (sign, logdet) = _on(
        platform_device,
        lambda a, b: (
            enp.linalg.solve(a, b),
            enp.linalg.inv(a),
            enp.linalg.det(a),
            enp.linalg.slogdet(a),
        ),
        a,
        b,
    )
    a64 = a.astype(np.float64)
    _close(x, np.linalg.solve(a64, b), rtol=1e-3, atol=1e-3)
    _close(inv, np.linalg.inv(a64), rtol=1e-3, atol=1e-3)
    _close(det, np.linalg.det(a64), rtol=1e-3)
    want_sign, want_logdet = np.linalg.slogdet(a64)
    np.testing.assert_array_equal(sign, want_sign)
    _close(logdet, want_logdet, rtol=1e-4)


def test_lu(platform_device):
    a = _matrices((2, 5, 5))
    lu, pivots, permutation = _on(platform_device, lax.linalg.lu, a)
    assert pivots.dtype == np.int32 and permutation.dtype == np.int32
    for i in range(2):
        lower = np.tril(lu[i], -1) + np.eye(5, dtype=np.float32)
        upper = np.triu(lu[i])
        _close(lower @ upper, a[i][permutation[i]])
        assert sorted(permutation[i]) == list(range(5))
        assert np.abs(np.tril(lu[i], -1)).max() <= 1 + 1e-6  # partial pivoting


@pytest.mark.parametrize("shape", [(2, 6, 4), (2, 4, 6)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr(platform_device, shape, mode):
    a = _matrices(shape)
    q, r = _on(platform_device, lambda a: enp.linalg.qr(a, mode=mode), a)
    m, n = shape[-2:]
    k = m if mode == "complete" else min(m, n)
    assert q.shape == (2, m, k) and r.shape == (2, k, n)
    _close(q @ r, a)
    _close(q.transpose(0, 2, 1) @ q, np.broadcast_to(np.eye(k), (2, k, k)))
    np.testing.assert_array_equal(np.tril(r, -1), 0)


def test_eigh(platform_device):
    a = _matrices((3, 6, 6))
    a = (a + a.transpose(0, 2, 1)) / 2
    w, v = _on(platform_device, enp.linalg.eigh, a)
    _close(w, np.linalg.eigvalsh(a.astype(np.float64)))
    assert (np.diff(w, axis=-1) >= 0).all()
    _close(v @ (w[..., None] * v.transpose(0, 2, 1)), a)
    _close(v.transpose(0, 2, 1) @ v, np.broadcast_to(np.eye(6), (3, 6, 6)))


@pytest.mark.parametrize("shape", [(2, 6, 4), (2, 4, 6)])
def test_svd(platform_device, shape):
    a = _matrices(shape)
    u, s, vt = _on(platform_device, lambda a: enp.linalg.svd(a, full_matrices=False), a)
    _close(s, np.linalg.svd(a.astype(np.float64), compute_uv=False))
    assert (np.diff(s, axis=-1) <= 0).all()
    _close((u * s[..., None, :]) @ vt, a)
    k = min(shape[-2:])
    _close(u.transpose(0, 2, 1) @ u, np.broadcast_to(np.eye(k), (2, k, k)))


def test_eig(platform_device):
    a = _matrices((2, 5, 5))
    w, v = _on(platform_device, enp.linalg.eig, a)
    assert w.dtype == np.complex64 and v.dtype == np.complex64
    for i in range(2):
        want = np.linalg.eigvals(a[i].astype(np.float64))
        # each computed eigenvalue next to one of NumPy's (sorting would split conjugate
        # pairs whose real parts differ in the last bit)
        distance = np.abs(w[i][:, None] - want[None, :])
        assert sorted(distance.argmin(axis=1)) == list(range(5))
        assert distance.min(axis=1).max() < 1e-3
        _close(a[i] @ v[i], v[i] * w[i][None, :], rtol=1e-3, atol=1e-3)
        _close(np.linalg.norm(v[i], axis=0), np.ones(5), rtol=1e-4)


def test_gradients_of_factorisations(platform_device):
    a = _positive_definite(1, 4)[0]
    b = _matrices((4,), seed=2)

    def through_all(a):
        sym = (a + a.T) / 2
        solved = enp.linalg.solve(a, b)
        chol = enp.linalg.cholesky(sym)
        w, _ = enp.linalg.eigh(sym)
        s = enp.linalg.svd(a, compute_uv=False)
        return solved.sum() + chol.sum() + (w * enp.arange(4.0)).sum() + s[0]

    def through_all_numpy(a):
        sym = (a + a.T) / 2
        w = np.linalg.eigvalsh(sym)
        s = np.linalg.svd(a, compute_uv=False)
        chol = np.linalg.cholesky(sym)
        return np.linalg.solve(a, b).sum() + chol.sum() + (w * np.arange(4.0)).sum() + s[0]

    grad = _on(platform_device, ember.grad(through_all), a)
    _close(grad, central_difference(through_all_numpy, a, eps=1e-3), rtol=2e-3, atol=2e-3)
