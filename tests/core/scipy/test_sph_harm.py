"""ember.scipy.special.sph_harm_y against SciPy for every degree up to 10 and every order,
over the whole sphere including the poles; JAX's n_max clipping, its errors, and jit."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.scipy.special as es
from ember.errors import ConcretizationTypeError

sp = pytest.importorskip("scipy.special")

N = np.array([n for n in range(11) for _ in range(-n, n + 1)])
M = np.array([m for n in range(11) for m in range(-n, n + 1)])
THETAS = [0.0, 0.3, 1.2, np.pi / 2, 2.9, np.pi]
PHI = np.random.default_rng(0).uniform(0, 2 * np.pi, N.shape)


@pytest.mark.parametrize("theta", THETAS)
def test_complex128_against_scipy(theta):
    with ember.config.option("enable_x64", True):
        got = np.asarray(es.sph_harm_y(N, M, theta, PHI))
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, sp.sph_harm_y(N, M, theta, PHI), rtol=0, atol=5e-15)


def test_complex64_against_scipy():
    theta = np.float32(np.linspace(0, np.pi, 7))[:, None]
    phi = PHI.astype(np.float32)
    got = np.asarray(es.sph_harm_y(N, M, theta, phi))
    assert got.dtype == np.complex64 and got.shape == (7, N.size)
    expected = sp.sph_harm_y(N, M, theta.astype(np.float64), phi.astype(np.float64))
    np.testing.assert_allclose(got, expected, rtol=0, atol=3e-6)


def test_scalar_angles_give_one_value_per_degree():
    got = np.asarray(es.sph_harm_y(np.array([2, 3]), np.array([1, -2]), 0.5, 0.2))
    assert got.shape == (2,)
    np.testing.assert_allclose(got, sp.sph_harm_y([2, 3], [1, -2], 0.5, 0.2), atol=1e-6)
    assert np.asarray(es.sph_harm_y(0, 0, 0.1, 0.2)).shape == (1,)


def test_n_max_clips_the_degree_as_jax():
    clipped = es.sph_harm_y(np.array([10]), np.array([2]), 0.7, 0.3, n_max=6)
    np.testing.assert_allclose(np.asarray(clipped), sp.sph_harm_y(6, 2, 0.7, 0.3), atol=1e-6)


def test_under_jit_n_max_is_needed():
    f = ember.jit(lambda n, m, t, p: es.sph_harm_y(n, m, t, p, n_max=10))
    theta = np.full(N.shape, 1.1, np.float32)
    phi = np.full(N.shape, 0.4, np.float32)
    np.testing.assert_allclose(
        np.asarray(f(N, M, theta, phi)), sp.sph_harm_y(N, M, 1.1, 0.4), atol=3e-6
    )
    with pytest.raises(ConcretizationTypeError):
        ember.jit(es.sph_harm_y)(N, M, theta, phi)


def test_diff_n_is_not_supported():
    with pytest.raises(NotImplementedError, match="diff_n"):
        es.sph_harm_y(1, 0, 0.3, 0.2, diff_n=1)


def test_derivative_in_theta():
    # dY_1^0/dtheta = -sqrt(3 / (4 pi)) sin(theta)
    g = ember.grad(lambda t: es.sph_harm_y(1, 0, t, 0.0)[0].real)(0.8)
    assert float(g) == pytest.approx(-np.sqrt(3 / (4 * np.pi)) * np.sin(0.8), rel=1e-5)
