"""ember.scipy.linalg's Schur forms against SciPy: schur (real quasi-triangular and complex
triangular), rsf2csf and solve_sylvester (Bartels-Stewart and eigendecomposition), with
JAX's answers pinned where JAX departs from SciPy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl

import ember
from ember.scipy import linalg
from tests.core.util import assert_close

RNG = np.random.default_rng(7)


def _matrix(n, dtype):
    a = RNG.normal(size=(n, n))
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * RNG.normal(size=(n, n))
    return a.astype(dtype)


def _tolerance(dtype):
    return 1e-4 if np.finfo(dtype).bits <= 32 else 1e-10


def _assert_same_spectrum(actual, expected, tol):
    """Each eigenvalue has a partner within tol (sorting is unstable for conjugate pairs)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    distance = np.abs(actual[:, None] - expected[None, :])
    assert distance.min(axis=0).max() <= tol and distance.min(axis=1).max() <= tol


def _check_schur(a, t, z, quasi):
    a, t, z = (np.asarray(x) for x in (a, t, z))
    tol = _tolerance(t.dtype) * max(1, np.abs(a).max())
    n = a.shape[-1]
    assert_close(z @ t @ z.conj().T, a, atol=tol, rtol=0)
    assert_close(z.conj().T @ z, np.eye(n), atol=_tolerance(t.dtype), rtol=0)
    assert np.all(np.tril(t, -2) == 0)
    subdiagonal = np.diagonal(t, -1)
    if quasi:
        # 2 x 2 blocks never touch: no two consecutive subdiagonal entries are nonzero
        assert not np.any((subdiagonal[1:] != 0) & (subdiagonal[:-1] != 0))
        # each remaining block holds a complex conjugate pair, in LAPACK's standard form:
        # equal diagonal entries, off-diagonal entries of opposite signs
        for i in np.flatnonzero(subdiagonal):
            block = t[i : i + 2, i : i + 2]
            assert np.abs(np.linalg.eigvals(block).imag).min() > 0
            assert block[0, 0] == block[1, 1] and block[0, 1] * block[1, 0] < 0
    else:
        assert np.all(subdiagonal == 0)
    eigenvalues = np.linalg.eigvals(np.asarray(t, np.complex128))
    _assert_same_spectrum(eigenvalues, sl.eigvals(a.astype(np.complex128)), 10 * tol)


@pytest.mark.parametrize("n", [1, 2, 3, 6])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
@pytest.mark.parametrize("output", ["real", "complex"])
def test_schur_reconstructs_and_matches_scipy_eigenvalues(n, dtype, output):
    a = _matrix(n, dtype)
    t, z = linalg.schur(a, output=output)
    real = output == "real" and not np.issubdtype(dtype, np.complexfloating)
    # as JAX: output='complex' (or a complex input) gives a complex triangular form
    assert t.dtype == (np.float32 if real else np.complex64)
    assert z.dtype == t.dtype
    _check_schur(a, t, z, quasi=real)


def test_schur_float64_and_jaxs_example():
    with ember.config.option("enable_x64", True):
        a = _matrix(7, np.float64)
        t, z = linalg.schur(a)
        assert t.dtype == np.float64
        _check_schur(a, t, z, quasi=True)
    # JAX's documented example: one real eigenvalue and one complex pair
    a = np.array([[0.0, 3.0, 3.0], [0.0, 1.0, 2.0], [2.0, 0.0, 1.0]], np.float32)
    t, z = linalg.schur(a)
    _check_schur(a, t, z, quasi=True)
    assert_close(np.asarray(t)[0, 0], 3.7563214, rtol=1e-5)
    assert np.asarray(t)[2, 1] != 0


def test_schur_of_special_matrices():
    # symmetric: real eigenvalues, so the real form is triangular (diagonal here)
    s = RNG.normal(size=(5, 5)).astype(np.float32)
    s = s + s.T
    t, z = linalg.schur(s)
    _check_schur(s, t, z, quasi=True)
    assert np.all(np.diagonal(np.asarray(t), -1) == 0)
    # a rotation: a single complex pair; a triangular matrix: already in Schur form
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]], np.float32)
    t, z = linalg.schur(rotation)
    _check_schur(rotation, t, z, quasi=True)
    upper = np.triu(RNG.normal(size=(4, 4))).astype(np.float32)
    t, z = linalg.schur(upper)
    _check_schur(upper, t, z, quasi=True)
    # rank one: the Hessenberg reduction meets nearly reduced columns (subnormal squares)
    ones = np.ones((6, 6), np.float32)
    t, z = linalg.schur(ones)
    _check_schur(ones, t, z, quasi=True)
    zeros = np.zeros((3, 3), np.float32)
    t, z = linalg.schur(zeros)
    _check_schur(zeros, t, z, quasi=True)


