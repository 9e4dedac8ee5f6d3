"""``ember.numpy.fft``: NumPy's FFT functions over XLA's transforms.

``n``/``s`` crop or zero-pad the input along the transformed axes, ``axes`` choose them (they
are moved last for the primitive and back afterwards), and ``norm`` is "backward" (NumPy's
default: the inverse divides by n), "ortho" or "forward".
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as enp, manipulation
from ember._src.numpy.operands import canonicalize_axis
from ember._src.numpy.repetition import roll
from ember._src.primitives.fft import fft as lax_fft
from ember._src.primitives.shape import convert_element_type
from ember._src.primitives.slicing import pad, slice_op


def _complex(x: Any) -> Any:
    dtype = get_aval(x).dtype
    if dtype.kind == "c":
        return x
    real = dtypes.to_inexact(dtype)  # as JAX: int8..int32 -> float32, int64 -> float64
    return convert_element_type(x, dtypes.complex_dtype(real))


def _real(x: Any) -> Any:
    dtype = get_aval(x).dtype
    if dtype.kind == "c":
        raise TypeError(f"this transform needs a real input, got {get_aval(x).str_short()}")
    return x if dtypes.is_float(dtype) else convert_element_type(x, dtypes.to_inexact(dtype))


def _resize(x: Any, axis: int, n: int) -> Any:
    size = get_aval(x).shape[axis]
    if n == size:
        return x
    if n < size:
        start, limit = [0] * get_aval(x).ndim, list(get_aval(x).shape)
        limit[axis] = n
        return slice_op(x, start, limit)
    widths = [(0, 0, 0)] * get_aval(x).ndim
    widths[axis] = (0, n - size, 0)
    return pad(x, np.zeros((), get_aval(x).dtype), widths)


def _scale(x: Any, count: int, norm: str | None, inverse: bool) -> Any:
    norm = norm or "backward"
    if norm not in ("backward", "ortho", "forward"):
        raise ValueError(f"norm must be 'backward', 'ortho' or 'forward', got {norm!r}")
    # XLA's inverse transforms already divide by n ("backward").
    factor = {
        ("backward", False): 1.0,
        ("backward", True): 1.0,
        ("ortho", False): 1 / math.sqrt(count),
        ("ortho", True): math.sqrt(count),
        ("forward", False): 1 / count,
        ("forward", True): float(count),
    }[(norm, inverse)]
    if factor == 1.0:
        return x
    dtype = dtypes.real_dtype(get_aval(x).dtype)
    return enp.multiply(x, np.asarray(factor, dtype))


def _axes_and_lengths(x, s, axes, default_axes) -> tuple[list[int], list[int | None]]:
    ndim = get_aval(x).ndim
    if axes is None:
        axes = default_axes if s is None else list(range(ndim - len(s), ndim))
    axes = [canonicalize_axis(a, ndim) for a in axes]
    lengths = list(s) if s is not None else [None] * len(axes)
    if len(lengths) != len(axes):
        raise ValueError(f"s {s} and axes {axes} have different lengths{errors.where()}")
    for n in lengths:
        if n is not None and operator.index(n) < 1:
            raise ValueError(
                f"invalid number of FFT data points ({n}): it must be at least 1{errors.where()}"
            )
    return axes, lengths


def _transform(x, s, axes, norm, kind: str, default_axes) -> Any:
    x = creation.asarray(x)
    axes, lengths = _axes_and_lengths(x, s, axes, default_axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"repeated axes {axes}")
    x = _real(x) if kind == "RFFT" else _complex(x)
    for axis, n in zip(axes, lengths):
        if n is not None and not (kind == "IRFFT" and axis == axes[-1]):
            x = _resize(x, axis, n)
    last = len(axes)
    moved = manipulation.moveaxis(x, axes, tuple(range(-last, 0)))
    shape = get_aval(moved).shape
    if kind == "IRFFT":
        n_last = lengths[-1] if lengths[-1] is not None else 2 * (shape[-1] - 1)
        moved = _resize(moved, get_aval(moved).ndim - 1, n_last // 2 + 1)
        fft_lengths = (*shape[-last:-1], n_last)
    else:
        fft_lengths = shape[-last:]
    out = lax_fft(moved, kind, fft_lengths)
    out = manipulation.moveaxis(out, tuple(range(-last, 0)), axes)
    count = math.prod(fft_lengths)
    return _scale(out, count, norm, inverse=kind in ("IFFT", "IRFFT"))


def fft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    return _transform(a, None if n is None else [n], [axis], norm, "FFT", [axis])


def ifft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    return _transform(a, None if n is None else [n], [axis], norm, "IFFT", [axis])


def rfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    return _transform(a, None if n is None else [n], [axis], norm, "RFFT", [axis])


def irfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    return _transform(a, None if n is None else [n], [axis], norm, "IRFFT", [axis])


_SWAPPED_NORM = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def hfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """The real spectrum of a signal with Hermitian symmetry, given its first half."""
    a = _complex(creation.asarray(a))
    return irfft(enp.conjugate(a), n, axis, _swapped(norm))


def ihfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """The inverse of ``hfft``: the first half of the Hermitian spectrum of a real signal."""
    return enp.conjugate(rfft(a, n, axis, _swapped(norm)))


def _swapped(norm: str | None) -> str:
    if norm not in _SWAPPED_NORM:
        raise ValueError(f"norm must be 'backward', 'ortho' or 'forward', got {norm!r}")
    return _SWAPPED_NORM[norm]


def _all_axes(a: Any) -> list[int]:
    return list(range(get_aval(creation.asarray(a)).ndim))


def fftn(a: Any, s: Sequence[int] | None = None, axes: Any = None, norm: str | None = None):
    return _transform(a, s, axes, norm, "FFT", _all_axes(a))


def ifftn(a: Any, s: Sequence[int] | None = None, axes: Any = None, norm: str | None = None):
    return _transform(a, s, axes, norm, "IFFT", _all_axes(a))


def rfftn(a: Any, s: Sequence[int] | None = None, axes: Any = None, norm: str | None = None):
    return _transform(a, s, axes, norm, "RFFT", _all_axes(a))


def irfftn(a: Any, s: Sequence[int] | None = None, axes: Any = None, norm: str | None = None):
    return _transform(a, s, axes, norm, "IRFFT", _all_axes(a))


def fft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: str | None = None) -> Any:
    return fftn(a, s, axes, norm)


def ifft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: str | None = None) -> Any:
    return ifftn(a, s, axes, norm)


def rfft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: str | None = None) -> Any:
    return rfftn(a, s, axes, norm)


def irfft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: str | None = None) -> Any:
    return irfftn(a, s, axes, norm)


def fftfreq(n: int, d: float = 1.0, *, dtype: Any = None, device: Any = None) -> Any:
    values = np.fft.fftfreq(n, d).astype(dtype or dtypes.default_float())
    return creation.asarray(values, device=device)


def rfftfreq(n: int, d: float = 1.0, *, dtype: Any = None, device: Any = None) -> Any:
    values = np.fft.rfftfreq(n, d).astype(dtype or dtypes.default_float())
    return creation.asarray(values, device=device)


def fftshift(x: Any, axes: Any = None) -> Any:
    x = creation.asarray(x)
    axes = _all_axes(x) if axes is None else ([axes] if np.ndim(axes) == 0 else list(axes))
    shape = get_aval(x).shape
    return roll(x, [shape[a] // 2 for a in axes], axes)


def ifftshift(x: Any, axes: Any = None) -> Any:
    x = creation.asarray(x)
    axes = _all_axes(x) if axes is None else ([axes] if np.ndim(axes) == 0 else list(axes))
    shape = get_aval(x).shape
    return roll(x, [-(shape[a] // 2) for a in axes], axes)
