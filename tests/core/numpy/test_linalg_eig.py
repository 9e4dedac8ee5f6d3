"""eig and eigvals against NumPy (eigenvalues in any order, eigenvectors in a fixed gauge),
with jit, vmap, numerical derivatives, float64, complex128 and empty matrices."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from tests.core.util import assert_close, assert_same_multiset, numerical_gradient

rng = np.random.default_rng(0)


def _random(shape, dtype=np.float32):
    x = rng.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dtype)


def _check_eigenpairs(a, w, v, tol):
    a, w, v = np.asarray(a), np.asarray(w), np.asarray(v)
    assert w.dtype == np.complex64 and v.dtype == np.complex64
    assert w.shape == a.shape[:-1] and v.shape == a.shape
    scale = max(1.0, np.abs(a).max())
    assert np.abs(a @ v - v * w[..., None, :]).max() <= tol * scale
    assert_close(np.linalg.norm(v, axis=-2), np.ones(w.shape), atol=1e-5)
    # the gauge: each column's largest entry is real and positive
    largest = np.take_along_axis(v, np.abs(v).argmax(axis=-2)[..., None, :], axis=-2)
    assert np.abs(largest.imag).max() <= 1e-6 and (largest.real > 0).all()
    for index in np.ndindex(a.shape[:-2]):
        assert_same_multiset(w[index], np.linalg.eigvals(a[index].astype(np.complex128)), tol)


# --------------------------------------------------------------------------------------------
# eig / eigvals


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 3, 8])
def test_eig_of_random_stacks_matches_numpy(n):
    # real and complex inputs share the complex working dtype (and so one compiled program)
    for a in (_random((3, n, n)), _random((3, n, n), np.complex64)):
        w, v = enp.linalg.eig(a)
        _check_eigenpairs(a, w, v, tol=1e-4)


def _special_matrices():
    cyclic = np.roll(np.eye(4), 1, axis=0)  # roots of unity: a classic stall for shifted QR
    rotation_and_jordan = np.zeros((4, 4))
    rotation_and_jordan[:2, :2] = [[0.0, -1.0], [1.0, 0.0]]  # eigenvalues +-i
    rotation_and_jordan[2:, 2:] = [[2.0, 1.0], [0.0, 2.0]]  # a defective double eigenvalue
    triangular = np.triu(rng.normal(size=(4, 4)))
    companion = np.diag(np.ones(3), -1)
    companion[0] = [-2.0, 1.0, 3.0, -1.5]
    scaled = np.diag([1e4, 1.0, 1e-4, -3.0]) + np.triu(np.ones((4, 4)), 1)
    matrices = [cyclic, rotation_and_jordan, triangular, companion, scaled, np.eye(4)]
    return np.stack(matrices + [np.zeros((4, 4))]).astype(np.float32)


def test_eig_of_special_matrices():
    a = _special_matrices()
    w, v = enp.linalg.eig(a)
    w, v = np.asarray(w), np.asarray(v)
    assert np.isfinite(w).all() and np.isfinite(v).all()
    for index in range(len(a)):
        # the Jordan block's double eigenvalue is only determined to sqrt(eps)
        assert_same_multiset(w[index], np.linalg.eigvals(a[index].astype(np.float64)), 1e-3)
    assert np.abs(a @ v - v * w[:, None, :]).max() <= 1e-3
    assert_close(w[1], [1j, -1j, 2, 2], atol=1e-3)  # order of the decoupled blocks
    assert_close(w[-2], np.ones(4), atol=0)  # identity: nothing to iterate


@pytest.mark.slow
def test_eig_edge_cases():
    w, v = enp.linalg.eig(np.zeros((2, 0, 0), np.float32))
    assert np.asarray(w).shape == (2, 0) and np.asarray(v).shape == (2, 0, 0)
    assert np.asarray(w).dtype == np.complex64
    assert_close(enp.linalg.eigvals(np.array([[3]])), [3 + 0j])
    assert np.asarray(enp.linalg.eigvals(np.eye(3, dtype=np.int32))).dtype == np.complex64
    # entries whose squares overflow (or underflow) float32
    base = _random((3, 3))
    for scale in (1e25, 1e-25):
        found = np.asarray(enp.linalg.eigvals(base * np.float32(scale))) / scale
        assert_same_multiset(found, np.linalg.eigvals(base.astype(np.float64)), 1e-4)
    # nan in, nan out (the iteration budget ends the loop)
    assert np.isnan(np.asarray(enp.linalg.eigvals(np.full((3, 3), np.nan, np.float32)))).all()


@pytest.mark.parametrize("fn", [enp.linalg.eig, enp.linalg.eigvals])
def test_eig_rejects_bad_shapes(fn):
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        fn(np.ones((3, 2), np.float32))
    with pytest.raises(ValueError, match="matrix"):
        fn(np.ones(3, np.float32))


def test_eig_under_jit_and_vmap():
    a = _random((3, 3, 3))
    w, v = ember.jit(enp.linalg.eig)(a)
    eager_w, eager_v = enp.linalg.eig(a)
    assert_close(w, eager_w, rtol=1e-5, atol=1e-5)
    assert_close(v, eager_v, rtol=1e-4, atol=1e-4)
    looped = np.stack([np.asarray(enp.linalg.eigvals(m)) for m in a])
    assert_close(ember.vmap(enp.linalg.eigvals)(a), looped, rtol=1e-5, atol=1e-5)


def _cube_of_moduli(eigenvalues, module):
    return module.sum(module.abs(eigenvalues) ** 3)


def test_eigvals_gradient_matches_finite_differences():
    a = _random((4, 4))  # distinct eigenvalues (a complex pair among them)
    grad = ember.jit(ember.grad(lambda m: _cube_of_moduli(enp.linalg.eigvals(m), enp)))(a)
    expected = numerical_gradient(
        lambda m: _cube_of_moduli(np.linalg.eigvals(m), np), [a], eps=1e-4
    )
    assert_close(grad, expected, rtol=2e-3, atol=2e-3)


def test_eigvals_jvp_of_complex_matrix():
    a, da = _random((3, 3), np.complex64), _random((3, 3), np.complex64)
    _, tangent = ember.jit(
        lambda m, dm: ember.jvp(lambda x: enp.linalg.eigvals(x) ** 2, (m,), (dm,))
    )(a, da)
    # with v the eigenvectors, dw = diag(V^-1 dA V); compare as sums of powers (order-free)
    eps = 1e-5
    plus = np.linalg.eigvals(a.astype(np.complex128) + eps * da)
    minus = np.linalg.eigvals(a.astype(np.complex128) - eps * da)
    expected = (np.sum(plus**2) - np.sum(minus**2)) / (2 * eps)
    assert_close(np.sum(np.asarray(tangent)), expected, rtol=1e-3, atol=1e-3)


def _sort_key(w, module):
    # a conjugate pair's real parts agree only to rounding: mix in the imaginary parts
    return module.real(w) + 0.37 * module.imag(w)


def _gauge_fixed_eigenvectors(a):
    """NumPy's eigenvectors in ember's gauge (largest entry real, positive), sorted by
    _sort_key."""
    w, v = np.linalg.eig(a)
    v = v[:, np.argsort(_sort_key(w, np))]
    largest = v[np.abs(v).argmax(axis=0), np.arange(v.shape[1])]
    return v * (np.abs(largest) / largest)


def test_eigenvector_gradient_matches_finite_differences():
    a = _random((4, 4))
    weights = _random((4, 4)) + 1j * _random((4, 4))

    def loss(m):
        w, v = enp.linalg.eig(m)
        order = enp.argsort(_sort_key(w, enp))
        return enp.real(enp.sum(v[:, order] * weights))

    grad = ember.jit(ember.grad(loss))(a)
    expected = numerical_gradient(
        lambda m: np.real(np.sum(_gauge_fixed_eigenvectors(m) * weights)), [a], eps=1e-5
    )
    assert_close(grad, expected, rtol=2e-3, atol=2e-3)


# --------------------------------------------------------------------------------------------
# enable_x64: eig and eigvals (with roots, which solves an eigenproblem) in float64 and complex128


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_x64_eig_eigvals_and_roots(dtype):
    a = _random((2, 4, 4), dtype)
    p = _random((5,), dtype)
    with ember.config.option("enable_x64", True):
        w, v = enp.linalg.eig(a)
        assert np.asarray(w).dtype == np.complex128 and np.asarray(v).dtype == np.complex128
        a, w, v = np.asarray(a), np.asarray(w), np.asarray(v)
        assert np.abs(a @ v - v * w[..., None, :]).max() < 1e-12 * np.abs(a).max()
        for index in range(2):
            assert_same_multiset(w[index], np.linalg.eigvals(a[index]), 1e-10)
            eigenvalues = enp.linalg.eigvals(a[index])
            assert_same_multiset(eigenvalues, np.linalg.eigvals(a[index]), 1e-10)
        found = enp.roots(p)
        assert np.asarray(found).dtype == np.complex128
        assert_same_multiset(found, np.roots(p), 1e-10)
        traced = ember.jit(lambda q: enp.roots(q, strip_zeros=False))(np.concatenate([[0], p]))
        assert_same_multiset(np.asarray(traced)[:4], np.roots(p), 1e-10)
        # integer coefficients: int32 becomes float32 (so complex64), as in JAX
        assert np.asarray(enp.roots(np.array([1, -3, 2], np.int32))).dtype == np.complex64


@pytest.mark.parametrize("shape", [(0, 0), (3, 0, 0), (0, 2, 2)])
def test_empty_eig_eigvals_cond_and_lstsq(shape):
    a = np.zeros(shape, np.float32)
    w, v = enp.linalg.eig(a)
    assert np.asarray(w).shape == shape[:-1] and np.asarray(v).shape == shape
    assert np.asarray(enp.linalg.eigvals(a)).dtype == np.complex64
    if shape == (0, 2, 2):  # JAX: an empty stack has an empty stack of condition numbers
        assert np.asarray(enp.linalg.cond(a)).shape == (0,)
        assert np.asarray(enp.linalg.cond(a, 1)).shape == (0,)
    else:  # JAX: the condition number of an empty matrix is an error
        with pytest.raises(ValueError, match="empty"):
            enp.linalg.cond(a)
    if len(shape) == 2:
        x, resid, rank, s = enp.linalg.lstsq(a, a)
        assert np.asarray(x).shape == (0, 0) and int(rank) == 0 and np.asarray(s).shape == (0,)
