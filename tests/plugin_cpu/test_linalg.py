"""The CPU plugin's LAPACK lowerings (ember_plugin_cpu.linalg).

For each linear algebra primitive: the compiled cpu program calls jaxlib's LAPACK handler, its
results equal SciPy's LAPACK (the routine itself, called directly) or NumPy, in float32,
float64, complex64 and complex128, batched, unbatched and empty; and they equal the primitive's
GENERIC lowering compiled for cpu (the override removed for the test) up to the conventions the
linear algebra contract leaves open (the phases of eigenvectors and singular vectors). These
are the only tests that run the generic lowerings on XLA once the overrides exist.

Run with ``EMBER_PLATFORMS=cpu,reference EMBER_CPU_DEVICE_COUNT=1``.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
import scipy.linalg as scipy_linalg
from scipy.linalg import lapack

import ember
import ember.numpy as enp
from ember._src import rules
from ember._src.lax import (
    linalg_factor_primitives as factor,
    linalg_qr_primitives as qr_prims,
    linalg_spectral_primitives as spectral,
)
from ember._src.lax.linalg_algorithms import EighImplementation, SvdAlgorithm
from ember_plugin_cpu import linalg
from ember_plugin_kit.pjrt import lapack_enum_values

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
BATCHES = [(), (3,), (2, 2)]


def _cpu_available() -> bool:
    try:
        return bool(ember.devices("cpu"))
    except Exception:
        return False


pytestmark = pytest.mark.skipif(not _cpu_available(), reason="the cpu platform is not loaded")


@pytest.fixture(autouse=True)
def x64():
    """float64 and complex128 operands, as they are."""
    with ember.config.option("enable_x64", True):
        yield


# -- helpers -----------------------------------------------------------------------------------


def rng_matrix(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dtype)


def hermitian_pd(batch, n, dtype, seed=0):
    x = rng_matrix((*batch, n, n), dtype, seed)
    return (x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)).astype(dtype)


def hermitian(batch, n, dtype, seed=0):
    x = rng_matrix((*batch, n, n), dtype, seed)
    return ((x + np.conj(np.swapaxes(x, -1, -2))) / 2).astype(dtype)


def tol(dtype):
    return 2e-3 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-9


def assert_close(actual, expected, dtype, scale=1.0):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=tol(dtype), atol=tol(dtype) * scale)


def per_matrix(fn, *arrays):
    """``fn`` applied to each matrix of the stacks ``arrays`` (same batch), results stacked."""
    batch = np.shape(arrays[0])[:-2]
    if not batch:
        return fn(*arrays)
    outs = [per_matrix(fn, *[a[i] for a in arrays]) for i in range(batch[0])]
    if isinstance(outs[0], tuple):
        return tuple(np.stack(parts) for parts in zip(*outs))
    return np.stack(outs)


def lapack_call(name, x):
    (routine,) = lapack.get_lapack_funcs((name,), (x,))
    return routine


def run(fn, *args):
    """``fn`` compiled for cpu (a fresh function each call, so no cached program of another
    lowering is reused), its results as NumPy arrays."""
    out = ember.jit(lambda *xs: fn(*xs))(*args)
    if isinstance(out, (list, tuple)):
        return [np.asarray(o) for o in out]
    return np.asarray(out)


def targets(fn, *args):
    """The custom-call targets of ``fn``'s program for cpu."""
    text = ember.jit(lambda *xs: fn(*xs)).lower(*args).as_text()
    return {
        line.split("call_target_name = ")[1].split('"')[1]
        for line in text.splitlines()
        if "call_target_name" in line
    }


@contextlib.contextmanager
def generic_lowering(name):
    """The primitive ``name`` lowered by its generic rule on cpu for the duration."""
    primitive = rules.all_primitives()[name]
    removed = rules.remove_lowering(primitive, "cpu")
    assert removed is not None, f"no cpu override of {name}"
    try:
        yield
    finally:
        rules.register_lowering(primitive, removed, "cpu")


