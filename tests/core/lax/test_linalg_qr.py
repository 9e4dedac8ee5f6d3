"""The Householder QR scales matrices whose squared column norms would overflow."""

from __future__ import annotations

import numpy as np

import ember
import ember.numpy as enp


def test_qr_of_a_huge_complex64_matrix_is_finite():
    # |1.4e19|**2 + |1.1e19|**2 overflows float32: Q and R were NaN.
    x = np.zeros((5, 2), np.complex64)
    x[1, 0], x[4, 0] = 1.4435002e19j, 1.1485342e19j
    for qr in (enp.linalg.qr, ember.jit(enp.linalg.qr)):
        q, r = (np.asarray(part) for part in qr(x))
        assert np.isfinite(q).all() and np.isfinite(r).all()
        np.testing.assert_allclose(abs(r[0, 0]), np.hypot(1.4435002e19, 1.1485342e19), rtol=1e-6)
        np.testing.assert_allclose(q @ r, x, atol=1e-6 * 1.5e19)
        np.testing.assert_allclose(q.conj().T @ q, np.eye(2), atol=1e-6)


def test_qr_of_an_ordinary_matrix_is_unscaled():
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    q, r = (np.asarray(part) for part in enp.linalg.qr(x))
    # float32 rounding cancels in r[1, 1] (LAPACK's sgeqrf is 1e-6 off there too)
    np.testing.assert_allclose(np.abs(r), np.abs(np.linalg.qr(x)[1]), rtol=5e-6)
    np.testing.assert_allclose(q @ r, x, atol=1e-5)
