"""The cuSOLVER/cuBLAS lowerings on a real NVIDIA GPU, against NumPy and against ember's generic
linear algebra (the same computation without the override) on the same GPU. Every test skips,
with the reason, without a cuda platform. One line to run them: ``EMBER_PLATFORMS=cuda pytest
tests/plugin_cuda/test_linalg_gpu.py``."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import lax
from ember.errors import EmberError
from tests.plugin_cuda.linalg_stand_ins import STAND_INS

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


@pytest.fixture(scope="module")
def gpu():
    try:
        return ember.devices("cuda")[0]
    except EmberError as exc:
        pytest.skip(f"no cuda platform here: {str(exc).splitlines()[0]}")


@pytest.fixture(autouse=True)
def x64():
    with ember.config.option("enable_x64", True):
        yield


def tolerance(dtype):
    return 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


def random_matrix(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def positive_definite(rng, shape, dtype):
    x = random_matrix(rng, shape, dtype)
    n = shape[-1]
    return (x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)).astype(dtype)


def on_cuda(gpu, name, *args, **params):
    """The override, run on the GPU (results as NumPy arrays)."""
    prim = STAND_INS[name]
    out = ember.jit(lambda *xs: prim.bind(*xs, **params))(*[ember.device_put(a, gpu) for a in args])
    return [np.asarray(o) for o in out] if isinstance(out, (list, tuple)) else np.asarray(out)


def generic(gpu, fn, *args):
    """ember's generic linear algebra on the same GPU."""
    out = ember.jit(fn)(*[ember.device_put(a, gpu) for a in args])
    return [np.asarray(o) for o in out] if isinstance(out, (list, tuple)) else np.asarray(out)


def adjoint(x):
    return np.conj(np.swapaxes(x, -1, -2))


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_matches_numpy_and_the_generic_path(gpu, rng, dtype):
    a = positive_definite(rng, (3, 16, 16), dtype)
    got = on_cuda(gpu, "cholesky", a)
    tol = tolerance(dtype)
    np.testing.assert_allclose(got, np.linalg.cholesky(a), rtol=tol, atol=tol * 16)
    np.testing.assert_allclose(got, generic(gpu, lax.linalg.cholesky, a), rtol=tol, atol=tol * 16)


def test_cholesky_of_a_matrix_that_is_not_positive_definite_is_nan(gpu, rng):
    a = positive_definite(rng, (2, 4, 4), np.float64)
    a[1] = -a[1]
    got = on_cuda(gpu, "cholesky", a)
    # NaN in the factor's triangle, zero above it (as ember's generic path and JAX).
    assert np.isnan(got[1][np.tril_indices(4)]).all()
    assert (got[1][np.triu_indices(4, 1)] == 0).all()
    np.testing.assert_allclose(got[0], np.linalg.cholesky(a[0]), rtol=1e-10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 8, 8), (6, 4), (4, 6)])