def run_generic(names, fn, *args):
    with contextlib.ExitStack() as stack:
        for name in names:
            stack.enter_context(generic_lowering(name))
        assert not any(t.startswith("lapack_") for t in targets(fn, *args))
        return run(fn, *args)


def letter(dtype):
    return {np.float32: "s", np.float64: "d", np.complex64: "c", np.complex128: "z"}[
        np.dtype(dtype).type
    ]


# -- registration --------------------------------------------------------------------------------


def test_every_rule_overrides_its_primitive_on_cpu():
    for name in linalg.RULES:
        primitive = rules.all_primitives()[name]
        assert rules.lowering_rule(primitive, "cpu") is not rules.generic_lowering_rule(primitive)
        assert rules.lowering_rule(primitive, "cpu").__name__ == f"lapack_{name}_lowering"


def test_pinned_enum_values_are_jaxlibs():
    values = lapack_enum_values()
    assert values["eig.ComputationMode.kComputeEigenvectors"] == linalg.COMPUTE_VECTORS
    assert values["eig.ComputationMode.kNoEigenvectors"] == linalg.NO_VECTORS
    assert values["schur.ComputationMode.kComputeSchurVectors"] == linalg.COMPUTE_VECTORS
    assert values["schur.ComputationMode.kNoComputeSchurVectors"] == linalg.NO_VECTORS
    assert values["schur.Sort.kNoSortEigenvalues"] == linalg.NO_SORT
    assert values["svd.ComputationMode.kComputeFullUVt"] == linalg.SVD_FULL
    assert values["svd.ComputationMode.kComputeMinUVt"] == linalg.SVD_ECONOMIC
    assert values["svd.ComputationMode.kNoComputeUVt"] == linalg.SVD_NO_UV


def test_lapack_target_names():
    assert linalg.lapack_target("potrf", np.float32) == "lapack_spotrf_ffi"
    assert linalg.lapack_target("heevd", np.complex128) == "lapack_zheevd_ffi"


# -- cholesky --------------------------------------------------------------------------------------


def cholesky(x):
    return factor.cholesky_p.bind(x)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
def test_cholesky(dtype, batch):
    a = hermitian_pd(batch, 5, dtype)
    assert targets(cholesky, a) == {f"lapack_{letter(dtype)}potrf_ffi"}
    out = run(cholesky, a)
    assert_close(out, np.linalg.cholesky(a), dtype, 5)
    assert_close(run_generic(["cholesky"], cholesky, a), out, dtype, 5)


def test_cholesky_not_positive_definite_is_nan_for_that_matrix_only():
    a = hermitian_pd((3,), 4, np.float64)
    a[1] = -a[1]
    for out in (run(cholesky, a), run_generic(["cholesky"], cholesky, a)):
        assert np.isnan(out[1]).all()
        np.testing.assert_allclose(out[[0, 2]], np.linalg.cholesky(a[[0, 2]]), rtol=1e-10)


def test_cholesky_empty_and_half_precision_use_the_generic_lowering():
    empty = np.zeros((0, 0), np.float32)
    assert targets(cholesky, empty) == set()
    assert run(cholesky, empty).shape == (0, 0)
    # the generic lowering computes float16 in float32: through LAPACK's float32 routine
    half = hermitian_pd((2,), 3, np.float32).astype(np.float16)
    assert targets(cholesky, half) == {"lapack_spotrf_ffi"}
    expected = np.linalg.cholesky(half.astype(np.float32))
    np.testing.assert_allclose(run(cholesky, half).astype(np.float32), expected, atol=2e-2)


