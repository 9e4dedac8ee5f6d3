"""The factorisation primitives (cholesky, triangular_solve, lu, lu_pivots_to_permutation,
geqrf, geqp3, householder_product, qr, tridiagonal_solve): LAPACK's answers (through SciPy)
for every dtype, stacks and empty shapes, vmap against a loop, the default backend against the
reference backend, derivatives, the NaN of a failed factorisation, and the jaxprs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.linalg
import scipy.linalg.lapack as lapack

import ember
import ember.numpy as enp
from ember._src import rules
from ember._src.core import ShapedArray
from ember._src.lax import linalg_factor_primitives as prims, linalg_qr_primitives as qr_prims
from ember._src.runtime.mesh import AbstractMesh, AxisType
from ember._src.runtime.sharding import NamedSharding, PartitionSpec as P
from ember.errors import ShardingTypeError
from ember.scipy import linalg
from ember.test_util import check_grads
from tests.core.util import assert_close

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
ON_REFERENCE_ONLY = ember.default_backend() == "reference"


@pytest.fixture(autouse=True)
def x64():
    with ember.config.option("enable_x64", True):
        yield


def tolerance(dtype) -> float:
    return 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


def random(rng, shape, dtype):
    x = rng.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dtype)


def positive_definite(rng, shape, dtype):
    a = random(rng, shape, dtype)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def lapack_routine(name, dtype):
    (routine,) = lapack.get_lapack_funcs((name,), dtype=np.dtype(dtype))
    return routine


def close(actual, expected, dtype, scale=1.0):
    np.testing.assert_allclose(
        np.asarray(actual), expected, rtol=tolerance(dtype), atol=tolerance(dtype) * scale
    )


def cholesky(x):
    return prims.cholesky_p.bind(x)


def triangular_solve(a, b, **params):
    defaults = dict(
        left_side=False, lower=False, transpose_a=False, conjugate_a=False, unit_diagonal=False
    )
    return prims.triangular_solve_p.bind(a, b, **{**defaults, **params})


def qr(x, pivoting=False, full_matrices=True):
    return qr_prims.qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices, use_magma=None)


# --------------------------------------------------------------------------------------------
# Against LAPACK (NumPy and SciPy)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_is_lapacks_lower_factor(rng, dtype):
    x = positive_definite(rng, (3, 5, 5), dtype)
    close(cholesky(x), np.linalg.cholesky(x), dtype, 5)


def test_cholesky_reads_only_the_lower_triangle(rng):
    x = positive_definite(rng, (4, 4), np.float64)
    garbage = x + np.triu(np.full((4, 4), 7.0), 1)
    close(cholesky(garbage), np.linalg.cholesky(x), np.float64)


def test_cholesky_is_nan_for_the_one_matrix_that_is_not_positive_definite(rng):
    x = positive_definite(rng, (3, 4, 4), np.float32)
    x[1] = -x[1]
    out = np.asarray(cholesky(x))
    assert np.isnan(out[1]).all()
    close(out[[0, 2]], np.linalg.cholesky(x[[0, 2]]), np.float32, 5)
    assert np.isfinite(out[[0, 2]]).all()


def test_cholesky_of_no_matrices_and_of_empty_ones():
    assert np.asarray(cholesky(np.zeros((0, 3, 3), np.float32))).shape == (0, 3, 3)
    assert np.asarray(cholesky(np.zeros((2, 0, 0), np.float32))).shape == (2, 0, 0)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
@pytest.mark.parametrize(
    "left_side, lower, transpose_a, conjugate_a, unit_diagonal",
    list(itertools.product([False, True], repeat=5)),
)
def test_triangular_solve_matches_scipy(
    rng, dtype, left_side, lower, transpose_a, conjugate_a, unit_diagonal
):
    if np.dtype(dtype).kind != "c" and conjugate_a:
        pytest.skip("conjugation is the identity on real matrices")
    a = random(rng, (2, 4, 4), dtype) + 4 * np.eye(4, dtype=dtype)
    b = random(rng, (2, 4, 3) if left_side else (2, 3, 4), dtype)
    x = triangular_solve(
        a,
        b,
        left_side=left_side,
        lower=lower,
        transpose_a=transpose_a,
        conjugate_a=conjugate_a,
        unit_diagonal=unit_diagonal,
    )
    triangle = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        triangle = triangle * (1 - np.eye(4)) + np.eye(4)
    op = np.swapaxes(triangle, -1, -2) if transpose_a else triangle
    op = np.conj(op) if conjugate_a else op
    expected = (
        np.linalg.solve(op, b)
        if left_side
        else np.swapaxes(np.linalg.solve(np.swapaxes(op, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    )
    close(x, expected, dtype, 5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6), (2, 5, 5)])
def test_lu_is_lapacks_getrf(rng, dtype, shape):
    x = random(rng, shape, dtype)
    lu, pivots, permutation = (np.asarray(v) for v in prims.lu_p.bind(x))
    assert pivots.dtype == permutation.dtype == np.int32
    getrf = lapack_routine("getrf", dtype)
    for i, matrix in enumerate(x.reshape((-1, *shape[-2:]))):
        expected_lu, expected_pivots, info = getrf(matrix)
        assert info == 0
        np.testing.assert_array_equal(pivots.reshape((-1, pivots.shape[-1]))[i], expected_pivots)
        close(lu.reshape((-1, *shape[-2:]))[i], expected_lu, dtype, 5)
    m, n = shape[-2:]
    k = min(m, n)
    lower = np.tril(lu[..., :, :k], -1) + np.eye(m, k)
    upper = np.triu(lu[..., :k, :])
    rows = np.take_along_axis(x, permutation[..., :, None], axis=-2)
    close(lower @ upper, rows, dtype, 5)


def test_lu_of_a_singular_matrix_factors_it():
    x = np.array([[1.0, 2.0], [2.0, 4.0]])
    lu, pivots, _ = (np.asarray(v) for v in prims.lu_p.bind(x))
    np.testing.assert_allclose(lu, [[2.0, 4.0], [0.5, 0.0]])
    np.testing.assert_array_equal(pivots, [1, 1])


def test_lu_pivots_to_permutation():
    pivots = np.array([[2, 2, 3], [0, 1, 2]], np.int32)
    out = prims.lu_pivots_to_permutation_p.bind(pivots, permutation_size=5)
    np.testing.assert_array_equal(np.asarray(out), [[2, 0, 3, 1, 4], [0, 1, 2, 3, 4]])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 4, 3)])
def test_geqrf_and_householder_product_are_lapacks(rng, dtype, shape):
    x = random(rng, shape, dtype)
    packed, taus = (np.asarray(v) for v in qr_prims.geqrf_p.bind(x))
    geqrf = lapack_routine("geqrf", dtype)
    orgqr = lapack_routine("ungqr" if np.dtype(dtype).kind == "c" else "orgqr", dtype)
    m, n = shape[-2:]
    k = min(m, n)
    flat_x = x.reshape((-1, m, n))
    flat_packed, flat_taus = packed.reshape((-1, m, n)), taus.reshape((-1, k))
    for i in range(flat_x.shape[0]):
        expected_packed, expected_taus, _, info = geqrf(flat_x[i])
        assert info == 0
        close(flat_packed[i], expected_packed, dtype, 5)
        close(flat_taus[i], expected_taus, dtype)
        if m >= n:
            q = qr_prims.householder_product_p.bind(flat_packed[i], flat_taus[i])
            expected_q, info = orgqr(expected_packed, expected_taus)[:2]
            close(q, expected_q, dtype, 5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 5)])
def test_geqp3_is_lapacks_with_zero_based_pivots(rng, dtype, shape):
    x = random(rng, shape, dtype)
    jpvt = np.zeros(shape[-1], np.int32)
    packed, pivots, taus = (np.asarray(v) for v in qr_prims.geqp3_p.bind(x, jpvt))
    geqp3 = lapack_routine("geqp3", dtype)
    expected_packed, expected_pivots, expected_taus = geqp3(x)[:3]
    np.testing.assert_array_equal(pivots, expected_pivots - 1)
    close(packed, expected_packed, dtype, 5)
    close(taus, expected_taus, dtype)


def test_geqp3_keeps_the_leading_columns_first(rng):
    x = random(rng, (5, 4), np.float64)
    x[:, 3] *= 100  # the column that would be chosen first
    jpvt = np.array([0, 1, 0, 0], np.int32)
    _, pivots, _ = qr_prims.geqp3_p.bind(x, jpvt)
    assert np.asarray(pivots)[0] == 1
    assert np.asarray(pivots)[1] == 3


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
@pytest.mark.parametrize("full_matrices", [True, False])
@pytest.mark.parametrize("pivoting", [False, True])
def test_qr_is_lapacks(rng, dtype, shape, full_matrices, pivoting):
    x = random(rng, (2, *shape), dtype)
    outs = [np.asarray(v) for v in qr(x, pivoting, full_matrices)]
    mode = "full" if full_matrices else "economic"
    for i in range(2):
        expected = scipy.linalg.qr(x[i], mode=mode, pivoting=pivoting)
        close(outs[0][i], expected[0], dtype, 5)
        close(outs[1][i], expected[1], dtype, 5)
        if pivoting:
            np.testing.assert_array_equal(outs[2][i], expected[2])


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0)])
@pytest.mark.parametrize("pivoting", [False, True])
def test_qr_of_empty_matrices(shape, pivoting):
    x = np.zeros((2, *shape), np.float32)
    m, n = shape
    q, r, *p = (np.asarray(v) for v in qr(x, pivoting, True))
    assert q.shape == (2, m, m) and r.shape == (2, m, n)
    np.testing.assert_array_equal(q, np.broadcast_to(np.eye(m), q.shape))
    if pivoting:
        np.testing.assert_array_equal(p[0], np.broadcast_to(np.arange(n), (2, n)))


EMPTY_CASES = {
    "lu": (lambda x: prims.lu_p.bind(x), [(0, 3), (3, 0), (2, 0, 0), (0, 2, 2)]),
    "geqrf": (lambda x: qr_prims.geqrf_p.bind(x), [(0, 3), (3, 0), (0, 2, 2)]),
    "geqp3": (
        lambda x: qr_prims.geqp3_p.bind(x, np.zeros(x.shape[:-2] + x.shape[-1:], np.int32)),
        [(0, 3), (3, 0), (0, 2, 2)],
    ),
    "triangular_solve": (
        lambda x: triangular_solve(x[..., :0, :0], x[..., :0, :], left_side=True),
        [(0, 3), (2, 0, 3)],
    ),
}


@pytest.mark.parametrize("name", list(EMPTY_CASES))
def test_empty_shapes(name):
    fn, shapes = EMPTY_CASES[name]
    for shape in shapes:
        x = np.zeros(shape, np.float32)
        expected = [tuple(o.shape) for o in _flat_list(ember.eval_shape(fn, x))]
        got = _flat_list(fn(x))
        assert [np.asarray(g).shape for g in got] == expected
        if name == "lu":  # no rows to swap: the identity permutation
            permutation = np.asarray(got[2])
            np.testing.assert_array_equal(
                permutation, np.broadcast_to(np.arange(shape[-2]), permutation.shape)
            )
        if name == "geqp3":  # no rows to pivot on: the columns stay in order
            pivots = np.asarray(got[1])
            np.testing.assert_array_equal(
                pivots, np.broadcast_to(np.arange(shape[-1]), pivots.shape)
            )


def _flat_list(outs):
    return list(outs) if isinstance(outs, (list, tuple)) else [outs]


@pytest.mark.parametrize("dtype", DTYPES)
def test_tridiagonal_solve_matches_a_dense_solve(rng, dtype):
    dl, d, du = (random(rng, (3, 5), dtype) for _ in range(3))
    d = d + 4
    b = random(rng, (3, 5, 2), dtype)
    x = prims.tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=False)
    dense = np.zeros((3, 5, 5), dtype)
    for i in range(3):
        dense[i] = np.diag(d[i]) + np.diag(dl[i, 1:], -1) + np.diag(du[i, :-1], 1)
    close(x, np.linalg.solve(dense, b), dtype, 5)


# --------------------------------------------------------------------------------------------
# Transformations and backends


def _cases(rng):
    x = random(rng, (3, 4, 4), np.float32)
    spd = positive_definite(rng, (3, 4, 4), np.float32)
    b = random(rng, (3, 4, 2), np.float32)
    pivots = np.array([[1, 2, 3], [3, 3, 3], [0, 1, 2]], np.int32)
    return {
        "cholesky": (cholesky, (spd,)),
        "triangular_solve": (
            lambda a, b: triangular_solve(a, b, left_side=True, lower=True),
            (x + 4 * np.eye(4, dtype=np.float32), b),
        ),
        "lu": (lambda a: prims.lu_p.bind(a), (x,)),
        "lu_pivots_to_permutation": (
            lambda p: prims.lu_pivots_to_permutation_p.bind(p, permutation_size=4),
            (pivots,),
        ),
        "geqrf": (lambda a: qr_prims.geqrf_p.bind(a), (x,)),
        "geqp3": (lambda a, j: qr_prims.geqp3_p.bind(a, j), (x, np.zeros((3, 4), np.int32))),
        "householder_product": (
            lambda a, t: qr_prims.householder_product_p.bind(a, t),
            (x, random(rng, (3, 3), np.float32)),
        ),
        "qr": (lambda a: qr(a, True, False), (x,)),
        "tridiagonal_solve": (
            lambda dl, d, du, b: prims.tridiagonal_solve_p.bind(
                dl, d, du, b, perturb_singular=False
            ),
            (x[:, 0], x[:, 1] + 4, x[:, 2], b),
        ),
    }


CASE_NAMES = list(_cases(np.random.default_rng(0)))


def _flat(outs):
    return [np.asarray(o) for o in (outs if isinstance(outs, (list, tuple)) else [outs])]


@pytest.mark.parametrize("name", CASE_NAMES)
def test_vmap_is_a_loop(rng, name):
    fn, args = _cases(rng)[name]
    batched = _flat(ember.vmap(fn)(*args))
    for i in range(args[0].shape[0]):
        one = _flat(fn(*(a[i] for a in args)))
        for got, want in zip(batched, one):
            np.testing.assert_allclose(got[i], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("axis", [0, 2])
def test_vmap_over_b_alone_folds_the_batch_into_b(rng, left_side, axis):
    a = random(rng, (4, 4), np.float32) + 4 * np.eye(4, dtype=np.float32)
    b = random(rng, (3, 4, 2) if left_side else (3, 2, 4), np.float32)
    fn = lambda b: triangular_solve(a, b, left_side=left_side, lower=True)
    out = np.asarray(ember.vmap(fn, in_axes=axis)(np.moveaxis(b, 0, axis)))
    if left_side:
        expected = np.linalg.solve(np.tril(a), b)
    else:
        expected = np.swapaxes(np.linalg.solve(np.tril(a).T, np.swapaxes(b, -1, -2)), -1, -2)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
    text = str(ember.make_jaxpr(ember.vmap(fn))(b))
    assert "broadcast_in_dim" not in text  # a is not copied for each b


@pytest.mark.skipif(ON_REFERENCE_ONLY, reason="needs a second backend to compare with")
@pytest.mark.parametrize("name", CASE_NAMES)
def test_default_backend_matches_reference(rng, name):
    fn, args = _cases(rng)[name]
    reference = ember.devices("reference")[0]
    here = _flat(ember.jit(fn)(*args))
    there = _flat(ember.jit(fn, device=reference)(*args))
    for got, want in zip(here, there):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_jaxpr_shows_the_primitives_and_their_parameters(rng):
    a = random(rng, (4, 4), np.float32)
    text = str(ember.make_jaxpr(lambda a: triangular_solve(cholesky(a), a, lower=True))(a))
    assert "cholesky" in text
    assert "triangular_solve[" in text and "lower=True" in text and "left_side=False" in text
    text = str(ember.make_jaxpr(lambda a: qr(a, True, False))(a))
    assert "qr[" in text and "pivoting=True" in text and "full_matrices=False" in text


@pytest.mark.parametrize("pivoting, packed", [(False, "geqrf"), (True, "geqp3")])
def test_qr_lowers_through_the_packed_primitives(rng, pivoting, packed):
    # a platform that overrides geqrf/geqp3 and householder_product gets a fast qr
    x = random(rng, (5, 3), np.float32)
    expression = lambda a: qr_prims._qr_expression(
        a, pivoting=pivoting, full_matrices=True, use_magma=None
    )
    text = str(ember.make_jaxpr(expression)(x))
    assert f"= {packed} " in text and "householder_product" in text


# --------------------------------------------------------------------------------------------
# Sharding: batch dimensions may be split, matrix dimensions must be whole

MESH = AbstractMesh((4, 2), ("X", "Y"), (AxisType.Explicit,) * 2)


def typed(shape, *spec, dtype=np.float32):
    sharding = NamedSharding(MESH, P(*spec)) if any(e is not None for e in spec) else None
    return ShapedArray(shape, np.dtype(dtype), sharding=sharding)


def test_a_split_batch_dimension_stays_split():
    out = rules.abstract_eval(prims.cholesky_p, [typed((8, 3, 3), "X")], {})
    assert tuple(out.typed_sharding.spec) == ("X", None, None)
    lu, pivots, permutation = rules.abstract_eval(prims.lu_p, [typed((8, 4, 3), "X")], {})
    assert tuple(lu.typed_sharding.spec) == ("X", None, None)
    assert tuple(pivots.typed_sharding.spec) == ("X", None)
    assert tuple(permutation.typed_sharding.spec) == ("X", None)


def test_a_split_matrix_dimension_is_refused():
    with pytest.raises(ShardingTypeError, match="reshard"):
        rules.abstract_eval(prims.cholesky_p, [typed((8, 4, 4), None, "Y")], {})


def test_operands_split_differently_along_the_batch_are_refused():
    params = dict(
        left_side=True, lower=True, transpose_a=False, conjugate_a=False, unit_diagonal=False
    )
    avals = [typed((8, 3, 3), "X"), typed((8, 3, 2), "Y")]
    with pytest.raises(ShardingTypeError):
        rules.abstract_eval(prims.triangular_solve_p, avals, params)


# --------------------------------------------------------------------------------------------
# Derivatives


def _hermitian(a):
    return (a + enp.conj(enp.swapaxes(a, -1, -2))) / 2


def test_cholesky_grads(rng):
    x = positive_definite(rng, (2, 3, 3), np.float64)
    check_grads(lambda a: cholesky(_hermitian(a)), (x,), order=1, modes=("fwd", "rev"))


def test_cholesky_grads_complex(rng):
    x = positive_definite(rng, (3, 3), np.complex128)
    check_grads(lambda a: cholesky(_hermitian(a)), (x,), order=1, modes=("fwd", "rev"))


@pytest.mark.parametrize("left_side", [False, True])
@pytest.mark.parametrize("transpose_a", [False, True])
def test_triangular_solve_grads(rng, left_side, transpose_a):
    a = random(rng, (2, 3, 3), np.float64) + 3 * np.eye(3)
    b = random(rng, (2, 3, 4) if left_side else (2, 4, 3), np.float64)
    fn = lambda a, b: triangular_solve(
        a, b, left_side=left_side, lower=True, transpose_a=transpose_a
    )
    check_grads(fn, (a, b), order=1, modes=("fwd", "rev"))


def test_triangular_solve_grads_complex_conjugated(rng):
    a = random(rng, (3, 3), np.complex128) + 3 * np.eye(3)
    b = random(rng, (3, 2), np.complex128)
    fn = lambda a, b: triangular_solve(a, b, left_side=True, transpose_a=True, conjugate_a=True)
    check_grads(fn, (a, b), order=1, modes=("fwd", "rev"))


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4)])
def test_lu_grads(rng, shape):
    x = random(rng, shape, np.float64)
    check_grads(lambda a: prims.lu_p.bind(a)[0], (x,), order=1, modes=("fwd", "rev"))


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 4)])
@pytest.mark.parametrize("full_matrices", [False, True])
def test_qr_grads(rng, shape, full_matrices):
    x = random(rng, shape, np.float64)
    fn = lambda a: qr(a, False, full_matrices)
    check_grads(fn, (x,), order=1, modes=("fwd", "rev"))


def test_qr_grads_complex_and_pivoted(rng):
    x = random(rng, (4, 3), np.complex128)
    check_grads(lambda a: qr(a, False, False), (x,), order=1, modes=("fwd", "rev"))
    y = random(rng, (4, 3), np.float64)
    check_grads(lambda a: qr(a, True, False)[:2], (y,), order=1, modes=("fwd", "rev"))


def test_tridiagonal_solve_grads(rng):
    dl, d, du = (random(rng, (2, 4), np.float64) for _ in range(3))
    b = random(rng, (2, 4, 3), np.float64)
    fn = lambda dl, d, du, b: prims.tridiagonal_solve_p.bind(
        dl, d + 4, du, b, perturb_singular=False
    )
    check_grads(fn, (dl, d, du, b), order=1, modes=("fwd", "rev"))


# --------------------------------------------------------------------------------------------
# Errors


def test_cholesky_of_a_non_square_matrix_is_a_shape_error():
    with pytest.raises(ValueError, match="square"):
        cholesky(np.zeros((3, 4), np.float32))


def test_integer_operands_are_refused():
    with pytest.raises(TypeError, match="floating-point"):
        qr_prims.geqrf_p.bind(np.zeros((3, 3), np.int32))


def test_triangular_solve_checks_the_shared_dimension():
    with pytest.raises(ValueError, match="rows"):
        triangular_solve(np.eye(3, dtype=np.float32), np.ones((4, 2), np.float32), left_side=True)


def test_perturb_singular_needs_a_platform_solver():
    ones = np.ones((3,), np.float32)
    solve = lambda dl, d, du, b: prims.tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=True)
    reference = ember.devices("reference")[0]
    with pytest.raises(ember.errors.ExecutionError, match="perturb_singular"):
        ember.jit(solve, device=reference)(ones, ones, ones, np.ones((3, 1), np.float32))


# --------------------------------------------------------------------------------------------
# scipy.linalg.qr with pivoting (geqp3 through the qr primitive): the same permutation as
# SciPy, ``a[:, p] = q r``, and JAX's output shapes for every mode

PIVOTED_QR_RNG = np.random.default_rng(11)


def _pivoted_qr_matrix(shape, complex_):
    a = PIVOTED_QR_RNG.normal(size=shape)
    if complex_:
        a = a + 1j * PIVOTED_QR_RNG.normal(size=shape)
    return a.astype(np.complex64 if complex_ else np.float32)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
@pytest.mark.parametrize("complex_", [False, True])
def test_pivoted_qr_matches_scipy(shape, complex_):
    a = _pivoted_qr_matrix(shape, complex_)
    q, r, p = (np.asarray(x) for x in linalg.qr(a, pivoting=True))
    _, r_scipy, p_scipy = scipy.linalg.qr(a, pivoting=True)
    assert p.dtype == np.int32  # as JAX
    np.testing.assert_array_equal(p, p_scipy)
    assert q.shape == (shape[0], shape[0]) and r.shape == shape
    assert_close(q @ r, a[:, p], atol=1e-5, rtol=0)
    assert_close(q.conj().T @ q, np.eye(shape[0]), atol=1e-5, rtol=0)
    assert np.all(np.tril(r, -1) == 0)
    # R is unique up to a phase per row: compare magnitudes, and |r_jj| never increases
    assert_close(np.abs(r), np.abs(r_scipy), atol=1e-4, rtol=1e-4)
    diagonal = np.abs(np.diagonal(r))
    assert np.all(diagonal[1:] <= diagonal[:-1] * (1 + 1e-6))


def test_pivoted_qr_modes_and_batches():
    a = _pivoted_qr_matrix((5, 3), False)
    q, r, p = linalg.qr(a, mode="economic", pivoting=True)
    assert q.shape == (5, 3) and r.shape == (3, 3) and p.shape == (3,)
    assert_close(np.asarray(q) @ np.asarray(r), a[:, np.asarray(p)], atol=1e-5, rtol=0)
    r_only, p_only = linalg.qr(a, mode="r", pivoting=True)
    assert r_only.shape == (5, 3)
    np.testing.assert_array_equal(p_only, p)
    stack = PIVOTED_QR_RNG.normal(size=(2, 4, 3)).astype(np.float32)
    q, r, p = linalg.qr(stack, pivoting=True)
    for i in range(2):
        np.testing.assert_array_equal(p[i], scipy.linalg.qr(stack[i], pivoting=True)[2])
        assert_close(np.asarray(q[i]) @ np.asarray(r[i]), stack[i][:, np.asarray(p[i])], atol=1e-5)


def test_rank_deficient_columns_come_last():
    a = _pivoted_qr_matrix((4, 3), False)
    a = np.concatenate([a[:, :1] * 0, a], axis=1)  # a zero column: the last pivot
    _, r, p = linalg.qr(a, pivoting=True)
    assert int(p[-1]) == 0
    assert abs(float(np.asarray(r)[3, 3])) < 1e-6


def test_qr_multiply_with_pivoting():
    a = _pivoted_qr_matrix((4, 3), False)
    c = PIVOTED_QR_RNG.normal(size=(2, 4)).astype(np.float32)
    product, r, p = linalg.qr_multiply(a, c, pivoting=True)
    expected, r_scipy, p_scipy = scipy.linalg.qr_multiply(a, c, pivoting=True)
    np.testing.assert_array_equal(p, p_scipy)
    signs = np.sign(np.diagonal(np.asarray(r))) * np.sign(np.diagonal(r_scipy))
    assert_close(np.asarray(product) * signs, expected, atol=1e-4, rtol=1e-4)
    assert_close(np.asarray(r) * signs[:, None], r_scipy, atol=1e-4, rtol=1e-4)
