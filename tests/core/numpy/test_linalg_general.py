"""eig, eigvals, lstsq, cond, multi_dot, tensorinv, tensorsolve and roots against NumPy, with
jit, vmap and numerical derivatives."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import errors
from ember._src.numpy.linalg_tensor import _chain_order
from tests.core.util import assert_close, numerical_gradient

rng = np.random.default_rng(0)


def _random(shape, dtype=np.float32):
    x = rng.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dtype)


def _assert_same_multiset(actual, expected, tol):
    """Eigenvalues come in no particular order: pair each expected one with its nearest
    unused actual one."""
    remaining = list(np.asarray(actual).ravel())
    assert len(remaining) == np.size(expected)
    for value in np.asarray(expected).ravel():
        distances = [abs(r - value) for r in remaining]
        nearest = int(np.argmin(distances))
        assert distances[nearest] <= tol * max(1.0, abs(value)), (actual, expected)
        remaining.pop(nearest)


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
        _assert_same_multiset(w[index], np.linalg.eigvals(a[index].astype(np.complex128)), tol)


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
        _assert_same_multiset(w[index], np.linalg.eigvals(a[index].astype(np.float64)), 1e-3)
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
        _assert_same_multiset(found, np.linalg.eigvals(base.astype(np.float64)), 1e-4)
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
# roots


@pytest.mark.parametrize(
    "p",
    [
        [1.0, -3.0, 2.0],
        [2.0, 0.0, 0.0, 2.0],  # cube roots of -1
        [0.0, 0.0, 1.0, 2.0, 5.0, 0.0, 0.0],  # leading zeros stripped, trailing give zero roots
        [1.0, -6.0, 11.0, -6.0],
        [1, 0, 4],  # integers
        [3.0],
        [0.0, 0.0],
        [],
    ],
)
def test_roots_matches_numpy(p):
    found = np.asarray(enp.roots(np.array(p)))
    assert found.dtype == np.complex64
    _assert_same_multiset(found, np.roots(p), 1e-4)


def test_roots_without_stripping():
    p = np.array([0.0, 1.0, 2.0, 3.0, 0.0], np.float32)
    found = np.asarray(ember.jit(lambda q: enp.roots(q, strip_zeros=False))(p))
    assert found.shape == (4,) and np.isnan(found[-1])  # one leading zero: one undefined root
    _assert_same_multiset(found[:-1], np.roots(p), 1e-5)
    assert np.isnan(np.asarray(enp.roots(np.zeros(3), strip_zeros=False))).all()


def test_roots_gradient():
    # a simple root r of p moves by dr/dp_i = -r^(n-1-i) / p'(r)
    p = np.array([1.0, -3.0, 2.0], np.float32)
    largest = ember.jit(ember.grad(lambda q: enp.max(enp.real(enp.roots(q, strip_zeros=False)))))
    assert_close(largest(p), [-4.0, -2.0, -1.0], rtol=1e-4)


def test_roots_errors():
    with pytest.raises(errors.ConcretizationTypeError, match="strip_zeros=False"):
        ember.jit(enp.roots)(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="vector"):
        enp.roots(np.ones((2, 2)))


# --------------------------------------------------------------------------------------------
# lstsq


@pytest.mark.parametrize(
    "shape, dtype, vector",
    [
        ((6, 3), np.float32, True),
        ((3, 6), np.complex64, False),
        ((4, 4), np.float32, False),
        ((1, 1), np.complex64, True),
        ((6, 3), np.complex64, False),
    ],
)
def test_lstsq_matches_numpy(shape, dtype, vector):
    a = _random(shape, dtype)
    b = _random((shape[0],) if vector else (shape[0], 2), dtype)
    x, resid, rank, s = enp.linalg.lstsq(a, b)
    want_x, want_resid, want_rank, want_s = np.linalg.lstsq(a, b)
    assert_close(x, want_x, rtol=1e-3, atol=1e-4)
    assert int(rank) == want_rank and np.asarray(rank).dtype == np.int32
    assert_close(s, want_s, rtol=1e-4, atol=1e-5)
    assert np.asarray(s).dtype == np.float32 and np.asarray(resid).dtype == np.float32
    assert np.asarray(resid).shape == (1 if vector else 2,)  # JAX: always computed
    if want_resid.size:
        assert_close(resid, want_resid, rtol=1e-3, atol=1e-4)
    else:
        assert_close(resid, np.zeros(np.asarray(resid).shape), atol=1e-4)
    numpy_resid = enp.linalg.lstsq(a, b, numpy_resid=True)[1]
    assert np.asarray(numpy_resid).shape == want_resid.shape


def test_lstsq_rank_deficient_and_rcond():
    a = np.outer(np.arange(1.0, 6.0), [1.0, 2.0, 3.0]).astype(np.float32)
    b = _random((5,))
    x, _, rank, _ = enp.linalg.lstsq(a, b)
    assert int(rank) == 1
    assert_close(x, np.linalg.lstsq(a, b)[0], rtol=1e-3, atol=1e-5)
    tall = _random((6, 3)) * np.array([1.0, 1.0, 1e-3], np.float32)
    assert int(enp.linalg.lstsq(tall, _random(6), rcond=1e-2)[2]) == 2
    assert int(enp.linalg.lstsq(tall, _random(6), rcond=-1)[2]) == 3


def test_lstsq_empty_and_errors():
    x, resid, rank, s = enp.linalg.lstsq(np.zeros((0, 3), np.float32), np.zeros(0, np.float32))
    assert np.asarray(x).shape == (3,) and np.asarray(s).shape == (0,) and int(rank) == 0
    assert_close(resid, [0.0])
    with pytest.raises(ValueError, match="rows"):
        enp.linalg.lstsq(np.ones((3, 2)), np.ones(4))
    with pytest.raises(ValueError, match="matrix"):
        enp.linalg.lstsq(np.ones((2, 3, 2)), np.ones(3))
    with pytest.raises(ValueError, match="vector or a matrix"):
        enp.linalg.lstsq(np.ones((3, 2)), np.ones((3, 1, 1)))
    with pytest.raises(errors.ConcretizationTypeError, match="numpy_resid"):
        ember.jit(lambda a, b: enp.linalg.lstsq(a, b, numpy_resid=True))(
            np.ones((3, 2)), np.ones(3)
        )


def test_lstsq_under_jit_and_gradients():
    a, b = _random((5, 3)), _random((5, 2))
    jitted = ember.jit(enp.linalg.lstsq)(a, b)
    for got, want in zip(jitted, np.linalg.lstsq(a, b)):
        assert_close(got, want, rtol=1e-3, atol=1e-4)
    weights = _random((3, 2))

    def loss(module, m, rhs):
        x, resid, _, s = module.linalg.lstsq(m, rhs)
        return module.sum(x * weights) + module.sum(resid) + module.sum(s**2)

    grads = ember.jit(ember.grad(lambda m, rhs: loss(enp, m, rhs), argnums=(0, 1)))(a, b)
    for argnum, got in enumerate(grads):
        expected = numerical_gradient(lambda m, rhs: loss(np, m, rhs), [a, b], argnum=argnum)
        assert_close(got, expected, rtol=2e-3, atol=2e-3)


# --------------------------------------------------------------------------------------------
# cond


ORDERS = [None, 1, -1, 2, -2, np.inf, -np.inf, "fro", "nuc"]


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_cond_matches_numpy(dtype):
    a = _random((2, 4, 4), dtype)
    # one compiled program for all orders
    got = ember.jit(lambda x: [enp.linalg.cond(x, p) for p in ORDERS])(a)
    for p, value in zip(ORDERS, got):
        assert np.asarray(value).dtype == np.float32
        assert_close(value, np.linalg.cond(a, p), rtol=1e-3)


def test_cond_special_values_and_errors():
    tall = _random((5, 3))
    assert_close(enp.linalg.cond(tall), np.linalg.cond(tall), rtol=1e-4)
    assert np.isinf(np.asarray(enp.linalg.cond(np.ones((3, 3), np.float32), 1)))
    with_nan = np.eye(3, dtype=np.float32)
    with_nan[0, 1] = np.nan
    assert np.isnan(np.asarray(enp.linalg.cond(with_nan, "fro")))
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        enp.linalg.cond(tall, 1)
    with pytest.raises(ValueError, match="matrix"):
        enp.linalg.cond(np.ones(3))
    with pytest.raises(ValueError, match="empty"):
        enp.linalg.cond(np.ones((0, 0)))
    with pytest.raises(ValueError, match="p must be"):
        enp.linalg.cond(tall, 3)


# --------------------------------------------------------------------------------------------
# multi_dot, tensorinv, tensorsolve


def test_chain_order_is_optimal():
    # (10x100)(100x5)(5x50): (AB)C costs 7500, A(BC) 75000
    assert _chain_order([10, 100, 5, 50])[0][2] == 1
    assert _chain_order([50, 5, 100, 10])[0][2] == 0


@pytest.mark.parametrize(
    "shapes",
    [
        [(3, 4), (4, 5)],
        [(3,), (3, 10), (10, 2), (2, 7), (7,)],
        [(6, 2), (2, 8), (8,)],
        [(4,), (4,)],
    ],
)
def test_multi_dot_matches_numpy(shapes):
    arrays = [_random(shape) for shape in shapes]
    assert_close(enp.linalg.multi_dot(arrays), np.linalg.multi_dot(arrays), rtol=1e-4)


def test_multi_dot_gradient():
    arrays = [_random(shape) for shape in [(3,), (3, 10), (10, 2), (2,)]]
    grads = ember.grad(lambda xs: enp.linalg.multi_dot(xs))(arrays)
    for got, want in zip(grads, ember.grad(_left_to_right)(arrays)):
        assert_close(got, want, rtol=1e-4, atol=1e-5)


def _left_to_right(arrays):
    out = arrays[0]
    for x in arrays[1:]:
        out = enp.matmul(out, x)
    return out


def test_multi_dot_errors():
    with pytest.raises(ValueError, match="at least two"):
        enp.linalg.multi_dot([np.ones((2, 2))])
    with pytest.raises(ValueError, match="matrices"):
        enp.linalg.multi_dot([np.ones((2, 2)), np.ones(2), np.ones((2, 2))])
    with pytest.raises(ValueError, match="chain"):
        enp.linalg.multi_dot([np.ones((2, 3)), np.ones((2, 2))])


@pytest.mark.parametrize("shape, ind", [((4, 6, 8, 3), 2), ((4, 6, 24), 2), ((6, 2, 3), 1)])
def test_tensorinv_matches_numpy(shape, ind):
    a = _random(shape)
    got = np.asarray(enp.linalg.tensorinv(a, ind))
    want = np.linalg.tensorinv(a.astype(np.float64), ind)
    assert got.shape == want.shape
    assert_close(got, want, rtol=1e-3, atol=1e-3 * np.abs(want).max())


def test_tensorsolve_matches_numpy():
    a, b = _random((6, 4, 2, 3, 4)), _random((6, 4))
    assert_close(enp.linalg.tensorsolve(a, b), np.linalg.tensorsolve(a, b), rtol=1e-3, atol=1e-3)
    moved = np.moveaxis(a, (2, 3, 4), (0, 1, 2))
    assert_close(
        enp.linalg.tensorsolve(moved, b, axes=(0, 1, 2)),
        np.linalg.tensorsolve(moved, b, axes=(0, 1, 2)),
        rtol=1e-3,
        atol=1e-3,
    )


def test_tensor_errors():
    with pytest.raises(ValueError, match="positive"):
        enp.linalg.tensorinv(np.ones((2, 2)), 0)
    with pytest.raises(ValueError, match="as many elements"):
        enp.linalg.tensorinv(np.ones((4, 6, 8, 4)), 2)
    with pytest.raises(ValueError, match="as many unknowns"):
        enp.linalg.tensorsolve(np.ones((6, 4, 2, 3, 5)), np.ones((6, 4)))
    with pytest.raises(ValueError, match="must match"):
        enp.linalg.tensorsolve(np.ones((6, 4, 24)), np.ones((4, 6)))


def test_lstsq_jvp_of_complex_wide_system():
    # the minimum-norm solution's derivative (the pseudo-inverse's, with its null-space terms)
    a, da = _random((3, 5), np.complex64), _random((3, 5), np.complex64)
    b, db = _random((3,), np.complex64), _random((3,), np.complex64)
    _, tangent = ember.jit(
        lambda *args: ember.jvp(lambda m, r: enp.linalg.lstsq(m, r)[0], args[:2], args[2:])
    )(a, b, da, db)
    eps = 1e-4
    a64, b64 = a.astype(np.complex128), b.astype(np.complex128)
    plus = np.linalg.lstsq(a64 + eps * da, b64 + eps * db)[0]
    minus = np.linalg.lstsq(a64 - eps * da, b64 - eps * db)[0]
    assert_close(tangent, (plus - minus) / (2 * eps), rtol=1e-3, atol=1e-4)


# --------------------------------------------------------------------------------------------
# enable_x64: eig, eigvals, roots and the least-squares fits in float64 and complex128


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
            _assert_same_multiset(w[index], np.linalg.eigvals(a[index]), 1e-10)
            eigenvalues = enp.linalg.eigvals(a[index])
            _assert_same_multiset(eigenvalues, np.linalg.eigvals(a[index]), 1e-10)
        found = enp.roots(p)
        assert np.asarray(found).dtype == np.complex128
        _assert_same_multiset(found, np.roots(p), 1e-10)
        traced = ember.jit(lambda q: enp.roots(q, strip_zeros=False))(np.concatenate([[0], p]))
        _assert_same_multiset(np.asarray(traced)[:4], np.roots(p), 1e-10)
        # integer coefficients: int32 becomes float32 (so complex64), as in JAX
        assert np.asarray(enp.roots(np.array([1, -3, 2], np.int32))).dtype == np.complex64


def test_polyfit_of_complex_data_matches_numpy():
    # the solve must use u^H (u^T gave wrong coefficients) and residuals are real
    x = np.arange(5.0) + 1j * np.array([0, 1, 0, -1, 2.0])
    y = np.array([1, 2, 5, 10, 3.0]) + 1j * np.arange(5)
    with ember.config.option("enable_x64", True):
        got = enp.polyfit(x, y, 2, full=True)
        want = np.polyfit(x, y, 2, full=True)
        for g, w in zip(got[:4], want[:4]):
            assert_close(g, w, rtol=1e-9, atol=1e-12)
        assert np.asarray(got[1]).dtype == np.float64
        assert np.asarray(got[2]).dtype == np.int64  # JAX's rank dtype under x64
        assert np.asarray(enp.linalg.lstsq(x[:, None], y)[2]).dtype == np.int64


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