# -- triangular_solve ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "left_side, lower, transpose_a, conjugate_a, unit_diagonal",
    [
        (True, True, False, False, False),
        (True, False, True, True, False),
        (False, True, True, False, True),
        (False, False, False, True, False),
    ],
)
def test_triangular_solve(dtype, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    params = dict(
        left_side=left_side,
        lower=lower,
        transpose_a=transpose_a,
        conjugate_a=conjugate_a,
        unit_diagonal=unit_diagonal,
    )
    a = rng_matrix((2, 4, 4), dtype) + 4 * np.eye(4, dtype=dtype)
    b = rng_matrix((2, 4, 3) if left_side else (2, 3, 4), dtype, seed=1)

    def solve(a, b):
        return factor.triangular_solve_p.bind(a, b, **params)

    assert targets(solve, a, b) == {f"lapack_{letter(dtype)}trsm_ffi"}
    out = run(solve, a, b)
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        t = t.copy()
        t[..., np.arange(4), np.arange(4)] = 1
    if conjugate_a:
        t = np.conj(t)
    if transpose_a:
        t = np.swapaxes(t, -1, -2)
    expected = (
        np.linalg.solve(t, b)
        if left_side
        else np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    )
    assert_close(out, expected, dtype, 10)
    assert_close(run_generic(["triangular_solve"], solve, a, b), out, dtype, 10)


# -- lu ------------------------------------------------------------------------------------------


def lu(x):
    return factor.lu_p.bind(x)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 5), (3, 6, 4), (2, 3, 5)])
def test_lu(dtype, shape):
    a = rng_matrix(shape, dtype)
    assert targets(lu, a) == {f"lapack_{letter(dtype)}getrf_ffi"}
    packed, pivots, perm = run(lu, a)
    getrf = lapack_call("getrf", a)
    expected, expected_pivots = per_matrix(lambda m: getrf(m)[:2], a)
    assert_close(packed, expected, dtype, 5)
    np.testing.assert_array_equal(pivots, expected_pivots)
    assert pivots.dtype == perm.dtype == np.int32
    # the permutation: x[perm] = L U
    m, n = shape[-2:]
    k = min(m, n)
    lower = np.tril(packed[..., :, :k], -1) + np.eye(m, k, dtype=dtype)
    upper = np.triu(packed[..., :k, :])
    assert_close(np.take_along_axis(a, perm[..., None], -2), lower @ upper, dtype, 10)
    generic = run_generic(["lu"], lu, a)
    assert_close(generic[0], packed, dtype, 5)
    np.testing.assert_array_equal(generic[1], pivots)
    np.testing.assert_array_equal(generic[2], perm)


def test_lu_of_a_singular_matrix_factors():
    a = np.zeros((2, 3, 3))
    a[1] = np.arange(9.0).reshape(3, 3)  # rank 2
    packed, pivots, _ = run(lu, a)
    assert np.isfinite(packed).all()
    np.testing.assert_array_equal(pivots[0], [0, 1, 2])


# -- QR: geqrf, geqp3, householder_product, qr -----------------------------------------------------


def geqrf(x):
    return qr_prims.geqrf_p.bind(x)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 5), (2, 4, 4)])
def test_geqrf(dtype, shape):
    a = rng_matrix(shape, dtype)
    assert targets(geqrf, a) == {f"lapack_{letter(dtype)}geqrf_ffi"}
    packed, taus = run(geqrf, a)
    routine = lapack_call("geqrf", a)
    expected, expected_taus = per_matrix(lambda m: routine(m)[:2], a)
    assert_close(packed, expected, dtype, 5)
    assert_close(taus, expected_taus, dtype)
    generic = run_generic(["geqrf"], geqrf, a)
    assert_close(generic[0], packed, dtype, 5)
    assert_close(generic[1], taus, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 4), (2, 4, 6)])
def test_geqp3(dtype, shape):
    a = rng_matrix(shape, dtype)
    jpvt = np.zeros(shape[:-2] + shape[-1:], np.int32)

    def geqp3(x, j):
        return qr_prims.geqp3_p.bind(x, j)

    assert targets(geqp3, a, jpvt) == {f"lapack_{letter(dtype)}geqp3_ffi"}
    packed, perm, taus = run(geqp3, a, jpvt)
    routine = lapack_call("geqp3", a)
    expected, expected_perm, expected_taus = per_matrix(lambda m: routine(m)[:3], a)
    np.testing.assert_array_equal(perm, expected_perm - 1)  # zero-based
    assert_close(packed, expected, dtype, 5)
    assert_close(taus, expected_taus, dtype)
    generic = run_generic(["geqp3"], geqp3, a, jpvt)
    np.testing.assert_array_equal(generic[1], perm)
    assert_close(generic[0], packed, dtype, 5)


