"""``ember.scipy.signal.csd``, ``welch``, ``stft`` and ``istft``: windowed FFTs of overlapping
segments (istft adds them back); csd and welch average their periodograms of overlapping segments
(Welch's method), as ``jax.scipy.signal``.

Segments are cut by one static gather; windows are computed on the host (periodic, as
SciPy's ``get_window`` gives them for spectral analysis).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import (
    creation,
    elementwise as enp,
    fft,
    manipulation,
    nonzero,
    padding,
    quantiles,
    reductions,
)
from ember._src.scipy.signal import _remove_line


def _cosine_sum(n: int, coefficients: tuple[float, ...]) -> np.ndarray:
    phase = 2 * np.pi * np.arange(n) / n  # periodic: one sample past a symmetric window
    return sum((-1) ** k * c * np.cos(k * phase) for k, c in enumerate(coefficients))


_WINDOWS = {
    "hann": lambda n: _cosine_sum(n, (0.5, 0.5)),
    "hanning": lambda n: _cosine_sum(n, (0.5, 0.5)),
    "hamming": lambda n: _cosine_sum(n, (0.54, 0.46)),
    "blackman": lambda n: _cosine_sum(n, (0.42, 0.5, 0.08)),
    "boxcar": np.ones,
    "ones": np.ones,
    "rect": np.ones,
    "rectangular": np.ones,
    "bartlett": lambda n: 1 - np.abs(2 * np.arange(n) / n - 1),
}


def _window(window: Any, nperseg: int, dtype: np.dtype) -> Any:
    if isinstance(window, str):
        if window not in _WINDOWS:
            raise ValueError(
                f"unsupported window {window!r}: use one of {sorted(_WINDOWS)} or an array"
                f"{errors.where()}"
            )
        return np.asarray(_WINDOWS[window](nperseg), dtype)
    win = creation.asarray(window)
    if get_aval(win).shape != (nperseg,):
        raise ValueError(
            f"window must be 1-d of length nperseg={nperseg}, got shape {get_aval(win).shape}"
            f"{errors.where()}"
        )
    return win.astype(dtype)


def _median_bias(n: int) -> float:
    """The ratio of the median to the mean of n chi-squared(2) periodogram values."""
    ii = 2 * np.arange(1, (n - 1) // 2 + 1)
    return float(1 + np.sum(1.0 / (ii + 1) - 1.0 / ii))


def _detrended(segments: Any, detrend: Any) -> Any:
    if detrend is False or detrend is None:
        return segments
    if callable(detrend):
        return detrend(segments)
    if detrend in ("constant", "c"):
        return segments - reductions.mean(segments, axis=-1, keepdims=True)
    if detrend in ("linear", "l"):
        return _remove_line(segments)
    raise ValueError(f"detrend must be 'constant', 'linear', False or a callable, got {detrend!r}")


def _as_signal(x: Any) -> Any:
    x = creation.asarray(x)
    if not dtypes.is_inexact(get_aval(x).dtype):
        x = x.astype(dtypes.default_float())
    return x


def csd(
    x: Any,
    y: Any,
    fs: Any = 1.0,
    window: str = "hann",
    nperseg: int | None = None,
    noverlap: int | None = None,
    nfft: int | None = None,
    detrend: str = "constant",
    return_onesided: bool = True,
    scaling: str = "density",
    axis: int = -1,
    average: str = "mean",
) -> tuple[Any, Any]:
    """(frequencies, cross spectral density of x and y) by Welch's method: the periodograms
    ``conj(X) Y`` of overlapping windowed segments, averaged ('mean' or 'median')."""
    if scaling not in ("density", "spectrum"):
        raise ValueError(f"Unknown scaling: {scaling!r}{errors.where()}")
    if average not in ("mean", "median"):
        raise ValueError(f"average must be 'mean' or 'median', got {average!r}{errors.where()}")
    x = manipulation.moveaxis(_as_signal(x), axis, -1)
    y = x if y is None else manipulation.moveaxis(_as_signal(y), axis, -1)
    n = max(get_aval(x).shape[-1], get_aval(y).shape[-1])
    x, y = (_padded(v, n) for v in (x, y))
    dtype = np.result_type(get_aval(x).dtype, get_aval(y).dtype)
    x, y = x.astype(dtype), y.astype(dtype)
    nperseg = min(256 if nperseg is None else int(nperseg), n)
    if nperseg < 1:
        raise ValueError(f"nperseg must be a positive integer{errors.where()}")
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    nfft = nperseg if nfft is None else int(nfft)
    if not 0 <= noverlap < nperseg or nfft < nperseg:
        raise ValueError(
            f"need 0 <= noverlap < nperseg <= nfft, got noverlap={noverlap}, nperseg={nperseg}, "
            f"nfft={nfft}{errors.where()}"
        )
    real = dtypes.real_dtype(dtype)
    win = _window(window, nperseg, real)
    fs = creation.asarray(fs).astype(real)
    if scaling == "density":
        scale = 1 / (fs * reductions.sum(win * win))
    else:
        scale = 1 / reductions.sum(win) ** 2
    step = nperseg - noverlap
    count = (n - nperseg) // step + 1
    index = np.arange(count)[:, None] * step + np.arange(nperseg)[None, :]
    onesided = return_onesided and not np.issubdtype(dtype, np.complexfloating)

    def spectrum(v):
        segments = _detrended(v[..., index], detrend) * win
        return fft.rfft(segments, nfft) if onesided else fft.fft(segments, nfft)

    sx = spectrum(x)
    p = enp.conjugate(sx) * (sx if y is x else spectrum(y)) * scale
    if onesided:
        last = -1 if nfft % 2 == 0 else None
        doubled = np.ones(get_aval(p).shape[-1], real)
        doubled[1:last] = 2
        p = p * doubled
        freqs = fft.rfftfreq(nfft) * fs
    else:
        freqs = fft.fftfreq(nfft) * fs
    if average == "mean":
        p = reductions.mean(p, axis=-2)
    else:
        p = _median(p) / _median_bias(count)
    return freqs, manipulation.moveaxis(p, -1, axis)


def _padded(v: Any, n: int) -> Any:
    """v zero-padded at the end of its last axis to length n (SciPy's csd pads the shorter)."""
    short = n - get_aval(v).shape[-1]
    if short == 0:
        return v
    return padding.pad(v, [(0, 0)] * (get_aval(v).ndim - 1) + [(0, short)])


def _median(p: Any) -> Any:
    if np.issubdtype(get_aval(p).dtype, np.complexfloating):
        real, imag = quantiles.median(enp.real(p), axis=-2), quantiles.median(enp.imag(p), axis=-2)
        return real + imag * np.asarray(1j, get_aval(p).dtype)
    return quantiles.median(p, axis=-2)


def welch(
    x: Any,
    fs: Any = 1.0,
    window: str = "hann",
    nperseg: int | None = None,
    noverlap: int | None = None,
    nfft: int | None = None,
    detrend: str = "constant",
    return_onesided: bool = True,
    scaling: str = "density",
    axis: int = -1,
    average: str = "mean",
) -> tuple[Any, Any]:
    """(frequencies, power spectral density of x) by Welch's method (real-valued)."""
    freqs, p = csd(
        x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling, axis,
        average,
    )  # fmt: skip
    return freqs, enp.real(p)


_EXTENSIONS = ("zeros", "even", "odd", "constant", None)


def _extended(x: Any, half: int, boundary: Any) -> Any:
    """x with ``half`` samples added at both ends of its last axis, as SciPy's stft does."""
    if boundary is None or half == 0:
        return x
    n = get_aval(x).shape[-1]
    if boundary == "zeros":
        return padding.pad(x, [(0, 0)] * (get_aval(x).ndim - 1) + [(half, half)])
    left, right = x[..., 1 : half + 1][..., ::-1], x[..., n - half - 1 : n - 1][..., ::-1]
    if boundary == "constant":
        left = manipulation.broadcast_to(x[..., :1], get_aval(left).shape)
        right = manipulation.broadcast_to(x[..., -1:], get_aval(right).shape)
    elif boundary == "odd":
        left, right = 2 * x[..., :1] - left, 2 * x[..., -1:] - right
    return manipulation.concatenate([left, x, right], axis=-1)


def stft(
    x: Any,
    fs: Any = 1.0,
    window: str = "hann",
    nperseg: int = 256,
    noverlap: int | None = None,
    nfft: int | None = None,
    detrend: bool = False,
    return_onesided: bool = True,
    boundary: str | None = "zeros",
    padded: bool = True,
    axis: int = -1,
) -> tuple[Any, Any, Any]:
    """(frequencies, segment times, Zxx): the FFT of each windowed segment, scaled by
    1 / sum(window); Zxx has the frequencies then the segments in place of ``axis``."""
    if boundary not in _EXTENSIONS:
        raise ValueError(f"Unknown boundary option {boundary!r}{errors.where()}")
    x = manipulation.moveaxis(_as_signal(x), axis, -1)
    n = get_aval(x).shape[-1]
    nperseg = min(int(nperseg), n)
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    nfft = nperseg if nfft is None else int(nfft)
    if nperseg < 1 or not 0 <= noverlap < nperseg or nfft < nperseg:
        raise ValueError(
            f"need 0 <= noverlap < nperseg <= nfft, got noverlap={noverlap}, nperseg={nperseg}, "
            f"nfft={nfft}{errors.where()}"
        )
    dtype = get_aval(x).dtype
    real = dtypes.real_dtype(dtype)
    x = _extended(x, nperseg // 2, boundary)
    step = nperseg - noverlap
    if padded:  # zeros at the end so that the last segment ends at the last sample
        extra = (-(get_aval(x).shape[-1] - nperseg) % step) % nperseg
        x = _padded(x, get_aval(x).shape[-1] + extra)
    length = get_aval(x).shape[-1]
    count = (length - nperseg) // step + 1
    index = np.arange(count)[:, None] * step + np.arange(nperseg)[None, :]
    win = _window(window, nperseg, real)
    segments = _detrended(x[..., index], detrend) * win
    onesided = return_onesided and not np.issubdtype(dtype, np.complexfloating)
    z = fft.rfft(segments, nfft) if onesided else fft.fft(segments, nfft)
    z = z / reductions.sum(win).astype(get_aval(z).dtype)
    fs = creation.asarray(fs).astype(real)
    freqs = (fft.rfftfreq(nfft) if onesided else fft.fftfreq(nfft)) * fs
    starts = np.arange(count) * step + nperseg / 2 - (nperseg / 2 if boundary else 0)
    times = creation.asarray(starts.astype(real)) / fs
    z = manipulation.swapaxes(z, -1, -2)  # (..., frequencies, segments)
    if axis not in (-1, get_aval(z).ndim - 2):
        z = manipulation.moveaxis(z, (-2, -1), (axis % (get_aval(z).ndim - 1), -1))
    return freqs, times, z


def istft(
    Zxx: Any,
    fs: Any = 1.0,
    window: str = "hann",
    nperseg: int | None = None,
    noverlap: int | None = None,
    nfft: int | None = None,
    input_onesided: bool = True,
    boundary: bool = True,
    time_axis: int = -1,
    freq_axis: int = -2,
) -> tuple[Any, Any]:
    """(times, x): the inverse of ``stft`` by weighted overlap-add of the inverse FFTs."""
    z = creation.asarray(Zxx)
    ndim = get_aval(z).ndim
    if ndim < 2:
        raise ValueError(f"istft: Zxx must have two or more dimensions{errors.where()}")
    time_axis, freq_axis = time_axis % ndim, freq_axis % ndim
    if time_axis == freq_axis:
        raise ValueError(f"istft: must specify differing time and frequency axes{errors.where()}")
    z = manipulation.moveaxis(z, (freq_axis, time_axis), (-2, -1))
    nfreq, count = get_aval(z).shape[-2:]
    default = 2 * (nfreq - 1) if input_onesided else nfreq
    nperseg = default if nperseg is None else int(nperseg)
    if nfft is None:
        nfft = nperseg if input_onesided and nperseg == default + 1 else default
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    if nperseg < 1 or not 0 <= noverlap < nperseg or nfft < nperseg:
        raise ValueError(
            f"need 0 <= noverlap < nperseg <= nfft, got noverlap={noverlap}, nperseg={nperseg}, "
            f"nfft={nfft}{errors.where()}"
        )
    step = nperseg - noverlap
    if not dtypes.is_inexact(get_aval(z).dtype):
        z = z.astype(dtypes.default_float())
    real = dtypes.real_dtype(get_aval(z).dtype)
    win = _window(window, nperseg, real)
    inverse = fft.irfft if input_onesided else fft.ifft
    segments = inverse(manipulation.swapaxes(z, -1, -2), nfft)[..., :nperseg]
    segments = segments * (reductions.sum(win) * win).astype(get_aval(segments).dtype)
    length = nperseg + (count - 1) * step
    index = (np.arange(count)[:, None] * step + np.arange(nperseg)[None, :]).ravel()
    batch = get_aval(segments).shape[:-2]
    flat = manipulation.reshape(segments, (*batch, count * nperseg))
    x = creation.zeros((*batch, length), get_aval(segments).dtype).at[..., index].add(flat)
    squares = manipulation.reshape(
        manipulation.broadcast_to(creation.asarray(win) ** 2, (count, nperseg)), (-1,)
    )
    norm = creation.zeros((length,), real).at[index].add(squares)
    if boundary:
        half = nperseg // 2
        x, norm = x[..., half : length - half], norm[half : length - half]
    x = x / nonzero.where(norm > 1e-10, norm, 1).astype(real)
    if ndim > 2 and time_axis != ndim - 1:
        x = manipulation.moveaxis(x, -1, time_axis - 1 if freq_axis < time_axis else time_axis)
    # SciPy and JAX count the times along x's first axis, whichever axis holds time
    times = creation.arange(get_aval(x).shape[0], dtype=real) / creation.asarray(fs).astype(real)
    return times, x
