"""ember.scipy.signal against SciPy: convolutions and correlations, detrend, welch/csd and
stft/istft, with JAX's answers pinned where JAX departs from SciPy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.signal

import ember.numpy as enp
from ember.scipy import signal
from ember.test_util import check_grads
from tests.core.util import assert_close

RNG = np.random.default_rng(5)


def _close(actual, expected, rtol=1e-4, atol=1e-5):
    assert_close(actual, expected, rtol=rtol, atol=atol)


SHAPES = [((7,), (3,)), ((3,), (4,)), ((5, 6), (2, 3)), ((2, 3), (4, 5)), ((4, 5, 3), (2, 2, 2))]


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("method", ["direct", "fft"])
def test_convolve_correlate_match_scipy(shapes, mode, method):
    x = RNG.normal(size=shapes[0]).astype(np.float32)
    k = RNG.normal(size=shapes[1]).astype(np.float32)
    _close(signal.convolve(x, k, mode=mode, method=method), scipy.signal.convolve(x, k, mode))
    _close(signal.correlate(x, k, mode=mode, method=method), scipy.signal.correlate(x, k, mode))
    _close(signal.fftconvolve(x, k, mode=mode), scipy.signal.fftconvolve(x, k, mode=mode))


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("kernel", [(2, 3), (3, 2), (3, 3)])
def test_2d_variants_match_scipy(mode, kernel):
    # an even kernel has no centre: correlate2d's 'same' starts one later than correlate's
    x = RNG.normal(size=(5, 6)).astype(np.float32)
    k = RNG.normal(size=kernel).astype(np.float32)
    _close(signal.convolve2d(x, k, mode=mode), scipy.signal.convolve2d(x, k, mode=mode))
    _close(signal.correlate2d(x, k, mode=mode), scipy.signal.correlate2d(x, k, mode=mode))


def test_complex_correlation_conjugates_the_kernel():
    x = (RNG.normal(size=5) + 1j * RNG.normal(size=5)).astype(np.complex64)
    k = (RNG.normal(size=3) + 1j * RNG.normal(size=3)).astype(np.complex64)
    _close(signal.correlate(x, k), scipy.signal.correlate(x, k))
    _close(signal.fftconvolve(x, k, "same"), scipy.signal.fftconvolve(x, k, "same"))


def test_integer_inputs_promote_to_float():
    # JAX 0.10: convolve([1, 2, 3], [0, 1, 2, 3]) == [0, 1, 4, 10, 12, 9] as float32
    got = signal.convolve(np.array([1, 2, 3]), np.array([0, 1, 2, 3]))
    assert got.dtype == enp.float32
    _close(got, [0.0, 1.0, 4.0, 10.0, 12.0, 9.0])


def test_fftconvolve_axes_broadcast_the_others():
    x = RNG.normal(size=(3, 8)).astype(np.float32)
    k = RNG.normal(size=(1, 3)).astype(np.float32)
    for mode in ("full", "same", "valid"):
        _close(signal.fftconvolve(x, k, mode, axes=1), scipy.signal.fftconvolve(x, k, mode, axes=1))


def test_convolve_grads():
    x = RNG.normal(size=6).astype(np.float32)
    k = RNG.normal(size=3).astype(np.float32)
    check_grads(lambda x, k: signal.convolve(x, k, mode="same"), (x, k), order=1)


def test_signal_bad_input():
    x = np.ones((3, 4), np.float32)
    with pytest.raises(ValueError, match="mode"):
        signal.convolve(x, x, mode="circular")
    with pytest.raises(ValueError, match="same dimensionality"):
        signal.convolve(x, np.ones(3, np.float32))
    with pytest.raises(ValueError, match="at least as large"):
        signal.convolve(x, np.ones((2, 5), np.float32), mode="valid")
    with pytest.raises(NotImplementedError, match="boundary"):
        signal.convolve2d(x, x, boundary="wrap")
    with pytest.raises(ValueError, match="2-dimensional"):
        signal.correlate2d(np.ones(3), np.ones(2))


def test_detrend_matches_scipy():
    d = RNG.normal(size=(3, 10)).astype(np.float32) + np.arange(10, dtype=np.float32)
    _close(signal.detrend(d), scipy.signal.detrend(d))
    _close(signal.detrend(d, axis=0, type="constant"), scipy.signal.detrend(d, 0, "constant"))
    _close(signal.detrend(d, bp=[3, 7]), scipy.signal.detrend(d, bp=[3, 7]))
    with pytest.raises(ValueError, match="type"):
        signal.detrend(d, type="quadratic")


SPECTRAL_X = (np.sin(np.arange(100) * 0.3) + RNG.normal(size=100)).astype(np.float32)
SPECTRAL_Y = (np.cos(np.arange(100) * 0.3) + RNG.normal(size=100)).astype(np.float32)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(nperseg=16),
        dict(nperseg=20, noverlap=5, nfft=32),
        dict(nperseg=16, window="hamming", scaling="spectrum"),
        dict(nperseg=16, detrend="linear"),
        dict(nperseg=16, average="median"),
        dict(nperseg=17, return_onesided=False, fs=3.0),
        dict(nperseg=16, window=np.arange(16.0)),
        dict(nperseg=15, window="bartlett", detrend=False),
    ],
    ids=str,
)
def test_welch_and_csd_match_scipy(kwargs):
    for got, expected in zip(
        signal.welch(SPECTRAL_X, **kwargs), scipy.signal.welch(SPECTRAL_X, **kwargs)
    ):
        _close(got, expected, rtol=2e-4)
    pair = signal.csd(SPECTRAL_X, SPECTRAL_Y, **kwargs)
    for got, expected in zip(pair, scipy.signal.csd(SPECTRAL_X, SPECTRAL_Y, **kwargs)):
        _close(got, expected, rtol=2e-4)


def test_welch_axes_padding_and_complex():
    stacked = np.stack([SPECTRAL_X, SPECTRAL_Y])
    _close(
        signal.welch(stacked.T, nperseg=16, axis=0)[1],
        scipy.signal.welch(stacked.T, nperseg=16, axis=0)[1],
    )
    # the shorter input is zero-padded, as in SciPy
    expected = scipy.signal.csd(SPECTRAL_X, SPECTRAL_Y[:80], nperseg=16)[1]
    _close(signal.csd(SPECTRAL_X, SPECTRAL_Y[:80], nperseg=16)[1], expected, rtol=2e-4)
    z = (SPECTRAL_X + 1j * SPECTRAL_Y).astype(np.complex64)
    freqs, p = signal.welch(z, nperseg=16)  # complex input: two-sided
    assert freqs.shape == (16,)
    _close(p, scipy.signal.welch(z, nperseg=16)[1], rtol=2e-4)


def test_welch_pinned_to_jax():
    # JAX 0.10: welch(x, nperseg=16) and with average='median', first three values
    x = (np.sin(np.arange(64) * 0.3) + np.cos(np.arange(64) * 1.1)).astype(np.float32)
    _close(signal.welch(x, nperseg=16)[1][:3], [1.0003718, 3.3555453, 1.833308], rtol=1e-4)
    median = signal.welch(x, nperseg=16, average="median")[1][:3]
    _close(median, [1.1395755, 4.1762657, 2.3303814], rtol=1e-4)
    freqs, p = signal.welch(x)  # nperseg defaults to 256, cut to the signal's length
    assert freqs.shape == p.shape == (33,)
    with pytest.raises(ValueError, match="window"):
        signal.welch(x, window="kaiser")
    with pytest.raises(ValueError, match="scaling"):
        signal.welch(x, scaling="power")


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(nperseg=16),
        dict(nperseg=20, noverlap=5, nfft=32),
        dict(nperseg=16, boundary=None),
        dict(nperseg=16, padded=False),
        dict(nperseg=16, boundary="even"),
        dict(nperseg=16, boundary="odd"),
        dict(nperseg=16, boundary="constant", window="hamming", fs=2.0),
        dict(nperseg=17, return_onesided=False, detrend="linear"),
        dict(),
    ],
    ids=str,
)
def test_stft_matches_scipy(kwargs):
    for got, expected in zip(
        signal.stft(SPECTRAL_X, **kwargs), scipy.signal.stft(SPECTRAL_X, **kwargs)
    ):
        assert got.shape == expected.shape
        _close(got, expected, rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("shape, axis", [((3, 100), -1), ((100, 3), 0), ((2, 50, 3), 1)])
def test_stft_axes(shape, axis):
    x = RNG.normal(size=shape).astype(np.float32)
    got, expected = signal.stft(x, nperseg=8, axis=axis), scipy.signal.stft(x, nperseg=8, axis=axis)
    assert got[2].shape == expected[2].shape
    _close(got[2], expected[2], rtol=2e-4, atol=2e-5)
    with pytest.raises(ValueError, match="boundary"):
        signal.stft(x, boundary="periodic")


@pytest.mark.parametrize(
    "kwargs",
    [dict(nperseg=16), dict(nperseg=20, noverlap=5), dict(nperseg=16, window="hamming", fs=2.0)],
    ids=str,
)
@pytest.mark.parametrize("boundary", [True, False])
def test_istft_matches_scipy_and_inverts_stft(kwargs, boundary):
    z = scipy.signal.stft(SPECTRAL_X, **kwargs)[2].astype(np.complex64)
    expected = scipy.signal.istft(z, boundary=boundary, **kwargs)
    for got, want in zip(signal.istft(z, boundary=boundary, **kwargs), expected):
        assert got.shape == want.shape
        _close(got, want, rtol=2e-4, atol=2e-5)
    if boundary:
        back = signal.istft(signal.stft(SPECTRAL_X, **kwargs)[2], **kwargs)[1]
        _close(np.asarray(back)[:100], SPECTRAL_X, atol=1e-5)


def test_istft_axes_and_two_sided():
    x = RNG.normal(size=(2, 50, 3)).astype(np.float32)
    z = scipy.signal.stft(x, nperseg=8, axis=1)[2].astype(np.complex64)
    # times count along the result's first axis, as in SciPy and JAX 0.10: here (2,)
    for args in [dict(time_axis=-1, freq_axis=1), dict(time_axis=0, freq_axis=2)]:
        zz = z if args["time_axis"] == -1 else np.moveaxis(z, -1, 0)
        for got, want in zip(
            signal.istft(zz, nperseg=8, **args), scipy.signal.istft(zz, nperseg=8, **args)
        ):
            assert got.shape == want.shape
            _close(got, want, rtol=2e-4, atol=2e-5)
    z = scipy.signal.stft(SPECTRAL_X, nperseg=16, return_onesided=False)[2].astype(np.complex64)
    got = signal.istft(z, nperseg=16, input_onesided=False)[1]
    _close(got, scipy.signal.istft(z, nperseg=16, input_onesided=False)[1], rtol=2e-4, atol=2e-5)
    with pytest.raises(ValueError, match="differing"):
        signal.istft(z, time_axis=0, freq_axis=0)