@pytest.mark.parametrize("dtype", DTYPES)
def test_householder_product(dtype):
    a = rng_matrix((2, 5, 3), dtype)
    packed, taus = run(geqrf, a)

    def product(a, t):
        return qr_prims.householder_product_p.bind(a, t)

    routine = "ungqr" if np.issubdtype(dtype, np.complexfloating) else "orgqr"
    assert targets(product, packed, taus) == {f"lapack_{letter(dtype)}{routine}_ffi"}
    q = run(product, packed, taus)
    orgqr = lapack_call(routine, a)
    expected = np.stack([orgqr(packed[i], taus[i])[0] for i in range(2)])
    assert_close(q, expected, dtype)
    assert_close(run_generic(["householder_product"], product, packed, taus), q, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("full_matrices", [True, False])
@pytest.mark.parametrize("pivoting", [False, True])
@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 5), (0, 0)])
def test_qr_binds_the_lapack_routines(dtype, full_matrices, pivoting, shape):
    a = rng_matrix(shape, dtype)

    def qr(x):
        return qr_prims.qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices, use_magma=None)

    if 0 not in shape:
        first = "geqp3" if pivoting else "geqrf"
        orgqr = "ungqr" if np.issubdtype(dtype, np.complexfloating) else "orgqr"
        assert targets(qr, a) == {
            f"lapack_{letter(dtype)}{first}_ffi",
            f"lapack_{letter(dtype)}{orgqr}_ffi",
        }
    q, r, *p = run(qr, a)
    mode = "full" if full_matrices else "economic"
    expected = per_matrix(lambda m: scipy_linalg.qr(m, mode=mode, pivoting=pivoting), a)
    assert_close(q, expected[0], dtype, 5)
    assert_close(r, expected[1], dtype, 5)
    if pivoting:
        np.testing.assert_array_equal(p[0], expected[2])
    names = ["geqp3" if pivoting else "geqrf", "householder_product"]
    if 0 in shape:
        return
    generic = run_generic(names, qr, a)
    for got, want in zip(generic, [q, r, *p]):
        assert_close(got, want, dtype, 5)


# -- eigh ------------------------------------------------------------------------------------------


def eigh(x, lower=True, subset_by_index=None, algorithm=None):
    return spectral.eigh_p.bind(
        x,
        lower=lower,
        sort_eigenvalues=True,
        subset_by_index=subset_by_index,
        algorithm=algorithm,
    )


def check_eigenpairs(a, v, w, dtype):
    """a v = v diag(w), v orthonormal, w ascending."""
    n = a.shape[-1]
    assert_close(a @ v, v * w[..., None, :], dtype, 10 * n)
    assert_close(
        np.conj(np.swapaxes(v, -1, -2)) @ v,
        np.broadcast_to(np.eye(v.shape[-1]), w.shape[:-1] + (v.shape[-1],) * 2),
        dtype,
        10,
    )
    assert (np.diff(w, axis=-1) >= 0).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("lower", [True, False])
def test_eigh(dtype, batch, lower):
    a = hermitian(batch, 5, dtype)
    # only the named triangle is read: spoil the other one
    spoiled = np.tril(a) if lower else np.triu(a)
    kind = "heevd" if np.issubdtype(dtype, np.complexfloating) else "syevd"
    assert targets(lambda x: eigh(x, lower), spoiled) == {f"lapack_{letter(dtype)}{kind}_ffi"}
    v, w = run(lambda x: eigh(x, lower), spoiled)
    assert_close(w, np.linalg.eigvalsh(a.astype(np.complex128)), dtype, 10)
    check_eigenpairs(a, v, w, dtype)
    gv, gw = run_generic(["eigh"], lambda x: eigh(x, lower), spoiled)
    assert_close(gw, w, dtype, 10)
    check_eigenpairs(a, gv, gw, dtype)


