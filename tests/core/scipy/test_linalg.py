"""ember.scipy.linalg and ember.lax.linalg against SciPy (and JAX's answers where JAX departs
from SciPy): triangular, LU, Cholesky and tridiagonal solves, expm, eigh, qr, svd, polar,
hessenberg and the special matrices, with derivatives checked numerically."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl

import ember
import ember.numpy as enp
from ember.scipy import linalg
from ember.test_util import check_grads
from tests.core.util import assert_close

RNG = np.random.default_rng(3)
A = RNG.normal(size=(4, 4)).astype(np.float32)
B = RNG.normal(size=(4, 2)).astype(np.float32)
SPD = (A @ A.T + 4 * np.eye(4)).astype(np.float32)
WIDE = RNG.normal(size=(3, 5)).astype(np.float32)


def _close(actual, expected, rtol=1e-4, atol=1e-5):
    assert_close(actual, expected, rtol=rtol, atol=atol)


# --------------------------------------------------------------------------------------------
# Triangular solves


@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("trans", [0, 1, 2, "N", "T", "C"])
@pytest.mark.parametrize("unit_diagonal", [False, True])
def test_solve_triangular_matches_scipy(lower, trans, unit_diagonal):
    kwargs = dict(trans=trans, lower=lower, unit_diagonal=unit_diagonal)
    # the other triangle (and, with unit_diagonal, the diagonal) must be ignored
    _close(linalg.solve_triangular(A, B, **kwargs), sl.solve_triangular(A, B, **kwargs))
    _close(linalg.solve_triangular(A, B[:, 0], **kwargs), sl.solve_triangular(A, B[:, 0], **kwargs))


def test_solve_triangular_complex_conjugate_transpose():
    a = (A + 1j * RNG.normal(size=(4, 4))).astype(np.complex64)
    b = (B + 1j * B[::-1]).astype(np.complex64)
    for trans in (1, 2):
        expected = sl.solve_triangular(a, b, trans=trans, lower=True)
        _close(linalg.solve_triangular(a, b, trans=trans, lower=True), expected)


def test_solve_triangular_batched_and_jitted():
    a = np.stack([A, A.T + np.eye(4, dtype=np.float32)])
    b = np.stack([B, -B])
    expected = np.stack([sl.solve_triangular(a[i], b[i], lower=True) for i in range(2)])
    _close(linalg.solve_triangular(a, b, lower=True), expected)
    jitted = ember.jit(lambda a, b: linalg.solve_triangular(a, b, lower=True))
    _close(jitted(a, b), expected)
    _close(ember.vmap(lambda b1: linalg.solve_triangular(A, b1))(B.T), sl.solve_triangular(A, B).T)


def test_solve_triangular_grads():
    a = np.triu(A) + 3 * np.eye(4, dtype=np.float32)
    check_grads(lambda a, b: linalg.solve_triangular(a, b), (a, B), order=1)
    check_grads(lambda a, b: linalg.solve_triangular(a, b, trans=1, lower=True), (a.T, B), order=1)


def test_solve_triangular_bad_input():
    with pytest.raises(ValueError, match="trans"):
        linalg.solve_triangular(A, B, trans=3)
    with pytest.raises(ValueError, match="right-hand side"):
        linalg.solve_triangular(A, np.ones((3, 2), np.float32))


# --------------------------------------------------------------------------------------------
# LU


def test_lu_factor_pivots_and_lu_solve_match_scipy():
    lu, piv = linalg.lu_factor(A)
    lu_expected, piv_expected = sl.lu_factor(A)
    _close(lu, lu_expected)
    np.testing.assert_array_equal(np.asarray(piv), piv_expected)
    assert np.asarray(piv).dtype == np.int32
    for trans in (0, 1, 2):
        _close(
            linalg.lu_solve((lu, piv), B, trans=trans),
            sl.lu_solve((lu_expected, piv_expected), B, trans=trans),
        )


def test_lu_factor_pinned_pivots():
    # JAX 0.10: lu_factor([[1, 2], [3, 4]]) == ([[3, 4], [1/3, 2/3]], [1, 1])
    lu, piv = linalg.lu_factor(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    _close(lu, [[3.0, 4.0], [1 / 3, 2 / 3]])
    np.testing.assert_array_equal(np.asarray(piv), [1, 1])


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3)])
def test_lu_rectangular_matches_scipy(shape):
    a = RNG.normal(size=shape).astype(np.float32)
    for got, expected in zip(linalg.lu(a), sl.lu(a)):
        _close(got, expected)
    for got, expected in zip(linalg.lu(a, permute_l=True), sl.lu(a, permute_l=True)):
        _close(got, expected)


def test_lu_solve_complex_conjugate_transpose():
    a = (A + 1j * A.T).astype(np.complex64)
    factored = sl.lu_factor(a)
    _close(linalg.lu_solve(linalg.lu_factor(a), B, trans=2), sl.lu_solve(factored, B, trans=2))


# --------------------------------------------------------------------------------------------
# Cholesky and general solves


@pytest.mark.parametrize("lower", [False, True])
def test_cholesky_and_cho_solve(lower):
    _close(linalg.cholesky(SPD, lower=lower), sl.cholesky(SPD, lower=lower))
    c, flag = linalg.cho_factor(SPD, lower=lower)
    assert flag is lower
    _close(linalg.cho_solve((c, flag), B), np.linalg.solve(SPD, B))
    check_grads(lambda c, b: linalg.cho_solve((c, lower), b), (c, B), order=1)


@pytest.mark.parametrize("assume_a", ["gen", "sym", "her", "pos"])
@pytest.mark.parametrize("lower", [False, True])
def test_solve_assume_a(assume_a, lower):
    # 'pos' reads only the lower (or upper) triangle, as LAPACK's posv
    half = np.tril(SPD) if lower else np.triu(SPD)
    a = half if assume_a == "pos" else SPD
    _close(linalg.solve(a, B, lower=lower, assume_a=assume_a), np.linalg.solve(SPD, B))


def test_solve_unknown_assume_a():
    with pytest.raises(ValueError, match="assume_a"):
        linalg.solve(SPD, B, assume_a="banded")


def test_inv_det():
    _close(linalg.inv(A), sl.inv(A), rtol=1e-3)
    _close(linalg.det(A), sl.det(A))


# --------------------------------------------------------------------------------------------
# Decompositions


@pytest.mark.slow
@pytest.mark.parametrize("lower", [True, False])
def test_eigh_reads_one_triangle(lower):
    half = np.tril(SPD) if lower else np.triu(SPD)
    w, v = linalg.eigh(half, lower=lower)
    _close(w, np.linalg.eigvalsh(SPD))
    _close(np.asarray(v) @ np.diag(np.asarray(w)) @ np.asarray(v).T, SPD, rtol=1e-4, atol=1e-4)
    _close(linalg.eigh(half, lower=lower, eigvals_only=True), np.linalg.eigvalsh(SPD))
    with pytest.raises(NotImplementedError):
        linalg.eigh(SPD, SPD)


@pytest.mark.parametrize("shape", [(3, 5), (5, 3)])
def test_qr_modes(shape):
    a = RNG.normal(size=shape).astype(np.float32)
    for mode in ("full", "economic"):
        q, r = linalg.qr(a, mode=mode)
        q_expected, r_expected = sl.qr(a, mode=mode)
        assert q.shape == q_expected.shape and r.shape == r_expected.shape
        _close(np.asarray(q) @ np.asarray(r), a)
        _close(np.abs(np.asarray(r)), np.abs(r_expected))
    (r,) = linalg.qr(a, mode="r")
    assert r.shape == sl.qr(a, mode="r")[0].shape
    with pytest.raises(ValueError, match="mode"):
        linalg.qr(a, mode="raw")


@pytest.mark.slow
def test_svd():
    u, s, vh = linalg.svd(WIDE)
    assert (u.shape, s.shape, vh.shape) == ((3, 3), (3,), (5, 5))
    _close(s, sl.svd(WIDE, compute_uv=False))
    _close(linalg.svd(WIDE, compute_uv=False), sl.svd(WIDE, compute_uv=False))
    _close(np.asarray(u) * np.asarray(s) @ np.asarray(vh)[:3], WIDE)


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("a", [A, WIDE.T], ids=["square", "tall"])
def test_polar_matches_scipy(side, a):
    u, p = linalg.polar(a, side=side)
    u_expected, p_expected = sl.polar(a, side=side)
    _close(u, u_expected)
    _close(p, p_expected)
    with pytest.raises(ValueError, match="side"):
        linalg.polar(a, side="up")


def test_hessenberg_matches_scipy():
    _close(linalg.hessenberg(A), sl.hessenberg(A))
    h, q = linalg.hessenberg(A, calc_q=True)
    h_expected, q_expected = sl.hessenberg(A, calc_q=True)
    _close(h, h_expected)
    _close(q, q_expected)


# --------------------------------------------------------------------------------------------
# expm


@pytest.mark.parametrize("scale", [1e-3, 0.05, 0.3, 1.0, 2.5, 30.0])
def test_expm_matches_scipy_across_pade_degrees(scale):
    # the 1-norms span every Pade degree and, at the largest, several squarings
    a = (A * scale / np.abs(A).sum(0).max()).astype(np.float32)
    _close(linalg.expm(a), sl.expm(a.astype(np.float64)), rtol=2e-4, atol=1e-5)


@pytest.mark.slow
def test_expm_complex_batched_and_jitted():
    a = (0.5 * A + 0.3j * A.T).astype(np.complex64)
    stack = np.stack([a, -a])
    expected = np.stack([sl.expm(a), sl.expm(-a)])
    _close(linalg.expm(stack), expected, rtol=2e-4)
    _close(ember.jit(linalg.expm)(stack), expected, rtol=2e-4)


def test_expm_too_many_squarings_is_nan():
    # JAX 0.10 returns NaN when more than max_squarings squarings are needed
    big = np.array([[1e6, 0.0], [0.0, 1.0]], np.float32)
    assert np.isnan(np.asarray(linalg.expm(big))).all()
    # a rotation by 1e6 radians needs 18 squarings: NaN by default, finite with 20 allowed
    rotation = np.array([[0.0, 1e6], [-1e6, 0.0]], np.float32)
    assert np.isnan(np.asarray(linalg.expm(rotation))).all()
    assert np.isfinite(np.asarray(linalg.expm(rotation, max_squarings=20))).all()


@pytest.mark.slow
def test_expm_derivative_along_itself():
    # d/dt expm(t a) = a expm(t a): the jvp along a itself is a @ expm(a), in closed form
    a = 3.0 * A / np.abs(A).sum(0).max()  # several squarings deep
    expm = ember.jit(linalg.expm)  # one compiled program, not one per loop step
    value, tangent = ember.jit(lambda a: ember.jvp(expm, (a,), (a,)))(a)
    _close(tangent, a @ sl.expm(a.astype(np.float64)), rtol=1e-3, atol=1e-4)
    cotangent = ember.jit(lambda a: ember.vjp(expm, a)[1](enp.eye(4))[0])(a)
    # <I, d expm(a)[a]> = trace(a expm(a)) = <cotangent, a>
    _close(np.sum(np.asarray(cotangent) * a), np.trace(a @ sl.expm(a)), rtol=1e-3)


@pytest.mark.slow
def test_expm_grads():
    b = A[:3, :3]
    expm = ember.jit(linalg.expm)
    check_grads(expm, (0.4 * b,), order=1, rtol=2e-2)
    check_grads(expm, (3.0 * b / np.abs(b).sum(0).max(),), order=1, rtol=2e-2)


def test_expm_identities():
    x = 0.7 * A
    _close(np.asarray(linalg.expm(x)) @ np.asarray(linalg.expm(-x)), np.eye(4), atol=1e-4)
    _close(linalg.expm(np.zeros((3, 3), np.float32)), np.eye(3))


# --------------------------------------------------------------------------------------------
# sqrtm


@pytest.mark.parametrize(
    "a",
    [
        SPD,
        A,
        np.array([[1.0, 2.0], [0.0, 1.0]], np.float32),  # defective: one Jordan block
        np.array([[2.0]], np.float32),
        (A + 1j * A.T).astype(np.complex64),
    ],
    ids=["spd", "general", "jordan", "1x1", "complex"],
)
def test_sqrtm_matches_scipy(a):
    got = linalg.sqrtm(a)
    assert got.dtype == enp.complex64  # complex even for real input, as in JAX
    # real input goes through SciPy's real path (JAX's answers agree with it): a negative
    # eigenvalue takes the principal root, whatever side of the cut rounding would pick
    expected = sl.sqrtm(a.astype(np.complex128 if np.iscomplexobj(a) else np.float64))
    _close(got, expected, rtol=1e-4, atol=1e-5)


def test_sqrtm_of_negative_eigenvalues_is_principal():
    # JAX's answers
    _close(linalg.sqrtm(np.diag([-1.0, 4.0]).astype(np.float32)), np.diag([1j, 2.0]))
    _close(linalg.sqrtm(A)[0, 0], 1.2677732 + 0.07304298j, rtol=1e-5)


def test_sqrtm_batched_and_blocksize():
    stack = np.stack([4 * np.eye(2), 9 * np.eye(2)]).astype(np.float32)
    _close(linalg.sqrtm(stack), np.stack([2 * np.eye(2), 3 * np.eye(2)]))
    with pytest.raises(NotImplementedError, match="blocksize"):
        linalg.sqrtm(SPD, blocksize=2)


def test_funm_matches_scipy():
    got = linalg.funm(A, enp.sin)
    assert got.dtype == enp.complex64
    _close(got, sl.funm(A.astype(np.float64), np.sin), rtol=1e-4, atol=1e-5)
    _close(linalg.funm(SPD / 8, enp.exp), sl.expm(SPD.astype(np.float64) / 8), rtol=1e-4)
    value, error = linalg.funm(SPD, enp.exp, disp=False)
    # a symmetric matrix has a diagonal Schur form: the estimate is the unit roundoff
    _close(error, np.finfo(np.float32).eps)
    _close(linalg.funm(np.array([[2.0]], np.float32), enp.log), [[np.log(2.0)]])


def test_funm_pinned_repeated_eigenvalue():
    # JAX 0.10 leaves the entry between equal eigenvalues zero (the recurrence divides by 0)
    got = linalg.funm(np.array([[1.0, 2.0], [0.0, 1.0]], np.float32), enp.exp)
    _close(got, [[np.e, 0.0], [0.0, np.e]])
    got = linalg.funm(np.array([[1.0, 2.0], [0.0, 3.0]], np.float32), lambda x: x**2)
    _close(got, [[1.0, 8.0], [0.0, 9.0]])


# --------------------------------------------------------------------------------------------
# Special matrices


def test_block_diag():
    got = linalg.block_diag(1, np.array([2, 3]), np.array([[4.0], [5.0]]))
    _close(got, sl.block_diag(1, np.array([2, 3]), np.array([[4.0], [5.0]])))
    assert linalg.block_diag().shape == (1, 0)
    assert linalg.block_diag(np.ones((2, 2), np.int32)).dtype == enp.int32
    with pytest.raises(ValueError, match="dimension"):
        linalg.block_diag(np.ones((2, 2, 2)))


def test_toeplitz_hankel_circulant():
    _close(linalg.toeplitz([1, 2, 3], [9, 8, 7, 6]), sl.toeplitz([1, 2, 3], [9, 8, 7, 6]))
    c = np.array([1, 2 + 1j, 3], np.complex64)
    _close(linalg.toeplitz(c), sl.toeplitz(c))
    _close(linalg.hankel([1, 2, 3], [9, 8, 7, 6]), sl.hankel([1, 2, 3], [9, 8, 7, 6]))
    _close(linalg.hankel([1, 2, 3]), sl.hankel([1, 2, 3]))
    _close(linalg.circulant([1, 2, 3, 4]), sl.circulant([1, 2, 3, 4]))


def test_toeplitz_batches_leading_axes():
    # JAX 0.10: toeplitz of a (2, 3) first column gives a (2, 3, 3) stack
    c = np.array([[1, 2, 3], [4, 5, 6]])
    got = np.asarray(linalg.toeplitz(c))
    assert got.shape == (2, 3, 3)
    _close(got[1], sl.toeplitz(c[1]))


# --------------------------------------------------------------------------------------------
# ember.lax.linalg


@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose_a", [True, False])
def test_lax_triangular_solve(left_side, lower, transpose_a):
    a = (A + 1j * A.T).astype(np.complex64)
    tri = np.tril(a) if lower else np.triu(a)
    op = np.conj(tri.T if transpose_a else tri)
    b = (B if left_side else B.T).astype(np.complex64)
    expected = np.linalg.solve(op, b) if left_side else np.linalg.solve(op.T, b.T).T
    got = ember.lax.linalg.triangular_solve(
        a, b, left_side=left_side, lower=lower, transpose_a=transpose_a, conjugate_a=True
    )
    _close(got, expected, rtol=1e-3, atol=1e-4)


def test_lax_triangular_solve_pinned():
    # JAX 0.10: x @ L^T = b with L the lower triangle of a
    a = np.array([[4.0, 1, 2], [1, 3, 0.5], [2, 0.5, 5]], np.float32)
    b = np.arange(6.0, dtype=np.float32).reshape(3, 2).T
    got = ember.lax.linalg.triangular_solve(a, b, lower=True, transpose_a=True)
    _close(got, [[0.0, 0.6666667, 0.73333335], [0.25, 0.9166667, 0.80833334]])


def test_lax_tridiagonal_solve():
    n = 6
    dl, d, du = RNG.normal(size=(3, 2, n)).astype(np.float32)
    d = d + 4.0  # diagonally dominant: no pivoting needed
    b = RNG.normal(size=(2, n, 3)).astype(np.float32)
    got = ember.lax.linalg.tridiagonal_solve(dl, d, du, b)
    for k in range(2):
        t = np.diag(d[k]) + np.diag(dl[k, 1:], -1) + np.diag(du[k, :-1], 1)
        _close(got[k], np.linalg.solve(t, b[k]))
    # JAX 0.10's answer (dl[0] and du[-1] are ignored)
    got = ember.lax.linalg.tridiagonal_solve(
        np.array([9.0, 1, 2], np.float32),
        np.array([4.0, 5, 6], np.float32),
        np.array([1.0, 1, 9], np.float32),
        np.arange(6.0, dtype=np.float32).reshape(3, 2),
    )
    _close(got, [[-0.0754717, 0.14150944], [0.3018868, 0.43396226], [0.5660377, 0.6886792]])
    with pytest.raises(ValueError, match="shape"):
        ember.lax.linalg.tridiagonal_solve(dl, d, du, b[..., 0])


def test_lax_lu_eigh_cholesky_qr_svd():
    packed, pivots, permutation = ember.lax.linalg.lu(A)
    lu_expected, piv_expected = sl.lu_factor(A)
    _close(packed, lu_expected)
    np.testing.assert_array_equal(np.asarray(pivots), piv_expected)
    l_factor = np.tril(np.asarray(packed), -1) + np.eye(4)
    _close(l_factor @ np.triu(np.asarray(packed)), A[np.asarray(permutation)])
    v, w = ember.lax.linalg.eigh(SPD)  # eigenvectors first, as in JAX's lax.linalg
    _close(w, np.linalg.eigvalsh(SPD))
    assert v.shape == (4, 4)
    _close(ember.lax.linalg.cholesky(SPD), np.linalg.cholesky(SPD))
    q, r = ember.lax.linalg.qr(WIDE.T, full_matrices=False)
    assert (q.shape, r.shape) == ((5, 3), (3, 3))
    _close(ember.lax.linalg.svd(WIDE, compute_uv=False), sl.svd(WIDE, compute_uv=False))


# --------------------------------------------------------------------------------------------
# qr_multiply and expm_frechet


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (4, 4)])
@pytest.mark.parametrize("conjugate", [False, True])
def test_qr_multiply_matches_scipy(shape, conjugate):
    a = RNG.normal(size=shape) + 1j * RNG.normal(size=shape)
    a = a.astype(np.complex64)
    m, n = shape
    k = min(m, n)
    right = RNG.normal(size=(2, m)).astype(np.complex64)
    left = RNG.normal(size=(k, 2)).astype(np.complex64)
    _, r_scipy = sl.qr(a, mode="economic")
    _, r = linalg.qr_multiply(a, right)
    assert r.shape == r_scipy.shape == (k, n)
    # Q is unique up to a phase per column: ours is Q_scipy diag(conj(d)), R = diag(d) R_scipy
    d = np.diagonal(np.asarray(r)) / np.diagonal(r_scipy)
    d = d / np.abs(d)
    assert_close(r, d[:, None] * r_scipy, atol=1e-4, rtol=1e-4)
    phase = d if conjugate else d.conj()
    product, _ = linalg.qr_multiply(a, right, conjugate=conjugate)
    expected = sl.qr_multiply(a, right, conjugate=conjugate)[0] * phase[None, :]
    assert_close(product, expected, atol=1e-4, rtol=1e-4)
    product, _ = linalg.qr_multiply(a, left, mode="left", conjugate=conjugate)
    expected = sl.qr_multiply(a, phase[:, None] * left, mode="left", conjugate=conjugate)[0]
    assert_close(product, expected, atol=1e-4, rtol=1e-4)


def test_qr_multiply_values_vectors_and_batches():
    a = RNG.normal(size=(4, 3)).astype(np.float32)
    q, r = sl.qr(a, mode="economic")
    c = RNG.normal(size=(2, 4)).astype(np.float32)
    product, r_ours = linalg.qr_multiply(a, c)
    # c @ Q and R are unique up to the signs of Q's columns (R's rows)
    signs = np.sign(np.diagonal(np.asarray(r_ours))) * np.sign(np.diagonal(r))
    _close(np.asarray(product) * signs, c @ q)
    _close(np.asarray(r_ours) * signs[:, None], r)
    vector, _ = linalg.qr_multiply(a, c[0])
    assert vector.shape == (3,)
    _close(vector, np.asarray(product)[0])
    column, _ = linalg.qr_multiply(a, np.ones(3, np.float32), mode="left")
    assert column.shape == (4,)
    stack = RNG.normal(size=(2, 4, 3)).astype(np.float32)
    product, r = linalg.qr_multiply(stack, c)  # c broadcast across the batch
    assert product.shape == (2, 2, 3) and r.shape == (2, 3, 3)
    _close(product[1], linalg.qr_multiply(stack[1], c)[0])
    check_grads(lambda a: linalg.qr_multiply(a, c)[0], (a,), order=1)


def test_qr_multiply_errors():
    with pytest.raises(ValueError, match="mode must be 'right' or 'left'"):
        linalg.qr_multiply(A, A, mode="up")
    with pytest.raises(ValueError, match="c @ Q operation"):
        linalg.qr_multiply(WIDE, np.ones((2, 5)))
    with pytest.raises(ValueError, match="Q @ c operation"):
        linalg.qr_multiply(WIDE, np.ones((5, 2)), mode="left")


def test_expm_frechet_matches_scipy():
    # jitted: run op by op, expm's branches compile dozens of small programs on XLA
    frechet = ember.jit(linalg.expm_frechet, static_argnames=("method", "compute_expm"))
    e = RNG.normal(size=(4, 4)).astype(np.float32)
    expm_a, derivative = frechet(A, e)
    expected_expm, expected = sl.expm_frechet(A.astype(np.float64), e.astype(np.float64))
    _close(expm_a, expected_expm, rtol=1e-4, atol=1e-4)
    _close(derivative, expected, rtol=1e-4, atol=1e-4)
    only = frechet(A, e, compute_expm=False)
    _close(only, derivative)
    with ember.config.option("enable_x64", True):
        a64, e64 = A.astype(np.float64) * 3, e.astype(np.float64)
        _close(frechet(a64, e64, method="SPS")[1], sl.expm_frechet(a64, e64)[1],
               rtol=1e-10, atol=1e-10)  # fmt: skip
    batch = np.stack([A, 2 * A])
    _, derivative = frechet(batch, np.stack([e, e]))
    _close(derivative[1], sl.expm_frechet(2 * A.astype(np.float64), e.astype(np.float64))[1],
           rtol=1e-4, atol=1e-3)  # fmt: skip
    # linear in E, differentiable in A
    check_grads(lambda a: frechet(a, e, compute_expm=False), (A / 4,), order=1)


def test_expm_frechet_errors():
    with pytest.raises(ValueError, match="expected A to be a"):
        linalg.expm_frechet(WIDE, WIDE)
    with pytest.raises(ValueError, match="same shape"):
        linalg.expm_frechet(A, np.eye(3))
