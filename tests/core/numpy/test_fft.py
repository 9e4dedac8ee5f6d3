"""ember.numpy.fft against numpy.fft, with gradients through every transform kind."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.test_util import check_grads

rng = np.random.default_rng(0)
X = rng.normal(size=(3, 8)).astype(np.float32)
Z = (X + 1j * rng.normal(size=(3, 8))).astype(np.complex64)
SPECTRUM = np.fft.rfftn(X)

CASES = {
    "fft": lambda m: m.fft.fft(Z),
    "ifft": lambda m: m.fft.ifft(Z),
    "fft_crop": lambda m: m.fft.fft(Z, n=5),
    "fft_pad_axis0": lambda m: m.fft.fft(X, n=11, axis=0),
    "rfft": lambda m: m.fft.rfft(X),
    "irfft": lambda m: m.fft.irfft(Z, n=9),
    "fft2": lambda m: m.fft.fft2(Z),
    "ifftn": lambda m: m.fft.ifftn(Z, axes=(0, 1)),
    "rfftn": lambda m: m.fft.rfftn(X, axes=(0, 1)),
    "irfftn": lambda m: m.fft.irfftn(SPECTRUM, s=X.shape, axes=(0, 1)),
    "ortho": lambda m: m.fft.fft(Z, norm="ortho"),
    "forward": lambda m: m.fft.ifft(Z, norm="forward"),
    "hfft": lambda m: m.fft.hfft(Z[0], n=8),
    "hfft_ortho": lambda m: m.fft.hfft(Z[0], norm="ortho"),
    "ihfft": lambda m: m.fft.ihfft(X, axis=0),
    "ihfft_forward": lambda m: m.fft.ihfft(X[0], n=6, norm="forward"),
    "fftshift": lambda m: m.fft.fftshift(X),
    "ifftshift": lambda m: m.fft.ifftshift(X, axes=1),
    "fftfreq": lambda m: m.fft.fftfreq(8, 0.1),
    "rfftfreq": lambda m: m.fft.rfftfreq(9, 0.5),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy(name):
    got, expected = np.asarray(CASES[name](enp)), CASES[name](np)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_gradients_through_each_kind():
    tol = {"atol": 5e-2, "rtol": 5e-2}
    check_grads(lambda v: enp.imag(enp.fft.fft(v) ** 2).sum(), (Z[0],), order=2, **tol)
    check_grads(lambda v: (enp.abs(enp.fft.rfft(v)) ** 2).sum(), (X[0],), order=1, **tol)
    spectrum = SPECTRUM[0].astype(np.complex64)
    check_grads(lambda v: (enp.fft.irfft(v, n=8) ** 2).sum(), (spectrum,), order=1, **tol)
    assert ember.vmap(enp.fft.rfft)(X).shape == (3, 5)


@pytest.mark.parametrize(
    "call",
    [
        lambda x: enp.fft.fft(x, n=0),
        lambda x: enp.fft.rfft(x, n=-2),
        lambda x: enp.fft.irfft(x, n=0),
        lambda x: enp.fft.fftn(x.reshape(2, 2), s=(0, 2)),
    ],
)
def test_a_non_positive_length_is_a_value_error(call):
    """As NumPy: ember used to divide by zero (n=0) or report an out-of-bounds slice (n<0)."""
    with pytest.raises(ValueError, match=r"invalid number of FFT data points \((0|-2)\)"):
        call(enp.ones(4))