def test_eigh_subset_by_index():
    a = hermitian((2,), 6, np.float64)
    v, w = run(lambda x: eigh(x, subset_by_index=(1, 4)), a)
    all_w = np.linalg.eigvalsh(a)
    np.testing.assert_allclose(w, all_w[:, 1:4], rtol=1e-10)
    assert v.shape == (2, 6, 3)
    np.testing.assert_allclose(a @ v, v * w[:, None, :], atol=1e-9)


def test_eigh_jacobi_uses_the_generic_lowering():
    a = hermitian((), 4, np.float64)
    jacobi = EighImplementation.JACOBI
    assert targets(lambda x: eigh(x, algorithm=jacobi), a) == set()
    _, w = run(lambda x: eigh(x, algorithm=jacobi), a)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), rtol=1e-9)


# -- svd -------------------------------------------------------------------------------------------


def svd(full_matrices=False, compute_uv=True, algorithm=None, subset_by_index=None):
    def fn(x):
        return spectral.svd_p.bind(
            x,
            full_matrices=full_matrices,
            compute_uv=compute_uv,
            subset_by_index=subset_by_index,
            algorithm=algorithm,
        )

    return fn


def check_svd(a, s, u, vt, dtype):
    k = s.shape[-1]
    scale = float(np.abs(a).max()) * a.shape[-1]
    assert_close((u[..., :, :k] * s[..., None, :]) @ vt[..., :k, :], a, dtype, scale)
    for q in (u, np.conj(np.swapaxes(vt, -1, -2))):
        eye = np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2)
        assert_close(np.conj(np.swapaxes(q, -1, -2)) @ q, eye, dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 5), (2, 2, 4, 4)])
@pytest.mark.parametrize("full_matrices", [False, True])
def test_svd(dtype, shape, full_matrices):
    a = rng_matrix(shape, dtype)
    fn = svd(full_matrices=full_matrices)
    assert targets(fn, a) == {f"lapack_{letter(dtype)}gesdd_ffi"}
    s, u, vt = run(fn, a)
    assert_close(s, np.linalg.svd(a.astype(np.complex128), compute_uv=False), dtype, 10)
    m, n = shape[-2:]
    k = min(m, n)
    assert u.shape[-1] == (m if full_matrices else k) and vt.shape[-2] == (
        n if full_matrices else k
    )
    check_svd(a, s, u, vt, dtype)
    gs, gu, gvt = run_generic(["svd"], fn, a)
    assert_close(gs, s, dtype, 10)
    check_svd(a, gs, gu, gvt, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_svd_qr_algorithm_and_values_only(dtype):
    a = rng_matrix((2, 6, 4), dtype)
    qr_fn = svd(algorithm=SvdAlgorithm.QR)
    assert targets(qr_fn, a) == {f"lapack_{letter(dtype)}gesvd_ffi"}
    s, u, vt = run(qr_fn, a)
    check_svd(a, s, u, vt, dtype)
    values = svd(compute_uv=False)
    (only_s,) = run(values, a)
    assert_close(only_s, s, dtype, 10)
    (generic_s,) = run_generic(["svd"], values, a)
    assert_close(generic_s, s, dtype, 10)


def test_svd_subset_and_empty():
    a = rng_matrix((5, 4), np.float64)
    s, u, vt = run(svd(subset_by_index=(1, 3)), a)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False)[1:3], rtol=1e-10)
    assert u.shape == (5, 2) and vt.shape == (2, 4)
    empty = np.zeros((2, 0, 3))
    s, u, vt = run(svd(full_matrices=True), empty)
    assert s.shape == (2, 0) and u.shape == (2, 0, 0) and vt.shape == (2, 3, 3)


# -- eig -------------------------------------------------------------------------------------------


def eig(left=False, right=True):
    def fn(x):
        return spectral.eig_p.bind(
            x,
            compute_left_eigenvectors=left,
            compute_right_eigenvectors=right,
            enable_eigvec_derivs=False,
            implementation=None,
        )

    return fn


