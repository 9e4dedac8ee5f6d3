"""Owen's T function for ``ember.scipy.special``:
``T(h, a) = 1/(2 pi) int_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx``.

For ``0 <= a <= 1`` the integral (with ``exp(-h^2/2)`` taken out) is a 30-point Gauss-Legendre
sum while ``h a <= 8``; beyond that the integrand has decayed inside the interval and the
integral to infinity, ``pi/2 erfcx(h / sqrt 2)``, is exact to working precision. ``a > 1`` uses
``T(h, a) + T(a h, 1/a) = (ndtr(h) ndtr(-a h) + ndtr(a h) ndtr(-h)) / 2`` (for h >= 0), and
``T(-h, a) = T(h, a)``, ``T(h, -a) = -T(h, a)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.polynomial.legendre import leggauss

from ember._src.core import get_aval
from ember._src.numpy import elementwise as jnp, reductions
from ember._src.numpy.operands import prepare_inexact
from ember._src.scipy import ndtr as _ndtr

_NODES, _WEIGHTS = leggauss(30)
_WIDE = 8.0  # h a beyond which the integrand is below float64 rounding at x = a


def _c(x: Any, value: Any) -> np.ndarray:
    return np.asarray(value, get_aval(x).dtype)


def _owens_t_unit(h: Any, a: Any) -> Any:
    """``T(h, a)`` for ``h >= 0`` and ``0 <= a <= 1``."""
    nodes = _c(h, (_NODES + 1) / 2)
    x = a[..., None] * nodes
    hh = (h * h)[..., None]
    integrand = jnp.exp(-hh * x * x / 2) / (1 + x * x)
    quadrature = reductions.sum(integrand * _c(h, _WEIGHTS / 2), axis=-1) * a
    to_infinity = (math.pi / 2) * _ndtr.erfcx(h / math.sqrt(2))
    integral = jnp.where(h * a > _WIDE, to_infinity, quadrature)
    return jnp.exp(-h * h / 2) / (2 * math.pi) * integral


def owens_t(h: Any, a: Any) -> Any:
    """Owen's T function: the probability that ``X > h`` and ``0 < Y < a X`` for independent
    standard normals ``X, Y`` (for ``h, a >= 0``)."""
    h, a = prepare_inexact("owens_t", h, a)
    h_abs, a_abs = jnp.abs(h), jnp.abs(a)
    inverted = a_abs > 1
    safe_a = jnp.where(inverted, a_abs, _c(a, 1))
    inner = _owens_t_unit(
        jnp.where(inverted, safe_a * h_abs, h_abs), jnp.where(inverted, 1 / safe_a, a_abs)
    )
    ah = safe_a * h_abs
    ndtr = _ndtr.ndtr
    identity = (ndtr(h_abs) * ndtr(-ah) + ndtr(ah) * ndtr(-h_abs)) / 2 - inner
    value = jnp.where(inverted, identity, inner)
    # Infinite a: the identity's limit ndtr(-|h|) / 2 (the quadrature argument is 0 there).
    value = jnp.where(a_abs == np.inf, ndtr(-h_abs) / 2, value)
    return jnp.where(a < 0, -value, value)
