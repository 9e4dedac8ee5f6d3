"""ember.scipy.special.wofz (the Faddeeva function) against SciPy across the complex plane,
its dtypes, and its derivative ``w'(z) = -2 z w(z) + 2i / sqrt(pi)``."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember
import ember.scipy.special as es

sp = pytest.importorskip("scipy.special")

# Both half planes, from 1e-3 to 1e3 in each direction; the lower half plane only where
# w (which grows like exp(-z^2) there) stays finite.
_AXIS = np.concatenate([-np.logspace(-3, 3, 25)[::-1], [0.0], np.logspace(-3, 3, 25)])
_PLANE = (_AXIS[:, None] + 1j * _AXIS[None, :]).ravel()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    PLANE = _PLANE[np.abs(sp.wofz(_PLANE)) < 1e300]


def test_complex128_across_the_plane():
    with ember.config.option("enable_x64", True):
        got = np.asarray(es.wofz(PLANE))
    assert got.dtype == np.complex128
    # Off by at most 2e-11 where the phase 2xy of exp(-z^2) is ~1e6 (rounded to 1e-10).
    np.testing.assert_allclose(got, sp.wofz(PLANE), rtol=1e-10, atol=0)


def test_complex64_across_the_plane():
    # In the lower half plane w contains exp(-z^2), whose phase 2xy is rounded to float32:
    # only where |xy| is small is a float32 answer (anyone's) accurate to float32.
    finite = (np.abs(sp.wofz(PLANE)) < 1e30) & (
        (PLANE.imag >= 0) | (np.abs(PLANE.real * PLANE.imag) < 50)
    )
    z = PLANE[finite].astype(np.complex64)
    got = np.asarray(es.wofz(z))
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got, sp.wofz(z.astype(np.complex128)), rtol=2e-5, atol=1e-30)


def test_real_arguments_give_complex_values():
    x = np.float32([-3.0, -0.5, 0.0, 0.5, 3.0, 30.0])
    got = np.asarray(es.wofz(x))
    assert got.dtype == np.complex64
    # On the real axis w(x) = exp(-x^2) + 2i/sqrt(pi) D(x), D Dawson's integral.
    np.testing.assert_allclose(got, sp.wofz(x.astype(np.float64)), rtol=2e-5)
    with ember.config.option("enable_x64", True):
        assert np.asarray(es.wofz(np.float64([1.0]))).dtype == np.complex128
    assert complex(es.wofz(0.0)) == pytest.approx(1.0)


def test_infinite_real_part_gives_zero():
    z = np.array([np.inf + 0j, -np.inf + 0j, np.inf + 1j, np.inf - 1j], np.complex64)
    np.testing.assert_array_equal(np.asarray(es.wofz(z)), np.zeros(4, np.complex64))
    assert np.isnan(np.asarray(es.wofz(np.complex64(np.nan)))).all()


def test_jit_agrees_with_eager():
    z = PLANE[::7].astype(np.complex64)
    np.testing.assert_allclose(
        np.asarray(ember.jit(es.wofz)(z)), np.asarray(es.wofz(z)), rtol=1e-5, atol=1e-30
    )


def test_derivative():
    with ember.config.option("enable_x64", True):
        z = np.array([0.3 + 0.2j, -1 + 2j, 3 - 4j, -0.5 - 0.5j, 2.0 + 0j])
        w = sp.wofz(z)
        expected = -2 * z * w + 2j / math.sqrt(math.pi)
        tangent = np.ones_like(z)
        _, got = ember.jvp(es.wofz, (z,), (tangent,))
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-10)
        # Reverse mode: the gradient of Re w is d/dx - i d/dy of Re w, which is w' (Cauchy-Riemann).
        grads = np.asarray(ember.vmap(ember.grad(lambda z: es.wofz(z).real))(z))
        np.testing.assert_allclose(grads, expected, rtol=1e-10)
