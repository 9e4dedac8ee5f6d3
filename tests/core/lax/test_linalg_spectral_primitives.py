"""The spectral primitives (lax/linalg_spectral_primitives.py): eigh, svd, eig, schur,
hessenberg and tridiagonal against NumPy/SciPy (LAPACK) in float32/float64/complex64/
complex128, on the default backend and the reference one, for stacks and empty matrices;
vectors compared through reconstructions and up to phase; vmap against a loop; derivatives
against finite differences; the jaxpr, the errors, NaN per failed matrix and sharding types.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl
from scipy.linalg import lapack

import ember
from ember._src import rules
from ember._src.core import ShapedArray
from ember._src.lax import linalg_spectral_primitives as spectral
from ember._src.runtime.mesh import AbstractMesh, AxisType
from ember._src.runtime.sharding import NamedSharding, PartitionSpec as P
from ember.errors import ShardingTypeError
from ember.lax import linalg
from ember.test_util import check_grads
from tests.core.util import assert_same_multiset

BACKENDS = ["default", "reference"]
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def _device(which):
    return ember.devices()[0] if which == "default" else ember.devices("reference")[0]


def _on(which, fn, *args):
    """``fn(*args)`` compiled for one backend, in float64 when an operand asks for it."""
    wide = any(np.asarray(a).dtype in (np.float64, np.complex128) for a in args)
    with ember.config.option("enable_x64", wide):
        out = ember.jit(fn, device=_device(which))(*args)
        return ember.tree_util.tree_map(np.asarray, out)


def _random(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dtype)


def _tol(dtype):
    return 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


def _h(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _close(actual, expected, dtype, scale=1.0):
    np.testing.assert_allclose(actual, expected, rtol=_tol(dtype), atol=_tol(dtype) * scale)


# --------------------------------------------------------------------------------------------
# eigh


@pytest.mark.parametrize("which", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh_matches_numpy(which, dtype):
    a = _random((2, 4, 4), dtype)
    a = a + _h(a)
    v, w = _on(which, linalg.eigh, a)
    assert v.dtype == dtype and w.dtype == np.zeros((), dtype).real.dtype
    _close(w, np.linalg.eigvalsh(a), dtype, 10)
    _close(v @ (w[..., None] * _h(v)), a, dtype, 10)
    _close(_h(v) @ v, np.broadcast_to(np.eye(4), v.shape), dtype, 10)


@pytest.mark.parametrize("which", BACKENDS)
@pytest.mark.parametrize("lower", [True, False])
def test_eigh_reads_only_one_triangle(which, lower):
    a = _random((4, 4), np.complex64)
    hermitian = np.tril(a, -1) + _h(np.tril(a, -1)) + np.diag(a.real.diagonal())
    if not lower:
        hermitian = hermitian.T.copy()
    # garbage in the other triangle (and an imaginary diagonal) is never read
    given = np.where(np.tril(np.ones((4, 4), bool), -1 if lower else 0), hermitian, 99.0)
    given = np.where(np.triu(np.ones((4, 4), bool), 1 if lower else 0), 77.0, given)
    given = given if lower else given.T.copy()
    given = np.where(np.eye(4, dtype=bool), hermitian.diagonal() + 5j, given).astype(np.complex64)
    if not lower:
        given = np.where(np.tril(np.ones((4, 4), bool), -1), 55.0, given).astype(np.complex64)
        given = np.where(np.triu(np.ones((4, 4), bool), 1), hermitian, given).astype(np.complex64)
    _, w = _on(which, lambda x: linalg.eigh(x, lower=lower, symmetrize_input=False), given)
    _close(w, np.linalg.eigvalsh(hermitian), np.complex64, 10)


@pytest.mark.parametrize("which", BACKENDS)
def test_eigh_subset_by_index(which):
    a = _random((2, 5, 5), np.float64)
    a = a + _h(a)
    v, w = _on(which, lambda x: linalg.eigh(x, subset_by_index=(1, 4)), a)
    assert v.shape == (2, 5, 3) and w.shape == (2, 3)
    _close(w, np.linalg.eigvalsh(a)[..., 1:4], np.float64, 10)
    _close(a @ v, v * w[..., None, :], np.float64, 10)


# --------------------------------------------------------------------------------------------
# svd


@pytest.mark.parametrize("which", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 5, 3), (3, 4)])
def test_svd_matches_numpy(which, dtype, shape):
    a = _random(shape, dtype)
    u, s, vt = _on(which, linalg.svd, a)
    m, n = shape[-2:]
    k = min(m, n)
    assert (u.shape[-2:], s.shape[-1], vt.shape[-2:]) == ((m, m), k, (n, n))
    _close(s, np.linalg.svd(a, compute_uv=False), dtype, 10)
    assert np.all(np.diff(s, axis=-1) <= 0)  # descending
    _close((u[..., :, :k] * s[..., None, :]) @ vt[..., :k, :], a, dtype, 10)
    _close(_h(u) @ u, np.broadcast_to(np.eye(m), u.shape), dtype, 10)
    _close(vt @ _h(vt), np.broadcast_to(np.eye(n), vt.shape), dtype, 10)
    thin = _on(which, lambda x: linalg.svd(x, full_matrices=False), a)
    assert thin[0].shape[-2:] == (m, k) and thin[2].shape[-2:] == (k, n)
    only = _on(which, lambda x: linalg.svd(x, compute_uv=False), a)
    _close(only, s, dtype, 10)


@pytest.mark.parametrize("which", BACKENDS)
def test_svd_subset_by_index(which):
    a = _random((5, 4), np.float64)
    u, s, vt = _on(which, lambda x: linalg.svd(x, full_matrices=False, subset_by_index=(1, 3)), a)
    assert (u.shape, s.shape, vt.shape) == ((5, 2), (2,), (2, 4))
    _close(s, np.linalg.svd(a, compute_uv=False)[1:3], np.float64, 10)
    _close(a @ _h(vt), u * s, np.float64, 10)
    with pytest.raises(ValueError, match="full_matrices and subset_by_index"):
        linalg.svd(a, subset_by_index=(1, 3))


# --------------------------------------------------------------------------------------------
# eig


def _geev_normalised(v, dtype):
    norms = np.linalg.norm(v, axis=-2)
    _close(norms, np.ones_like(norms), dtype, 10)
    lead = np.take_along_axis(v, np.abs(v).argmax(axis=-2)[..., None, :], axis=-2)
    _close(lead.imag, np.zeros(lead.shape), dtype, 10)


@pytest.mark.parametrize("which", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_eig_matches_numpy(which, dtype):
    a = _random((2, 4, 4), dtype, seed=1)
    w, vl, vr = _on(which, linalg.eig, a)
    complex_dtype = np.result_type(dtype, np.complex64)
    assert w.dtype == vl.dtype == vr.dtype == complex_dtype
    for got, expected in zip(w, np.linalg.eigvals(a)):
        assert_same_multiset(got, expected, 10 * _tol(dtype))
    _close(a @ vr, vr * w[..., None, :], dtype, 10)
    _close(_h(vl) @ a, w[..., :, None] * _h(vl), dtype, 10)
    _geev_normalised(vr, dtype)
    _geev_normalised(vl, dtype)
    (values,) = _on(
        which,
        lambda x: linalg.eig(x, compute_left_eigenvectors=False, compute_right_eigenvectors=False),
        a,
    )
    _close(values, w, dtype, 10)


@pytest.mark.parametrize("which", BACKENDS)
def test_eig_of_a_stack_gives_nan_for_the_matrix_that_fails(which):
    a = _random((2, 3, 3), np.float32)
    a[1, 0, 0] = np.nan
    w, vr = _on(which, lambda x: linalg.eig(x, compute_left_eigenvectors=False), a)
    assert np.all(np.isnan(w[1])) and np.all(np.isnan(vr[1]))
    assert np.all(np.isfinite(w[0])) and np.all(np.isfinite(vr[0]))


@pytest.mark.parametrize("which", BACKENDS)
def test_eigh_and_svd_give_nan_for_a_matrix_that_is_not_finite(which):
    a = np.stack([np.eye(3), np.eye(3)]).astype(np.float32)
    a[1, 1, 0] = np.inf  # in the lower triangle, the one eigh reads (LAPACK's never sees the upper)
    v, w = _on(which, lambda x: linalg.eigh(x, symmetrize_input=False), a)
    u, s, vt = _on(which, linalg.svd, a)
    for out in (v, w, u, s, vt):
        assert np.all(np.isnan(out[1])) and np.all(np.isfinite(out[0]))
    np.testing.assert_allclose(w[0], [1, 1, 1])


# --------------------------------------------------------------------------------------------
# schur


@pytest.mark.parametrize("which", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_schur_reconstructs_and_has_lapacks_form(which, dtype):
    a = _random((2, 5, 5), dtype, seed=2)
    t, z = _on(which, linalg.schur, a)
    assert t.dtype == z.dtype == dtype
    _close(z @ t @ _h(z), a, dtype, 10)
    _close(_h(z) @ z, np.broadcast_to(np.eye(5), z.shape), dtype, 10)
    assert np.all(np.tril(t, -2) == 0)
    sub = np.diagonal(t, -1, -2, -1)
    if np.dtype(dtype).kind == "c":
        assert np.all(sub == 0)
    else:  # gees's real form: 2 x 2 blocks (equal diagonals) for complex pairs, never adjacent
        assert np.all((sub[..., :-1] == 0) | (sub[..., 1:] == 0))
        for b, i in zip(*np.nonzero(sub)):
            _close(t[b, i, i], t[b, i + 1, i + 1], dtype, 10)
    for b in range(2):
        expected = np.linalg.eigvals(a[b])
        assert_same_multiset(np.linalg.eigvals(t[b]), expected, 10 * _tol(dtype))
    (only_t,) = _on(which, lambda x: linalg.schur(x, compute_schur_vectors=False), a)
    _close(only_t, t, dtype, 10)


def test_schur_real_form_matches_scipy_up_to_order():
    a = _random((6, 6), np.float64, seed=3)
    t, _ = _on("default", linalg.schur, a)
    expected, _ = sl.schur(a, output="real")
    # as many 2 x 2 blocks as SciPy's, with the same eigenvalues (the order may differ)
    blocks = np.count_nonzero(np.diagonal(t, -1))
    assert blocks == np.count_nonzero(np.diagonal(expected, -1)) > 0
    assert_same_multiset(np.linalg.eigvals(t), np.linalg.eigvals(expected), 10 * _tol(np.float64))


# --------------------------------------------------------------------------------------------
# hessenberg and tridiagonal: LAPACK's packed forms, entry by entry (no phase freedom)

_PREFIX = {np.float32: "s", np.float64: "d", np.complex64: "c", np.complex128: "z"}


@pytest.mark.parametrize("which", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_hessenberg_matches_lapack_gehrd(which, dtype):
    a = _random((2, 5, 5), dtype, seed=4)
    packed, taus = _on(which, linalg.hessenberg, a)
    assert packed.shape == (2, 5, 5) and taus.shape == (2, 4)
    gehrd = getattr(lapack, _PREFIX[dtype] + "gehrd")
    for b in range(2):
        expected, expected_taus, info = gehrd(a[b])
        assert info == 0
        _close(packed[b], expected, dtype, 10)
        _close(taus[b], expected_taus[:4], dtype, 10)


@pytest.mark.parametrize("which", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lower", [True, False])
def test_tridiagonal_matches_lapack_sytrd(which, dtype, lower):
    a = _random((2, 5, 5), dtype, seed=5)
    a = a + _h(a)
    packed, d, e, taus = _on(which, lambda x: linalg.tridiagonal(x, lower=lower), a)
    real = np.zeros((), dtype).real.dtype
    assert (d.dtype, e.dtype, taus.dtype) == (real, real, dtype)
    routine = _PREFIX[dtype] + ("hetrd" if np.dtype(dtype).kind == "c" else "sytrd")
    for b in range(2):
        expected, ed, ee, etaus, info = getattr(lapack, routine)(a[b], lower=int(lower))
        assert info == 0
        _close(d[b], ed, dtype, 10)
        _close(e[b], ee, dtype, 10)
        _close(taus[b], etaus, dtype, 10)
        _close(packed[b], expected, dtype, 10)


# --------------------------------------------------------------------------------------------
# Every primitive: empty matrices and stacks, vmap, the jaxpr


def _every_factorisation(x):
    sym = x + _swap(x)
    return (
        linalg.eigh(sym),
        linalg.svd(x),
        linalg.eig(x),
        linalg.schur(x),
        linalg.hessenberg(x),
        linalg.tridiagonal(sym),
    )


def _swap(x):
    return ember.numpy.swapaxes(x, -1, -2)


@pytest.mark.parametrize("which", BACKENDS)
@pytest.mark.parametrize("shape", [(0, 0), (3, 0, 0), (0, 2, 2)])
def test_empty_matrices_and_stacks(which, shape):
    x = np.zeros(shape, np.float32)
    got = _on(which, _every_factorisation, x)
    batch, n = shape[:-2], shape[-1]
    (v, w), (u, s, vt), (ew, vl, vr), (t, z), (h, htaus), (tri, d, e, ttaus) = got
    assert v.shape == u.shape == vt.shape == vl.shape == t.shape == z.shape == shape
    assert w.shape == s.shape == ew.shape == d.shape == (*batch, n)
    assert htaus.shape == e.shape == ttaus.shape == (*batch, max(n - 1, 0))
    assert ew.dtype == np.complex64 and tri.shape == h.shape == shape


@pytest.mark.parametrize("which", BACKENDS)
def test_svd_of_empty_rectangles_gives_identity_factors(which):
    u, s, vt = _on(which, linalg.svd, np.zeros((3, 0), np.float32))
    np.testing.assert_array_equal(u, np.eye(3))
    assert s.shape == (0,) and vt.shape == (0, 0)


def test_vmap_matches_a_loop():
    a = _random((3, 4, 4), np.float32, seed=6)
    got = ember.vmap(_every_factorisation)(a)
    for i in range(3):
        one = _every_factorisation(a[i])
        for batched, single in zip(
            ember.tree_util.tree_leaves(got), ember.tree_util.tree_leaves(one)
        ):
            np.testing.assert_allclose(np.asarray(batched)[i], np.asarray(single), atol=1e-5)
    # vmap over an inner axis moves it to the front
    moved = ember.vmap(lambda x: linalg.svd(x, compute_uv=False), in_axes=1)(a)
    expected = np.stack([np.linalg.svd(a[:, i], compute_uv=False) for i in range(4)])
    np.testing.assert_allclose(np.asarray(moved), expected, rtol=1e-4)


def test_backends_agree():
    a = _random((2, 4, 4), np.float64, seed=7)
    for fn in (
        lambda x: linalg.eigh(x + _swap(x))[1],
        lambda x: linalg.svd(x, compute_uv=False),
        lambda x: linalg.hessenberg(x),
        lambda x: linalg.tridiagonal(x + _swap(x))[1:],
    ):
        default, reference = _on("default", fn, a), _on("reference", fn, a)
        for x, y in zip(
            ember.tree_util.tree_leaves(default), ember.tree_util.tree_leaves(reference)
        ):
            _close(x, y, np.float64, 10)
    default, reference = _on("default", linalg.eig, a), _on("reference", linalg.eig, a)
    for b in range(2):
        assert_same_multiset(default[0][b], reference[0][b], 10 * _tol(np.float64))


def test_the_jaxpr_shows_each_primitive_with_its_parameters():
    x = np.eye(3, dtype=np.float32)
    text = str(ember.make_jaxpr(_every_factorisation)(x))
    for expected in (
        "eigh[",
        "subset_by_index=None",
        "sort_eigenvalues=True",
        "svd[",
        "full_matrices=True",
        "compute_uv=True",
        "eig[",
        "compute_left_eigenvectors=True",
        "enable_eigvec_derivs=False",
        "schur[",
        "compute_schur_vectors=True",
        "sort_eig_vals=False",
        "hessenberg ",
        "tridiagonal[",
        "lower=True",
    ):
        assert expected in text, (expected, text)


# --------------------------------------------------------------------------------------------
# Derivatives: the jvp rules (JAX's) against finite differences


def test_eigh_derivatives():
    a = _random((3, 3), np.float64, seed=8)
    a = a + a.T + np.diag([0.0, 3.0, 6.0])  # well separated eigenvalues

    def invariant(x):  # eigenvalues and a sign-free function of the eigenvectors
        v, w = linalg.eigh(x)
        return w, (v * v) @ np.arange(3.0)

    with ember.config.option("enable_x64", True):
        check_grads(invariant, (a,), order=1, modes=("fwd", "rev"))


def test_eigh_derivative_of_a_subset_is_refused():
    a = np.diag(np.arange(3.0, dtype=np.float32))
    with pytest.raises(NotImplementedError, match="partial eigendecomposition"):
        ember.jvp(lambda x: linalg.eigh(x, subset_by_index=(0, 2)), (a,), (a,))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4)])
def test_svd_derivatives(dtype, shape):
    a = _random(shape, dtype, seed=9)

    def invariant(x):  # singular values, and u vt (sign- and phase-free)
        u, s, vt = linalg.svd(x, full_matrices=False)
        return s, u @ vt

    with ember.config.option("enable_x64", True):
        check_grads(invariant, (a,), order=1, modes=("fwd", "rev"))
        check_grads(lambda x: linalg.svd(x, compute_uv=False), (a,), order=1)


def test_eig_derivatives():
    a = _random((3, 3), np.float64, seed=10) + np.diag([0.0, 3.0, 6.0])

    def eigenvalues(x):
        (w,) = linalg.eig(x, compute_left_eigenvectors=False, compute_right_eigenvectors=False)
        return ember.numpy.sort(w.real)

    def right_vectors(x):  # the gauge is fixed by geev's normalisation: differentiable
        w, vr = linalg.eig(x, compute_left_eigenvectors=False, enable_eigvec_derivs=True)
        order = ember.numpy.argsort(w.real)
        return ember.numpy.abs(vr[:, order]) ** 2

    with ember.config.option("enable_x64", True):
        check_grads(eigenvalues, (a,), order=1, modes=("fwd", "rev"))
        check_grads(right_vectors, (a,), order=1, modes=("fwd",))
        with pytest.raises(NotImplementedError, match="enable_eigvec_derivs"):
            ember.jvp(lambda x: linalg.eig(x)[2], (a,), (a,))


# --------------------------------------------------------------------------------------------
# Errors and sharding types


def test_bad_operands_are_refused():
    with pytest.raises(ValueError, match="square"):
        spectral.eigh_p.bind(
            np.zeros((2, 3), np.float32),
            lower=True,
            sort_eigenvalues=True,
            subset_by_index=None,
            algorithm=None,
        )
    with pytest.raises(TypeError, match="floating or complex"):
        spectral.hessenberg_p.bind(np.zeros((3, 3), np.int32))
    with pytest.raises(ValueError, match="subset_by_index"):
        linalg.eigh(np.eye(3, dtype=np.float32), subset_by_index=(2, 5))
    with pytest.raises(NotImplementedError, match="sort_eig_vals"):
        linalg.schur(np.eye(3, dtype=np.float32), sort_eig_vals=True)
    # the public functions convert integers first
    assert np.asarray(linalg.eigh(np.eye(2, dtype=np.int32))[1]).dtype == np.float32


MESH = AbstractMesh((2, 2), ("X", "Y"), (AxisType.Explicit,) * 2)


def _typed(shape, *spec):
    return ShapedArray(shape, np.float32, sharding=NamedSharding(MESH, P(*spec)))


def test_sharding_batch_dimensions_may_be_split_matrix_ones_not():
    params = {
        "full_matrices": False,
        "compute_uv": True,
        "subset_by_index": None,
        "algorithm": None,
    }
    s, u, vt = rules.abstract_eval(spectral.svd_p, [_typed((4, 6, 5), "X")], params)
    assert tuple(s.typed_sharding.spec)[:1] == ("X",)
    assert tuple(u.typed_sharding.spec)[:1] == ("X",) and vt.shape == (4, 5, 5)
    with pytest.raises(ShardingTypeError, match="reshard"):
        rules.abstract_eval(spectral.svd_p, [_typed((4, 6, 5), None, "Y")], params)
    with pytest.raises(ShardingTypeError, match="whole"):
        rules.abstract_eval(spectral.hessenberg_p, [_typed((4, 4, 4), None, None, "X")], {})
