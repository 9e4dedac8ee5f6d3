"""Spence's function for ``ember.scipy.special``: ``spence(x) = Li2(1 - x)``, the dilogarithm
at ``1 - x``, for real ``x >= 0``.

``Li2(y) = sum y^k / k^2`` converges fast only for ``|y| <= 1/2``; the rest of ``y <= 1`` is
brought there by the reflection ``Li2(y) + Li2(1 - y) = pi^2/6 - log(y) log(1 - y)``, Landen's
identity ``Li2(y) = -Li2(y / (y - 1)) - log(1 - y)^2 / 2`` (for -1 <= y < 0) and the inversion
``Li2(y) = -pi^2/6 - log(-y)^2 / 2 - Li2(1 / y)`` (for y < -1).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as jnp
from ember._src.numpy.operands import prepare_inexact
from ember._src.transforms.custom_derivatives import custom_jvp

_TERMS = 52  # 2^-52 / 52^2: below float64 resolution for |y| <= 1/2
_PI2_6 = math.pi**2 / 6


def _c(x: Any, value: Any) -> np.ndarray:
    return np.asarray(value, get_aval(x).dtype)


def _series(y: Any) -> Any:
    """``Li2(y)`` for ``|y| <= 1/2``."""
    total = creation.zeros_like(y)
    power = creation.ones_like(y)
    for k in range(1, _TERMS + 1):
        power = power * y
        total = total + power / (k * k)
    return total


def _li2_near(y: Any) -> Any:
    """``Li2(y)`` for ``-1 <= y <= 1/2``: the series, through Landen's identity below -1/2."""
    negative = y < -0.5
    landen_y = jnp.where(negative, y, _c(y, -1))
    landen = -_series(landen_y / (landen_y - 1)) - jnp.log1p(-landen_y) ** 2 / 2
    return jnp.where(negative, landen, _series(jnp.clip(y, _c(y, -0.5), _c(y, 0.5))))


def _li2(y: Any) -> Any:
    """``Li2(y)`` for ``y <= 1``."""
    # Reflection for 1/2 < y <= 1: Li2(y) = pi^2/6 - log(y) log(1 - y) - Li2(1 - y).
    high = y > 0.5
    high_y = jnp.where(high, y, _c(y, 1))
    log_product = jnp.where(high_y < 1, jnp.log(high_y) * jnp.log1p(-high_y), _c(y, 0))
    reflected = _PI2_6 - log_product - _series(1 - high_y)
    # Inversion for y < -1: Li2(y) = -pi^2/6 - log(-y)^2 / 2 - Li2(1 / y).
    low = y < -1
    low_y = jnp.where(low, y, _c(y, -2))
    inverted = -_PI2_6 - jnp.log(-low_y) ** 2 / 2 - _li2_near(1 / low_y)
    middle = _li2_near(jnp.clip(y, _c(y, -1), _c(y, 0.5)))
    return jnp.where(high, reflected, jnp.where(low, inverted, middle))


def _spence_impl(x: Any) -> Any:
    value = _li2(1 - jnp.maximum(x, _c(x, 0)))
    return jnp.where((x < 0) | jnp.isnan(x), _c(x, np.nan), value)


_spence = custom_jvp(_spence_impl)


@_spence.defjvp
def _spence_jvp(primals, tangents):
    (x,), (tx,) = primals, tangents
    # d/dx Li2(1 - x) = log(x) / (1 - x), whose limit at x = 1 is -1.
    away = x != 1
    slope = jnp.where(away, jnp.log(x) / jnp.where(away, 1 - x, _c(x, 1)), _c(x, -1))
    return _spence(x), tx * slope


def spence(x: Any) -> Any:
    """Spence's function ``int_1^x log(t) / (1 - t) dt`` for ``x >= 0`` (nan below)."""
    (x,) = prepare_inexact("spence", x)
    return _spence(x)
