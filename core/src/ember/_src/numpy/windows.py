"""Window functions for signal processing: Bartlett, Blackman, Hamming, Hann and Kaiser.

The length ``M`` is static; the fixed windows are constants, and ``kaiser`` follows a
(possibly traced) ``beta`` through the differentiable ``i0``."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ember._src import core, dtypes
from ember._src.numpy import creation, elementwise as enp
from ember._src.numpy.float_functions import i0
from ember._src.primitives.shape import convert_element_type


def _length(M: Any, name: str) -> int:
    return operator.index(core.concrete_or_error(M, f"{name}'s M"))


def _symmetric_positions(M: int) -> np.ndarray:
    """1 - M, 3 - M, ..., M - 1: positions about the window's centre, in half-steps."""
    return np.arange(1 - M, M, 2, dtype=np.float64)


def _constant_window(M: Any, name: str, shape_fn) -> Any:
    M = _length(M, name)
    if M < 1:
        return creation.zeros((0,), dtypes.default_float())
    if M == 1:
        return creation.ones((1,), dtypes.default_float())
    values = shape_fn(_symmetric_positions(M), M - 1)
    return creation.asarray(values.astype(dtypes.default_float()))


def bartlett(M: int) -> Any:
    """The triangular Bartlett window."""
    return _constant_window(M, "bartlett", lambda n, span: 1 - np.abs(n) / span)


def blackman(M: int) -> Any:
    return _constant_window(
        M,
        "blackman",
        lambda n, span: 0.42 + 0.5 * np.cos(np.pi * n / span) + 0.08 * np.cos(2 * np.pi * n / span),
    )


def hamming(M: int) -> Any:
    return _constant_window(M, "hamming", lambda n, span: 0.54 + 0.46 * np.cos(np.pi * n / span))


def hanning(M: int) -> Any:
    """The Hann window."""
    return _constant_window(M, "hanning", lambda n, span: 0.5 + 0.5 * np.cos(np.pi * n / span))


def kaiser(M: int, beta: Any) -> Any:
    """The Kaiser window, ``i0(beta sqrt(1 - (2n / (M - 1) - 1)**2)) / i0(beta)``."""
    M = _length(M, "kaiser")
    dtype = dtypes.default_float()
    if M < 1:
        return creation.zeros((0,), dtype)
    if M == 1:
        return creation.ones((1,), dtype)
    beta = convert_element_type(creation.asarray(beta), dtype)
    ratio = _symmetric_positions(M) / (M - 1)
    shape = np.sqrt(np.clip(1 - ratio**2, 0, None)).astype(dtype)
    return enp.divide(i0(enp.multiply(beta, shape)), i0(beta))