def assert_same_eigenvalues(actual, expected, dtype):
    """The same eigenvalues of each matrix, in any order (each of ``expected`` has one of
    ``actual`` within the tolerance, and the other way round)."""
    distances = np.abs(actual[..., :, None] - expected[..., None, :])
    scale = 10 * max(1.0, float(np.abs(expected).max()))
    assert (distances.min(axis=-1) < tol(dtype) * scale).all()
    assert (distances.min(axis=-2) < tol(dtype) * scale).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", [(), (3,)])
def test_eig(dtype, batch):
    a = rng_matrix((*batch, 5, 5), dtype)
    fn = eig(left=True, right=True)
    assert targets(fn, a) == {f"lapack_{letter(dtype)}geev_ffi"}
    w, vl, vr = run(fn, a)
    complex_dtype = np.result_type(dtype, np.complex64)
    assert w.dtype == vl.dtype == vr.dtype == complex_dtype
    expected_w, expected_vl, expected_vr = per_matrix(
        lambda m: scipy_linalg.eig(m, left=True, right=True), a
    )
    # the same routine: same order, same normalisation
    assert_close(w, expected_w.astype(complex_dtype), dtype, 10)
    assert_close(vr, expected_vr.astype(complex_dtype), dtype, 10)
    assert_close(vl, expected_vl.astype(complex_dtype), dtype, 10)
    gw, gvr = run_generic(["eig"], eig(), a)
    assert_same_eigenvalues(gw, w, dtype)
    # the generic eigenvectors: a vr = vr diag(w), unit norm
    assert_close(a @ gvr, gvr * gw[..., None, :], dtype, 20)
    assert_close(np.linalg.norm(gvr, axis=-2), np.ones(gw.shape), dtype)


# -- schur, hessenberg, tridiagonal ---------------------------------------------------------------


def schur(vectors=True):
    def fn(x):
        return spectral.schur_p.bind(
            x, compute_schur_vectors=vectors, sort_eig_vals=False, select_callable=None
        )

    return fn


def check_schur(a, t, z, dtype):
    assert_close(z @ t @ np.conj(np.swapaxes(z, -1, -2)), a, dtype, 20)
    # quasi-upper-triangular: nothing below the first subdiagonal (complex: upper triangular)
    below = -1 if np.issubdtype(dtype, np.complexfloating) else -2
    assert_close(np.tril(t, below - 0), np.zeros_like(t), dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_schur(dtype):
    a = rng_matrix((2, 5, 5), dtype)
    assert targets(schur(), a) == {f"lapack_{letter(dtype)}gees_ffi"}
    t, z = run(schur(), a)
    output = "complex" if np.issubdtype(dtype, np.complexfloating) else "real"
    expected_t, expected_z = per_matrix(lambda m: scipy_linalg.schur(m, output=output), a)
    assert_close(t, expected_t, dtype, 20)
    assert_close(z, expected_z, dtype, 20)
    check_schur(a, t, z, dtype)
    gt, gz = run_generic(["schur"], schur(), a)
    check_schur(a, gt, gz, dtype)
    (only_t,) = run(schur(vectors=False), a)
    assert_close(only_t, t, dtype, 20)


@pytest.mark.parametrize("dtype", DTYPES)
def test_hessenberg(dtype):
    a = rng_matrix((2, 5, 5), dtype)

    def fn(x):
        return spectral.hessenberg_p.bind(x)

    assert targets(fn, a) == {f"lapack_{letter(dtype)}gehrd_ffi"}
    packed, taus = run(fn, a)
    gehrd = lapack_call("gehrd", a)
    expected, expected_taus = per_matrix(lambda m: gehrd(m)[:2], a)
    assert_close(packed, expected, dtype, 10)
    assert_close(taus, expected_taus[..., :4], dtype)
    generic = run_generic(["hessenberg"], fn, a)
    assert_close(generic[0], packed, dtype, 10)
    assert_close(generic[1], taus, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lower", [True, False])
def test_tridiagonal(dtype, lower):
    a = hermitian((2,), 5, dtype)

    def fn(x):
        return spectral.tridiagonal_p.bind(x, lower=lower)

    kind = "hetrd" if np.issubdtype(dtype, np.complexfloating) else "sytrd"
    assert targets(fn, a) == {f"lapack_{letter(dtype)}{kind}_ffi"}
    packed, d, e, taus = run(fn, a)
    sytrd = lapack_call(kind, a)
    expected = per_matrix(lambda m: tuple(sytrd(m, lower=int(lower))[:4]), a)
    for got, want in zip((packed, d, e, taus), expected):
        assert_close(got, want, dtype, 10)
    generic = run_generic(["tridiagonal"], fn, a)
    for got, want in zip(generic, (packed, d, e, taus)):
        assert_close(got, want, dtype, 10)


# -- tridiagonal_solve -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", [(), (3,)])
def test_tridiagonal_solve(dtype, batch):
    m = 6
    dl, d, du = (rng_matrix((*batch, m), dtype, seed) for seed in (1, 2, 3))
    d = d + 4
    dl[..., 0] = 0
    du[..., -1] = 0
    b = rng_matrix((*batch, m, 2), dtype, seed=4)

    def fn(dl, d, du, b):
        return factor.tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=False)

    assert targets(fn, dl, d, du, b) == {f"lapack_{letter(dtype)}gtsv_ffi"}
    x = run(fn, dl, d, du, b)
    matrix = (
        d[..., :, None] * np.eye(m)
        + dl[..., :, None] * np.eye(m, k=-1)
        + du[..., :, None] * np.eye(m, k=1)
    )
    assert_close(x, np.linalg.solve(matrix, b), dtype, 10)
    assert_close(run_generic(["tridiagonal_solve"], fn, dl, d, du, b), x, dtype, 10)


def test_tridiagonal_solve_singular_is_nan():
    m = 4
    dl = np.zeros((2, m))
    du = np.zeros((2, m))
    d = np.ones((2, m))
    d[1, 2] = 0  # singular
    b = np.ones((2, m, 1))

    def fn(dl, d, du, b):
        return factor.tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=False)

    x = run(fn, dl, d, du, b)
    np.testing.assert_allclose(x[0], b[0])
    assert np.isnan(x[1]).all()


