"""ember.numpy.linalg against numpy.linalg, with gradients through the factorisations."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from tests.core.util import assert_close

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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


# --------------------------------------------------------------------------------------------
# Empty matrices (0 x 0) and empty stacks: NumPy's shapes and values (det of 0 x 0 is 1), in
# JAX's dtypes (float32 in, float32 out; eig complex; matrix_rank int32)

EMPTY_FUNCTIONS = {
    "inv": lambda m, a: m.linalg.inv(a),
    "det": lambda m, a: m.linalg.det(a),
    "slogdet": lambda m, a: tuple(m.linalg.slogdet(a)),
    "solve": lambda m, a: m.linalg.solve(a, a),
    "cholesky": lambda m, a: m.linalg.cholesky(a),
    "qr": lambda m, a: tuple(m.linalg.qr(a)),
    "qr_complete": lambda m, a: tuple(m.linalg.qr(a, mode="complete")),
    "eigh": lambda m, a: tuple(m.linalg.eigh(a)),
    "eigvalsh": lambda m, a: m.linalg.eigvalsh(a),
    "svd": lambda m, a: tuple(m.linalg.svd(a)),
    "svd_thin": lambda m, a: tuple(m.linalg.svd(a, full_matrices=False)),
    "svdvals": lambda m, a: m.linalg.svd(a, compute_uv=False),
    "eig": lambda m, a: tuple(m.linalg.eig(a)),
    "eigvals": lambda m, a: m.linalg.eigvals(a),
    "pinv": lambda m, a: m.linalg.pinv(a),
    "matrix_rank": lambda m, a: m.linalg.matrix_rank(a),
    "matrix_power_3": lambda m, a: m.linalg.matrix_power(a, 3),
    "matrix_power_0": lambda m, a: m.linalg.matrix_power(a, 0),
    "matrix_power_-1": lambda m, a: m.linalg.matrix_power(a, -1),
    "norm": lambda m, a: m.linalg.norm(a),
    "norm_2": lambda m, a: m.linalg.norm(a, 2, axis=(-2, -1)),
    "norm_1": lambda m, a: m.linalg.norm(a, 1, axis=(-2, -1)),
    "norm_inf": lambda m, a: m.linalg.norm(a, np.inf, axis=(-2, -1)),
    "norm_nuc": lambda m, a: m.linalg.norm(a, "nuc", axis=(-2, -1)),
    "matrix_norm": lambda m, a: m.linalg.matrix_norm(a),
    "trace": lambda m, a: m.linalg.trace(a) if m is enp else np.trace(a, axis1=-2, axis2=-1),
}


def _expected_dtype(name, numpy_result):
    if name.startswith("eig") and name != "eigvalsh" and not name.startswith("eigh"):
        return np.complex64
    if name == "matrix_rank":
        return np.int32
    return np.float32 if numpy_result.dtype.kind == "f" else numpy_result.dtype


@pytest.mark.parametrize("shape", [(0, 0), (3, 0, 0), (0, 2, 2)])
def test_empty_matrices_and_stacks_match_numpy(shape):
    a = np.zeros(shape, np.float32)
    for name, fn in EMPTY_FUNCTIONS.items():
        got, want = fn(enp, a), fn(np, a)
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        for g, w in zip(got, want, strict=True):
            g, w = np.asarray(g), np.asarray(w)
            assert g.shape == w.shape, (name, shape, g.shape, w.shape)
            assert g.dtype == _expected_dtype(name, w), (name, shape, g.dtype)
            np.testing.assert_array_equal(g, w, err_msg=f"{name} {shape}")


@pytest.mark.parametrize("shape", [(2, 0), (0, 2)])
def test_empty_rectangular_matrices(shape):
    # JAX's answers: a full U (or Vh) of an empty map is the identity
    a = np.zeros(shape, np.float32)
    u, s, vh = enp.linalg.svd(a)
    assert_close(u, np.eye(shape[0]))
    assert_close(vh, np.eye(shape[1]))
    assert np.asarray(s).shape == (0,)
    q, r = enp.linalg.qr(a, mode="complete")
    assert_close(q, np.eye(shape[0]))
    assert np.asarray(r).shape == shape
    assert np.asarray(enp.linalg.pinv(a)).shape == shape[::-1]
    assert float(enp.linalg.norm(a, 2)) == 0.0 and float(enp.linalg.norm(a, np.inf)) == 0.0
    assert int(enp.linalg.matrix_rank(a)) == 0
    # JAX's answer (NumPy cannot reshape the empty array)
    assert np.asarray(enp.linalg.tensorinv(np.zeros((0, 0), np.float32), 1)).shape == (0, 0)


def test_empty_matrices_under_jit_vmap_and_grad():
    assert_close(ember.jit(enp.linalg.det)(np.zeros((3, 0, 0), np.float32)), np.ones(3))
    sign, logabsdet = ember.jit(enp.linalg.slogdet)(np.zeros((0, 0), np.float32))
    assert float(sign) == 1.0 and float(logabsdet) == 0.0
    assert np.asarray(ember.vmap(enp.linalg.inv)(np.zeros((2, 0, 0)))).shape == (2, 0, 0)
    g = ember.grad(enp.linalg.det)(np.zeros((0, 0), np.float32))
    assert np.asarray(g).shape == (0, 0)
    g = ember.grad(lambda x: enp.linalg.slogdet(x)[1].sum())(np.zeros((0, 2, 2), np.float32))
    assert np.asarray(g).shape == (0, 2, 2)
    g = ember.grad(lambda x: enp.linalg.svdvals(x).sum())(np.zeros((3, 0), np.float32))
    assert np.asarray(g).shape == (3, 0)


# --------------------------------------------------------------------------------------------
# JAX's named results


@pytest.mark.slow
def test_named_results_match_jax():
    spd = SPD.astype(np.float32)
    expected = {
        "EighResult": (enp.linalg.eigh(spd), ("eigenvalues", "eigenvectors")),
        "QRResult": (enp.linalg.qr(TALL), ("Q", "R")),
        "SVDResult": (enp.linalg.svd(TALL), ("U", "S", "Vh")),
        "SlogdetResult": (enp.linalg.slogdet(A), ("sign", "logabsdet")),
        "EigResult": (enp.linalg.eig(A), ("eigenvalues", "eigenvectors")),
    }
    for name, (result, fields) in expected.items():
        assert type(result).__name__ == name and result._fields == fields
    w, v = expected["EighResult"][0]  # still unpacks as a tuple
    assert_close(w, np.linalg.eigvalsh(spd), rtol=1e-4)
    assert_close(expected["SVDResult"][0].S, np.linalg.svd(TALL, compute_uv=False), rtol=1e-4)
    assert_close(expected["QRResult"][0].R, expected["QRResult"][0][1])
    assert_close(expected["SlogdetResult"][0].logabsdet, np.linalg.slogdet(A)[1], rtol=1e-4)
    assert type(enp.linalg.svd(TALL.T)).__name__ == "SVDResult"  # wide matrices too


@pytest.mark.slow
def test_named_results_are_pytrees_under_transformations():
    assert type(ember.jit(enp.linalg.svd)(TALL)).__name__ == "SVDResult"
    batched = ember.vmap(enp.linalg.eigh)(np.stack([SPD, 2 * SPD]).astype(np.float32))
    assert type(batched).__name__ == "EighResult"
    assert_close(batched.eigenvalues[1], 2 * np.linalg.eigvalsh(SPD), rtol=1e-4)
    assert type(ember.jit(enp.linalg.qr)(A)).__name__ == "QRResult"
    g = ember.grad(lambda x: enp.linalg.slogdet(x).logabsdet)(A)
    assert_close(g, np.linalg.inv(A).T, rtol=1e-3, atol=1e-4)
    g = ember.grad(lambda x: enp.linalg.eigh(x).eigenvalues[-1])(SYM)
    top = np.linalg.eigh(SYM)[1][:, -1]
    assert_close(g, np.outer(top, top), rtol=1e-3, atol=1e-4)


# --------------------------------------------------------------------------------------------
# UPLO, dtypes, shape errors, singular matrices

NONSYMMETRIC = np.array([[2.0, 1.0], [5.0, 3.0]], np.float32)


@pytest.mark.slow
def test_eigh_uplo_reads_the_named_triangle():
    # JAX's answers: symmetrize_input=True factorises (a + a^H)/2 whatever UPLO says; without
    # it only the UPLO triangle is read
    for uplo in ("L", "U", None):
        assert_close(enp.linalg.eigvalsh(NONSYMMETRIC, UPLO=uplo), [-0.54138124, 5.541381])
    lower = enp.linalg.eigh(NONSYMMETRIC, UPLO="L", symmetrize_input=False).eigenvalues
    upper = enp.linalg.eigh(NONSYMMETRIC, UPLO="U", symmetrize_input=False).eigenvalues
    assert_close(lower, [-2.5249379, 7.524938], rtol=1e-5)
    assert_close(upper, [1.3819661, 3.618034], rtol=1e-5)
    c = (A + 1j * STACK[0]).astype(np.complex64)
    for uplo, strict in (("L", np.tril(c, -1)), ("U", np.triu(c, 1))):
        hermitian = strict + strict.conj().T + np.diag(np.diag(c).real)
        got = enp.linalg.eigvalsh(c, UPLO=uplo, symmetrize_input=False)
        assert_close(got, np.linalg.eigvalsh(hermitian), rtol=1e-4, atol=1e-4)
    g = ember.grad(lambda x: enp.linalg.eigvalsh(x, "U", symmetrize_input=False).sum())(A)
    assert_close(g, np.eye(4), atol=1e-5)  # the trace reads only the diagonal
    with pytest.raises(ValueError, match="UPLO must be one of"):
        enp.linalg.eigh(SYM, UPLO="X")


def test_integer_and_mixed_inputs_take_jax_dtypes():
    ints = np.array([[2, 1], [1, 3]], np.int32)
    assert_close(enp.linalg.inv(ints), np.linalg.inv(ints), rtol=1e-5)
    assert np.asarray(enp.linalg.inv(ints)).dtype == np.float32
    assert np.asarray(enp.linalg.det(ints.astype(bool))).dtype == np.float32
    assert np.asarray(enp.linalg.matrix_power(ints, 3)).dtype == np.int32
    assert np.asarray(enp.linalg.eigvalsh(ints)).dtype == np.float32
    # b's dtype takes part in the promotion (complex b, real a: a complex solution)
    b = np.array([1 + 2j, 3 - 1j], np.complex64)
    x = enp.linalg.solve(NONSYMMETRIC, b)
    assert np.asarray(x).dtype == np.complex64
    assert_close(x, np.linalg.solve(NONSYMMETRIC, b), rtol=1e-5)
    sign, logabsdet = enp.linalg.slogdet(HERMITIAN)
    assert np.asarray(sign).dtype == np.complex64 and np.asarray(logabsdet).dtype == np.float32
    with ember.config.option("enable_x64", True):
        assert np.asarray(enp.linalg.inv(ints)).dtype == np.float32  # as JAX: int32 -> f32
        assert np.asarray(enp.linalg.inv(ints.astype(np.int64))).dtype == np.float64
        assert np.asarray(enp.linalg.matrix_rank(A.astype(np.float64))).dtype == np.int64


def test_solve_broadcasts_stacks_and_vectors_as_numpy():
    a = STACK
    assert_close(enp.linalg.solve(a, B[:, 0]), np.linalg.solve(a, B[:, 0]), rtol=1e-3, atol=1e-4)
    b = rng.normal(size=(2, 1, 4, 3)).astype(np.float32)
    assert_close(enp.linalg.solve(a, b), np.linalg.solve(a, b), rtol=1e-3, atol=1e-4)
    with pytest.raises(ValueError, match=r"b of shape \(3,\) does not fit a of shape \(4, 4\)"):
        enp.linalg.solve(A, np.ones(3, np.float32))
    with pytest.raises(ValueError, match=r"b of shape \(3, 4\) does not fit"):
        enp.linalg.solve(a, np.ones((3, 4), np.float32))  # a 2-d b is columns, not vectors
    with pytest.raises(ValueError, match="do not broadcast"):
        enp.linalg.solve(a, np.ones((2, 4, 1), np.float32))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: enp.linalg.eigh(np.ones(3)), r"expected a matrix .* shape \(3,\)"),
        (lambda: enp.linalg.det(np.ones((2, 3))), r"expected square matrices, got shape \(2, 3\)"),
        (lambda: enp.linalg.matrix_power(np.ones((2, 3)), 2), r"square .* \(2, 3\)"),
        (lambda: enp.linalg.cholesky(np.ones((4, 2, 3))), r"square .* \(4, 2, 3\)"),
        (lambda: enp.linalg.eigvals(np.ones((2, 3))), r"square .* \(2, 3\)"),
    ],
)
def test_bad_shapes_name_the_shape(call, message):
    with pytest.raises(np.linalg.LinAlgError, match=message) as info:
        call()
    assert "test_linalg.py" in str(info.value)  # the user's line


def test_matrix_power_needs_an_integer():
    with pytest.raises(TypeError, match="n must be an integer"):
        enp.linalg.matrix_power(A, 1.5)


def test_singular_matrices_give_inf_and_nan_as_jax():
    ones = np.ones((2, 2), np.float32)
    assert float(enp.linalg.det(ones)) == 0.0
    sign, logabsdet = enp.linalg.slogdet(ones)
    assert float(sign) == 0.0 and float(logabsdet) == -np.inf
    assert not np.isfinite(np.asarray(enp.linalg.inv(ones))).all()
    assert np.isnan(np.asarray(enp.linalg.solve(ones, np.ones(2, np.float32)))).all()
    assert np.isnan(np.asarray(enp.linalg.cholesky(-np.eye(2, dtype=np.float32)))[1, 1])
    assert_close(enp.linalg.pinv(np.zeros((2, 2), np.float32)), np.zeros((2, 2)))
    assert int(enp.linalg.matrix_rank(np.zeros((2, 2), np.float32))) == 0
    assert float(enp.linalg.cond(ones, 1)) == np.inf


# --------------------------------------------------------------------------------------------
# enable_x64: every function in float64 and complex128 against NumPy


def _without_rank(result):
    x, residuals, _, singular_values = result
    return x, residuals, singular_values


X64_CASES = {
    "solve": lambda m, a, t: m.linalg.solve(a, t[:4]),
    "inv": lambda m, a, t: m.linalg.inv(a),
    "det": lambda m, a, t: m.linalg.det(a),
    "slogdet": lambda m, a, t: tuple(m.linalg.slogdet(a)),
    "cholesky": lambda m, a, t: m.linalg.cholesky(a @ a.conj().T + 4 * np.eye(4)),
    "eigvalsh": lambda m, a, t: m.linalg.eigvalsh(a + a.conj().T),
    "svdvals": lambda m, a, t: m.linalg.svd(t, compute_uv=False),
    "qr_r": lambda m, a, t: abs(m.linalg.qr(t)[1]),
    "pinv": lambda m, a, t: m.linalg.pinv(t),
    "matrix_rank": lambda m, a, t: m.linalg.matrix_rank(t),
    "matrix_power": lambda m, a, t: m.linalg.matrix_power(a, -2),
    "norm_2": lambda m, a, t: m.linalg.norm(a, 2),
    "norm_nuc": lambda m, a, t: m.linalg.norm(t, "nuc"),
    "norm_fro": lambda m, a, t: m.linalg.norm(a),
    "cond": lambda m, a, t: m.linalg.cond(a),
    "cond_1": lambda m, a, t: m.linalg.cond(a, 1),
    "lstsq": lambda m, a, t: _without_rank(m.linalg.lstsq(t, t[:, 0] + 1, rcond=None)),
    "tensorsolve": lambda m, a, t: m.linalg.tensorsolve(a.reshape(2, 2, 4), t[:4, 0].reshape(2, 2)),
    "tensorinv": lambda m, a, t: m.linalg.tensorinv(a.reshape(2, 2, 4), ind=2),
    "multi_dot": lambda m, a, t: m.linalg.multi_dot([t.T, t, a[:3, :3], t.T]),
}


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_x64_matches_numpy(dtype):
    def random(shape):
        x = rng.normal(size=shape)
        return (x + 1j * rng.normal(size=shape) if dtype == np.complex128 else x).astype(dtype)

    a, t = random((4, 4)), random((5, 3))
    real = np.float64
    with ember.config.option("enable_x64", True):
        for name, fn in X64_CASES.items():
            got, want = fn(enp, a, t), fn(np, a, t)
            got = got if isinstance(got, tuple) else (got,)
            want = want if isinstance(want, tuple) else (want,)
            for g, w in zip(got, want, strict=True):
                g, w = np.asarray(g), np.asarray(w)
                if w.dtype.kind in "fc":  # NumPy's dtypes are JAX's in x64
                    assert g.dtype == w.dtype or (g.dtype == real and w.dtype.kind == "f"), name
                else:
                    assert g.dtype == np.int64, name
                assert_close(g, w, rtol=1e-9, atol=1e-9)


def test_array_api_helpers_check_ranks_and_dtypes():
    with pytest.raises(ValueError, match=r"outer: expected two vectors, got shapes \(4, 4\)"):
        enp.linalg.outer(A, A)
    with pytest.raises(ValueError, match=r"matrix_transpose: .* shape \(4,\)"):
        enp.linalg.matrix_transpose(A[0])
    ints = np.array([3, 4], np.int32)
    with ember.config.option("enable_x64", True):
        # JAX's dtypes: vector_norm of integers is the default float, norm keeps float32
        assert np.asarray(enp.linalg.vector_norm(ints)).dtype == np.float64
        assert np.asarray(enp.linalg.norm(ints)).dtype == np.float32
        assert float(enp.linalg.vector_norm(ints)) == 5.0