def test_schur_batches_and_vmaps():
    a = RNG.normal(size=(2, 3, 4, 4)).astype(np.float32)
    t, z = linalg.schur(a)
    assert t.shape == a.shape
    for index in np.ndindex(2, 3):
        _check_schur(a[index], np.asarray(t)[index], np.asarray(z)[index], quasi=True)
    tv, _ = ember.vmap(linalg.schur)(a[0])
    assert_close(tv, np.asarray(t)[0], atol=1e-6, rtol=0)
    tj, _ = ember.jit(linalg.schur, static_argnums=1)(a[0, 0], "complex")
    _check_schur(a[0, 0], tj, _, quasi=False)


def test_schur_errors():
    with pytest.raises(ValueError, match="'output' to be either 'real' or 'complex'"):
        linalg.schur(np.eye(2), output="other")
    with pytest.raises(ValueError):
        linalg.schur(np.ones((2, 3)))


@pytest.mark.parametrize("n", [1, 3, 5])
def test_rsf2csf_matches_scipy(n):
    a = _matrix(n, np.float32)
    t, z = linalg.schur(a)
    tc, zc = linalg.rsf2csf(t, z)
    assert tc.dtype == np.complex64 and zc.dtype == np.complex64
    _check_schur(a, tc, zc, quasi=False)
    # from SciPy's own real Schur form, the same triangle as SciPy's conversion
    t0, z0 = sl.schur(a.astype(np.float64))
    expected_t, expected_z = sl.rsf2csf(t0, z0)
    tc, zc = linalg.rsf2csf(t0.astype(np.float32), z0.astype(np.float32))
    assert_close(np.abs(np.asarray(tc)), np.abs(expected_t), atol=1e-4, rtol=1e-4)
    assert_close(np.abs(np.asarray(zc)), np.abs(expected_z), atol=1e-4, rtol=1e-4)


def test_rsf2csf_batches_and_checks_shapes():
    a = RNG.normal(size=(3, 4, 4)).astype(np.float32)
    t, z = linalg.schur(a)
    tc, zc = linalg.rsf2csf(t, z)
    for i in range(3):
        _check_schur(a[i], np.asarray(tc)[i], np.asarray(zc)[i], quasi=False)
    with pytest.raises(ValueError, match="'T' must be square"):
        linalg.rsf2csf(np.ones((2, 3)), np.eye(2))
    with pytest.raises(ValueError, match="shapes must match"):
        linalg.rsf2csf(np.eye(2), np.eye(3))


@pytest.mark.parametrize("method", ["schur", "eigen"])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_solve_sylvester_matches_scipy(method, dtype):
    a, b = _matrix(4, dtype), _matrix(3, dtype)
    c = RNG.normal(size=(4, 3)).astype(dtype)
    x = linalg.solve_sylvester(a, b, c, method=method)
    assert x.dtype == dtype
    assert_close(x, sl.solve_sylvester(a, b, c), atol=1e-3, rtol=1e-3)
    x = np.asarray(x)
    assert_close(a @ x + x @ b, c, atol=1e-3, rtol=0)


def test_solve_sylvester_float64_integers_and_batches():
    with ember.config.option("enable_x64", True):
        a, b = _matrix(5, np.float64), _matrix(2, np.float64)
        c = RNG.normal(size=(5, 2))
        assert_close(linalg.solve_sylvester(a, b, c), sl.solve_sylvester(a, b, c), rtol=1e-10)
    # JAX's documented example: integer inputs give a float solution (the identity)
    x = linalg.solve_sylvester([[1, 2], [3, 4]], [[5, 6], [7, 8]], [[6, 8], [10, 12]])
    assert x.dtype == np.float32
    assert_close(x, np.eye(2), atol=1e-5, rtol=0)
    a = RNG.normal(size=(2, 3, 3)).astype(np.float32)
    b = RNG.normal(size=(2, 2)).astype(np.float32)  # broadcast across the batch
    c = RNG.normal(size=(2, 3, 2)).astype(np.float32)
    x = linalg.solve_sylvester(a, b, c)
    for i in range(2):
        assert_close(x[i], sl.solve_sylvester(a[i], b, c[i]), atol=1e-4, rtol=1e-4)
    mapped = ember.vmap(linalg.solve_sylvester, in_axes=(0, None, 0))(a, b, c)
    assert_close(mapped, x, atol=1e-5, rtol=1e-5)


def test_solve_sylvester_singular_and_errors():
    # A and -B share an eigenvalue: as JAX, all NaN
    x = linalg.solve_sylvester(np.eye(2), -np.eye(2), np.ones((2, 2)))
    assert np.all(np.isnan(np.asarray(x)))
    with pytest.raises(ValueError, match="Incompatible shapes"):
        linalg.solve_sylvester(np.eye(2), np.eye(3), np.ones((2, 2)))
    with pytest.raises(ValueError, match="Unrecognized method"):
        linalg.solve_sylvester(np.eye(2), np.eye(2), np.ones((2, 2)), method="kron")
