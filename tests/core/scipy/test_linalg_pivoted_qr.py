"""Column-pivoted QR (``scipy.linalg.qr`` and ``qr_multiply`` with ``pivoting=True``) against
SciPy: the same permutation, ``a[:, p] = q r``, and JAX's output shapes for every mode."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl

from ember.scipy import linalg
from tests.core.util import assert_close

RNG = np.random.default_rng(11)


def _matrix(shape, complex_):
    a = RNG.normal(size=shape)
    if complex_:
        a = a + 1j * RNG.normal(size=shape)
    return a.astype(np.complex64 if complex_ else np.float32)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
@pytest.mark.parametrize("complex_", [False, True])
def test_pivoted_qr_matches_scipy(shape, complex_):
    a = _matrix(shape, complex_)
    q, r, p = (np.asarray(x) for x in linalg.qr(a, pivoting=True))
    _, r_scipy, p_scipy = sl.qr(a, pivoting=True)
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
    a = _matrix((5, 3), False)
    q, r, p = linalg.qr(a, mode="economic", pivoting=True)
    assert q.shape == (5, 3) and r.shape == (3, 3) and p.shape == (3,)
    assert_close(np.asarray(q) @ np.asarray(r), a[:, np.asarray(p)], atol=1e-5, rtol=0)
    r_only, p_only = linalg.qr(a, mode="r", pivoting=True)
    assert r_only.shape == (5, 3)
    np.testing.assert_array_equal(p_only, p)
    stack = RNG.normal(size=(2, 4, 3)).astype(np.float32)
    q, r, p = linalg.qr(stack, pivoting=True)
    for i in range(2):
        np.testing.assert_array_equal(p[i], sl.qr(stack[i], pivoting=True)[2])
        assert_close(np.asarray(q[i]) @ np.asarray(r[i]), stack[i][:, np.asarray(p[i])], atol=1e-5)


def test_rank_deficient_columns_come_last():
    a = _matrix((4, 3), False)
    a = np.concatenate([a[:, :1] * 0, a], axis=1)  # a zero column: the last pivot
    _, r, p = linalg.qr(a, pivoting=True)
    assert int(p[-1]) == 0
    assert abs(float(np.asarray(r)[3, 3])) < 1e-6


def test_qr_multiply_with_pivoting():
    a = _matrix((4, 3), False)
    c = RNG.normal(size=(2, 4)).astype(np.float32)
    product, r, p = linalg.qr_multiply(a, c, pivoting=True)
    expected, r_scipy, p_scipy = sl.qr_multiply(a, c, pivoting=True)
    np.testing.assert_array_equal(p, p_scipy)
    signs = np.sign(np.diagonal(np.asarray(r))) * np.sign(np.diagonal(r_scipy))
    assert_close(np.asarray(product) * signs, expected, atol=1e-4, rtol=1e-4)
    assert_close(np.asarray(r) * signs[:, None], r_scipy, atol=1e-4, rtol=1e-4)