# -- derivatives through the LAPACK lowerings ------------------------------------------------------


def numerical_gradient(f, x, eps=1e-6):
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = eps
        grad[index] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad


def lu_solve(a, b):
    packed, _, perm = factor.lu_p.bind(a)
    solve = dict(left_side=True, transpose_a=False, conjugate_a=False)
    y = factor.triangular_solve_p.bind(packed, b[perm], lower=True, unit_diagonal=True, **solve)
    return factor.triangular_solve_p.bind(packed, y, lower=False, unit_diagonal=False, **solve)


def symmetrized(x):
    return (x + x.T) / 2


GRADIENT_CASES = {
    "solve": lambda a: enp.sum(lu_solve(a + 4 * enp.eye(4), enp.arange(8.0).reshape(4, 2)) ** 2),
    "cholesky": lambda a: enp.sum(
        cholesky(symmetrized(a) @ symmetrized(a).T + 4 * enp.eye(4))
        * enp.arange(16.0).reshape(4, 4)
    ),
    "eigh": lambda a: enp.sum(eigh(symmetrized(a))[1] * enp.arange(1.0, 5.0)),
    "svd": lambda a: enp.sum(svd(compute_uv=False)(a)[0] * enp.arange(1.0, 5.0)),
}


# The routine each case's gradient program calls.
GRADIENT_ROUTINES = {
    "solve": "lapack_dgetrf_ffi",
    "cholesky": "lapack_dpotrf_ffi",
    "eigh": "lapack_dsyevd_ffi",
    "svd": "lapack_dgesdd_ffi",
}


@pytest.mark.parametrize("case", sorted(GRADIENT_CASES))
def test_gradients_match_finite_differences(case):
    f = GRADIENT_CASES[case]
    a = rng_matrix((4, 4), np.float64, seed=7)
    assert GRADIENT_ROUTINES[case] in targets(ember.grad(f), a)
    grad = np.asarray(ember.jit(ember.grad(f))(a))
    expected = numerical_gradient(lambda x: float(ember.jit(f)(x)), a)
    np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-6)


# -- a batch split over devices --------------------------------------------------------------------
