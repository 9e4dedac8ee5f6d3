"""``ember.scipy.signal``: convolution, correlation and detrending, as ``jax.scipy.signal``.

Direct convolution is one ``conv_general_dilated`` (a cross-correlation, so the kernel is
flipped); ``fftconvolve`` multiplies spectra. Integer inputs are promoted to floats as in JAX.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import (
    contractions,
    creation,
    dtype_functions,
    elementwise as enp,
    fft,
    manipulation,
    reductions,
)
from ember._src.primitives.conv import conv_general_dilated

_MODES = ("full", "same", "valid")


def _shape(x: Any) -> tuple[int, ...]:
    return get_aval(x).shape


def _inexact_pair(in1: Any, in2: Any, what: str) -> tuple[Any, Any]:
    in1, in2 = creation.asarray(in1), creation.asarray(in2)
    dtype = dtype_functions.result_type(in1, in2)
    if not dtypes.is_inexact(dtype):
        dtype = dtypes.default_float()
    if len(_shape(in1)) != len(_shape(in2)):
        raise ValueError(
            f"{what}: in1 and in2 should have the same dimensionality, got shapes "
            f"{_shape(in1)} and {_shape(in2)}{errors.where()}"
        )
    return in1.astype(dtype), in2.astype(dtype)


def _check_mode(mode: str, what: str) -> None:
    if mode not in _MODES:
        raise ValueError(f"{what}: mode must be one of {_MODES}, got {mode!r}{errors.where()}")


def _valid_order(in1: Any, in2: Any, what: str) -> tuple[Any, Any]:
    """'valid' needs one input at least as large as the other in every axis; that one first."""
    s1, s2 = _shape(in1), _shape(in2)
    if all(a >= b for a, b in zip(s1, s2)):
        return in1, in2
    if all(a <= b for a, b in zip(s1, s2)):
        return in2, in1
    raise ValueError(
        f"{what}: for 'valid' mode, one input must be at least as large as the other in every "
        f"dimension, got shapes {s1} and {s2}{errors.where()}"
    )


def _crop(
    full: Any, in1_shape: Sequence[int], in2_shape: Sequence[int], mode: str, late: bool = False
) -> Any:
    """The 'same' (centred, in1's size) or 'valid' part of a full convolution. An even kernel
    has no centre: 'same' starts (k - 1) // 2 in, or k // 2 with ``late`` (correlate2d's
    choice, as SciPy's)."""
    if mode == "full":
        return full
    index = []
    for n, k in zip(in1_shape, in2_shape):
        if mode == "same":
            start = k // 2 if late else (k - 1) // 2
            index.append(slice(start, start + n))
        else:
            big, small = max(n, k), min(n, k)
            index.append(slice(small - 1, big))
    return full[tuple(index)]


def _real_conv(x: Any, kernel: Any, precision: Any) -> Any:
    """Full N-d convolution of two real arrays of the same rank."""
    nd = len(_shape(x))
    flipped = manipulation.flip(kernel) if nd else kernel
    padding = [(k - 1, k - 1) for k in _shape(kernel)]
    out = conv_general_dilated(
        x[None, None], flipped[None, None], (1,) * nd, padding, precision=precision
    )
    return out[0, 0]


def _full_direct(x: Any, kernel: Any, precision: Any) -> Any:
    if not np.issubdtype(get_aval(x).dtype, np.complexfloating):
        return _real_conv(x, kernel, precision)
    xr, xi, kr, ki = enp.real(x), enp.imag(x), enp.real(kernel), enp.imag(kernel)
    real = _real_conv(xr, kr, precision) - _real_conv(xi, ki, precision)
    imag = _real_conv(xr, ki, precision) + _real_conv(xi, kr, precision)
    return real + imag * np.asarray(1j, get_aval(x).dtype)


def _convolve(
    in1: Any, in2: Any, mode: str, method: str, precision: Any, what: str, late: bool = False
) -> Any:
    if method not in ("auto", "direct", "fft"):
        raise ValueError(
            f"{what}: method must be 'auto', 'direct' or 'fft', got {method!r}{errors.where()}"
        )
    if method == "fft":
        return fftconvolve(in1, in2, mode=mode)
    _check_mode(mode, what)
    if mode == "valid":
        in1, in2 = _valid_order(in1, in2, what)
    if not _shape(in1):
        return in1 * in2
    full = _full_direct(in1, in2, precision)
    return _crop(full, _shape(in1), _shape(in2), mode, late)


def convolve(
    in1: Any, in2: Any, mode: str = "full", method: str = "auto", precision: Any = None
) -> Any:
    """N-d convolution of in1 with in2 (``mode`` 'full', 'same' or 'valid')."""
    in1, in2 = _inexact_pair(in1, in2, "convolve")
    return _convolve(in1, in2, mode, method, precision, "convolve")


def correlate(
    in1: Any, in2: Any, mode: str = "full", method: str = "auto", precision: Any = None
) -> Any:
    """N-d cross-correlation: convolution with in2 reversed and conjugated."""
    in1, in2 = _inexact_pair(in1, in2, "correlate")
    kernel = enp.conjugate(manipulation.flip(in2)) if _shape(in2) else enp.conjugate(in2)
    return _convolve(in1, kernel, mode, method, precision, "correlate")


def _check_2d(in1: Any, in2: Any, boundary: str, fillvalue: Any, what: str) -> None:
    if len(_shape(in1)) != 2 or len(_shape(in2)) != 2:
        raise ValueError(
            f"{what}: in1 and in2 must be 2-dimensional, got shapes {_shape(in1)} and "
            f"{_shape(in2)}{errors.where()}"
        )
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(
            f"{what}: only boundary='fill' with fillvalue=0 is supported{errors.where()}"
        )


def convolve2d(
    in1: Any,
    in2: Any,
    mode: str = "full",
    boundary: str = "fill",
    fillvalue: float = 0,
    precision: Any = None,
) -> Any:
    in1, in2 = _inexact_pair(in1, in2, "convolve2d")
    _check_2d(in1, in2, boundary, fillvalue, "convolve2d")
    return _convolve(in1, in2, mode, "direct", precision, "convolve2d")


def correlate2d(
    in1: Any,
    in2: Any,
    mode: str = "full",
    boundary: str = "fill",
    fillvalue: float = 0,
    precision: Any = None,
) -> Any:
    in1, in2 = _inexact_pair(in1, in2, "correlate2d")
    _check_2d(in1, in2, boundary, fillvalue, "correlate2d")
    kernel = enp.conjugate(manipulation.flip(in2))
    return _convolve(in1, kernel, mode, "direct", precision, "correlate2d", late=True)


def _fft_axes(ndim: int, axes: Any) -> list[int]:
    if axes is None:
        return list(range(ndim))
    axes = [axes] if isinstance(axes, (int, np.integer)) else list(axes)
    out = []
    for axis in axes:
        if not -ndim <= axis < ndim:
            raise ValueError(f"fftconvolve: axis {axis} out of range{errors.where()}")
        out.append(int(axis) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"fftconvolve: repeated axes {axes}{errors.where()}")
    return sorted(out)


def fftconvolve(in1: Any, in2: Any, mode: str = "full", axes: Any = None) -> Any:
    """Convolution through the FFT along ``axes`` (all by default); other axes broadcast."""
    in1, in2 = _inexact_pair(in1, in2, "fftconvolve")
    _check_mode(mode, "fftconvolve")
    ndim = len(_shape(in1))
    if ndim == 0:
        return in1 * in2
    axes = _fft_axes(ndim, axes)
    s1, s2 = _shape(in1), _shape(in2)
    for axis in set(range(ndim)) - set(axes):
        if s1[axis] != s2[axis] and 1 not in (s1[axis], s2[axis]):
            raise ValueError(
                f"fftconvolve: shapes {s1} and {s2} do not broadcast along axis {axis}"
                f"{errors.where()}"
            )
    if mode == "valid":
        picked = [(s1[a], s2[a]) for a in axes]
        if not all(a >= b for a, b in picked):
            if all(a <= b for a, b in picked):
                in1, in2, s1, s2 = in2, in1, s2, s1
            else:
                raise ValueError(
                    f"fftconvolve: for 'valid' mode, one input must be at least as large as the "
                    f"other along every axis, got shapes {s1} and {s2}{errors.where()}"
                )
    lengths = [s1[a] + s2[a] - 1 for a in axes]
    dtype = get_aval(in1).dtype
    if np.issubdtype(dtype, np.complexfloating):
        spectrum = fft.fftn(in1, lengths, axes) * fft.fftn(in2, lengths, axes)
        full = fft.ifftn(spectrum, lengths, axes)
    else:
        spectrum = fft.rfftn(in1, lengths, axes) * fft.rfftn(in2, lengths, axes)
        full = fft.irfftn(spectrum, lengths, axes)
    full = full.astype(dtype)
    index: list[slice] = [slice(None)] * ndim
    for axis in axes:
        n, k = s1[axis], s2[axis]
        if mode == "same":
            start = (k - 1) // 2
            index[axis] = slice(start, start + n)
        elif mode == "valid":
            index[axis] = slice(min(n, k) - 1, max(n, k))
    return full[tuple(index)]


def detrend(
    data: Any, axis: int = -1, type: str = "linear", bp: Any = 0, overwrite_data: None = None
) -> Any:
    """``data`` less its mean (type='constant') or its least-squares line, fitted piecewise
    between the breakpoints ``bp`` (type='linear')."""
    del overwrite_data
    if type not in ("constant", "c", "linear", "l"):
        raise ValueError(
            f"detrend: type must be 'linear' or 'constant', got {type!r}{errors.where()}"
        )
    data = creation.asarray(data)
    dtype = get_aval(data).dtype
    if not dtypes.is_inexact(dtype):
        data = data.astype(dtypes.default_float())
    if type in ("constant", "c"):
        return data - reductions.mean(data, axis=axis, keepdims=True)
    moved = manipulation.moveaxis(data, axis, -1)
    n = _shape(moved)[-1]
    edges = sorted({0, *np.unique(np.atleast_1d(np.asarray(bp, dtype=int))).tolist(), n})
    if edges[0] < 0 or edges[-1] > n:
        raise ValueError(f"detrend: breakpoints must lie in [0, {n}], got {bp}{errors.where()}")
    pieces = [_remove_line(moved[..., lo:hi]) for lo, hi in zip(edges[:-1], edges[1:]) if hi > lo]
    return manipulation.moveaxis(manipulation.concatenate(pieces, axis=-1), -1, axis)


def _remove_line(segment: Any) -> Any:
    """The segment less its least-squares line against 1, 2, ..., n (centred for accuracy)."""
    n = _shape(segment)[-1]
    real = dtypes.real_dtype(get_aval(segment).dtype)
    t = (np.arange(n, dtype=real) - (n - 1) / 2).astype(real)
    mean = reductions.mean(segment, axis=-1, keepdims=True)
    denominator = float(np.sum(t * t))
    if denominator == 0:
        return segment - mean
    slope = contractions.matmul(segment, t.astype(get_aval(segment).dtype)) / denominator
    return segment - mean - slope[..., None] * t