def test_lu_reconstructs_the_matrix_and_matches_the_generic_path(gpu, rng, dtype, shape):
    a = random_matrix(rng, shape, dtype)
    lu, pivots, perm = on_cuda(gpu, "lu", a)
    m, n = shape[-2:]
    k = min(m, n)
    lower = np.tril(lu[..., :, :k], -1) + np.eye(m, k)
    upper = np.triu(lu[..., :k, :])
    permuted = np.take_along_axis(a, perm[..., :, None], axis=-2)
    tol = tolerance(dtype)
    np.testing.assert_allclose(lower @ upper, permuted, rtol=tol, atol=tol * 10)
    if np.issubdtype(dtype, np.complexfloating):
        # cuBLAS picks complex pivots by |re| + |im|, ember's generic path by |z|: the
        # factorisations may pivot differently, and each reconstructs the matrix (above).
        assert sorted(perm.reshape(-1, m)[0]) == list(range(m))
        return
    g_lu, g_pivots, g_perm = generic(gpu, lax.linalg.lu, a)
    np.testing.assert_array_equal(pivots, g_pivots)
    np.testing.assert_array_equal(perm, g_perm)
    np.testing.assert_allclose(lu, g_lu, rtol=tol, atol=tol * 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (2, 5, 5)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_qr_reconstructs_the_matrix_with_an_orthonormal_q(gpu, rng, dtype, shape, full_matrices):
    a = random_matrix(rng, shape, dtype)
    q, r = on_cuda(gpu, "qr", a, full_matrices=full_matrices)
    g_q, g_r = generic(gpu, lambda x: lax.linalg.qr(x, full_matrices=full_matrices), a)
    assert q.shape == g_q.shape and r.shape == g_r.shape
    tol = tolerance(dtype)
    np.testing.assert_allclose(q @ r, a, rtol=tol, atol=tol * 10)
    eye = np.eye(q.shape[-1])
    np.testing.assert_allclose(
        adjoint(q) @ q, np.broadcast_to(eye, q.shape[:-2] + eye.shape), atol=tol * 10
    )
    np.testing.assert_array_equal(r, np.triu(r))
    # Householder QR is unique up to the signs (phases) of r's diagonal: compare |r|.
    np.testing.assert_allclose(np.abs(r), np.abs(g_r), rtol=tol, atol=tol * 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lower", [True, False])
def test_eigh_matches_numpy_and_the_generic_path(gpu, rng, dtype, lower):
    a = random_matrix(rng, (2, 12, 12), dtype)
    a = a + adjoint(a)
    v, w = on_cuda(gpu, "eigh", a, lower=lower)
    tol = tolerance(dtype)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), rtol=tol, atol=tol * 10)
    _, g_w = generic(gpu, lax.linalg.eigh, a)
    np.testing.assert_allclose(w, g_w, rtol=tol, atol=tol * 10)
    np.testing.assert_allclose((v * w[..., None, :]) @ adjoint(v), a, rtol=tol, atol=tol * 50)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (2, 40, 36)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd_matches_numpy_and_the_generic_path(gpu, rng, dtype, shape, full_matrices):
    a = random_matrix(rng, shape, dtype)
    s, u, vt = on_cuda(gpu, "svd", a, full_matrices=full_matrices, compute_uv=True)
    tol = tolerance(dtype)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=tol, atol=tol * 10)
    g_u, g_s, g_vt = generic(gpu, lambda x: lax.linalg.svd(x, full_matrices=full_matrices), a)
    assert (u.shape, vt.shape) == (g_u.shape, g_vt.shape)
    np.testing.assert_allclose(s, g_s, rtol=tol, atol=tol * 10)
    k = s.shape[-1]
    rebuilt = (u[..., :, :k] * s[..., None, :]) @ vt[..., :k, :]
    np.testing.assert_allclose(rebuilt, a, rtol=tol, atol=tol * 50)


def test_svd_of_a_large_matrix_takes_gesvd(gpu, rng):
    a = random_matrix(rng, (1030, 40), np.float64)
    (s,) = on_cuda(gpu, "svd", a, full_matrices=False, compute_uv=False)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize(
    ("transpose_a", "conjugate_a"), [(False, False), (True, False), (True, True), (False, True)]
)
def test_triangular_solve_matches_the_generic_path(
    gpu, rng, dtype, left_side, transpose_a, conjugate_a
):
    a = np.tril(random_matrix(rng, (2, 6, 6), dtype)) + 6 * np.eye(6, dtype=dtype)
    b = random_matrix(rng, (2, 6, 3) if left_side else (2, 3, 6), dtype)
    params = dict(
        left_side=left_side,
        lower=True,
        transpose_a=transpose_a,
        conjugate_a=conjugate_a,
        unit_diagonal=False,
    )
    x = on_cuda(gpu, "triangular_solve", a, b, **params)
    op = np.swapaxes(a, -1, -2) if transpose_a else a
    op = np.conj(op) if conjugate_a else op
    tol = tolerance(dtype)
    np.testing.assert_allclose(op @ x if left_side else x @ op, b, rtol=tol, atol=tol * 10)
    g_x = generic(gpu, lambda p, q: lax.linalg.triangular_solve(p, q, **params), a, b)
    np.testing.assert_allclose(x, g_x, rtol=tol, atol=tol * 10)
