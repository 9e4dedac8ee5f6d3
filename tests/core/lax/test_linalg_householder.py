"""lax.linalg's packed Householder forms equal LAPACK's: hessenberg (gehrd), tridiagonal
(sytrd/hetrd), householder_product (orgqr) and ormqr, real and complex, single and stacked."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import lapack

from ember.lax import linalg
from tests.core.util import assert_close

RNG = np.random.default_rng(0)
TOL = dict(rtol=1e-4, atol=1e-5)


def _matrix(shape, complex_=False):
    x = RNG.standard_normal(shape)
    if complex_:
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(np.complex64 if complex_ else np.float32)


@pytest.mark.parametrize("complex_", [False, True])
def test_hessenberg_is_gehrd(complex_):
    a = _matrix((5, 5), complex_)
    a_out, taus = linalg.hessenberg(a)
    gehrd = lapack.cgehrd if complex_ else lapack.sgehrd
    expected, expected_taus, info = gehrd(a)
    assert info == 0 and taus.shape == (4,)
    assert_close(a_out, expected, **TOL)
    assert_close(taus, expected_taus[:4], **TOL)


def test_hessenberg_reconstructs_a_stack():
    a = _matrix((3, 4, 4)).astype(np.float64)
    a_out, taus = (np.asarray(v) for v in linalg.hessenberg(a.astype(np.float32)))
    for k in range(3):
        h = np.triu(a_out[k], -1)
        q, info = lapack.dorghr(a_out[k].astype(np.float64), taus[k].astype(np.float64))
        assert info == 0
        assert_close(q @ h @ q.T, a[k], **TOL)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("complex_", [False, True])
def test_tridiagonal_is_sytrd(lower, complex_):
    x = _matrix((5, 5), complex_)
    a = x + x.conj().T
    # only the chosen triangle is read: garbage in the other must not matter
    garbage = np.triu(_matrix((5, 5), complex_), 1)
    a_in = a + (garbage if lower else garbage.conj().T)
    arr, d, e, taus = linalg.tridiagonal(a_in, lower=lower)
    sytrd = lapack.chetrd if complex_ else lapack.ssytrd
    expected, expected_d, expected_e, expected_taus, info = sytrd(a_in, lower=int(lower))
    assert info == 0 and np.asarray(d).dtype == np.float32 and np.asarray(e).dtype == np.float32
    assert_close(arr, expected, **TOL)
    assert_close(d, expected_d, **TOL)
    assert_close(e, expected_e, **TOL)
    assert_close(taus, expected_taus, **TOL)


def test_tridiagonal_eigenvalues_are_a_s():
    x = _matrix((2, 6, 6))
    a = x + np.swapaxes(x, -1, -2)
    _, d, e, _ = linalg.tridiagonal(a)
    d, e = np.asarray(d, np.float64), np.asarray(e, np.float64)
    for k in range(2):
        t = np.diag(d[k]) + np.diag(e[k], 1) + np.diag(e[k], -1)
        assert_close(np.linalg.eigvalsh(t), np.linalg.eigvalsh(a[k].astype(np.float64)), **TOL)


def _geqrf(a):
    geqrf = lapack.cgeqrf if a.dtype.kind == "c" else lapack.sgeqrf
    packed, taus, _, info = geqrf(a)
    assert info == 0
    return packed, taus


@pytest.mark.parametrize("complex_", [False, True])
def test_householder_product_is_orgqr(complex_):
    packed, taus = _geqrf(_matrix((6, 4), complex_))
    orgqr = lapack.cungqr if complex_ else lapack.sorgqr
    expected, _, info = orgqr(packed, taus)
    assert info == 0
    assert_close(linalg.householder_product(packed, taus), expected, **TOL)


def test_householder_product_of_fewer_reflectors():
    packed, taus = _geqrf(_matrix((5, 3)))
    expected, _, _ = lapack.sorgqr(packed, taus[:2].copy())
    assert_close(linalg.householder_product(packed, taus[:2]), expected, **TOL)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
def test_ormqr_is_lapack_ormqr(left, transpose):
    packed, taus = _geqrf(_matrix((6, 4)))
    c = _matrix((6, 3) if left else (2, 6))
    expected, _, info = lapack.sormqr(
        "L" if left else "R", "T" if transpose else "N", packed, taus, c, lwork=64
    )
    assert info == 0
    out = linalg.ormqr(packed, taus, c, left=left, transpose=transpose)
    assert_close(out, expected, **TOL)


def test_ormqr_complex_transpose_is_the_conjugate_transpose():
    packed, taus = _geqrf(_matrix((4, 4), True))
    c = _matrix((4, 2), True)
    expected, _, info = lapack.cunmqr("L", "C", packed, taus, c, lwork=64)
    assert info == 0
    assert_close(linalg.ormqr(packed, taus, c, transpose=True), expected, **TOL)


def test_shape_errors():
    with pytest.raises(ValueError, match="taus"):
        linalg.householder_product(np.zeros((4, 3), np.float32), np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="rows"):
        linalg.householder_product(np.zeros((3, 4), np.float32), np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="ormqr"):
        linalg.ormqr(np.zeros((4, 3), np.float32), np.zeros(3, np.float32), np.zeros((3, 2)))
    with pytest.raises(np.linalg.LinAlgError, match="hessenberg"):
        linalg.hessenberg(np.zeros((3, 4), np.float32))
