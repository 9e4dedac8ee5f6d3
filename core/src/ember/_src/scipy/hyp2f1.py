"""Gauss's hypergeometric function ``2F1(a, b; c; x)`` for ``ember.scipy.special``, real
arguments, following SciPy's values.

Regions (``w = 1 - z``):

- ``a`` or ``b`` a non-positive integer: ``2F1`` is a polynomial, summed directly for any ``x``.
- ``x < 0``: Pfaff's transformation ``2F1(a, b; c; x) = (1 - x)^-a 2F1(a, c - b; c; z)`` with
  ``z = x / (x - 1)`` in ``(0, 1)``; otherwise ``z = x``.
- ``z <= 0.9``: the power series in ``z`` (500 terms: converged for moderate parameters).
- ``z > 0.9``: the ``1 - z`` transformation (DLMF 15.8.4), two series in ``w < 0.1``; when
  ``d = c - a - b`` is an integer its gamma factors have poles, and the limit (Abramowitz &
  Stegun 15.3.10-12, with digamma terms, as in Cephes' ``hys2f1``) is used instead.
- ``x == 1``: Gauss's sum ``Gamma(c) Gamma(d) / (Gamma(c - a) Gamma(c - b))`` if ``d > 0``, else
  inf; ``x > 1``: inf (the real function is not defined there), as SciPy.
- ``c`` a non-positive integer: inf, unless the series stops (``a`` or ``b`` a non-positive
  integer ``>= c``) before its denominator vanishes.

Every loop has a fixed length, so the function is jit-able and reverse-differentiable (the
derivative is that of the composition). Polynomials of degree above 499 and integer ``d``
with ``|d| > 100`` near ``x = 1`` are beyond those loops and give nan.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as jnp
from ember._src.numpy.operands import prepare_inexact
from ember._src.primitives.control_flow.loops import fori_loop
from ember._src.scipy import special as _special

_SERIES_TERMS = 500
_NEAR_ONE = 0.9
_TRANSFORM_TERMS = 60  # w < 0.1: 0.1^60 is far below float64 rounding
_FINITE_SUM_TERMS = 100


def _c(x: Any, value: Any) -> np.ndarray:
    return np.asarray(value, get_aval(x).dtype)


def _is_non_positive_integer(v: Any) -> Any:
    return (v <= 0) & (v == jnp.floor(v))


def _rgamma(v: Any) -> Any:
    """``1 / Gamma(v)``, 0 at the poles of Gamma (where ``gamma`` answers nan)."""
    return jnp.where(_is_non_positive_integer(v), _c(v, 0), 1 / _special.gamma(v))


def _series(a: Any, b: Any, c: Any, z: Any, terms: int) -> Any:
    """``sum_k (a)_k (b)_k / (c)_k z^k / k!`` over ``terms`` terms (a loop, not unrolled:
    hundreds of unrolled steps make a graph XLA is slow to compile)."""

    def step(k, carry):
        term, total = carry
        k = k.astype(get_aval(z).dtype)
        term = term * (a + k) * (b + k) / ((c + k) * (k + 1)) * z
        return term, total + term

    ones = creation.ones_like(z)
    return fori_loop(0, terms, step, (ones, ones))[1]


def _one_minus_z_generic(a: Any, b: Any, c: Any, w: Any) -> Any:
    """DLMF 15.8.4 for non-integer ``d = c - a - b``."""
    d = c - a - b
    gamma = _special.gamma
    first = gamma(c) * gamma(d) * _rgamma(c - a) * _rgamma(c - b)
    second = gamma(c) * gamma(-d) * _rgamma(a) * _rgamma(b)
    return first * _series(a, b, 1 - d, w, _TRANSFORM_TERMS) + second * w**d * _series(
        c - a, c - b, 1 + d, w, _TRANSFORM_TERMS
    )


def _one_minus_z_integer(a: Any, b: Any, c: Any, w: Any) -> Any:
    """A&S 15.3.10-12 for integer ``d = c - a - b``: with ``m = |d|``, a logarithmic series
    (digamma terms) plus, for ``m > 0``, a finite sum of ``m`` terms."""
    psi, gamma = _special.digamma, _special.gamma
    m = jnp.round(c - a - b)
    positive = m >= 0
    e = jnp.abs(m)
    zero = _c(w, 0)
    d1 = jnp.where(positive, m, zero)  # shifts a, b in the logarithmic series
    d2 = jnp.where(positive, zero, m)  # shifts a, b in the finite sum
    log_w = jnp.log(w)

    def log_term(k, carry):
        total, p = carry
        k = k.astype(get_aval(w).dtype)
        r = psi(1 + k) + psi(1 + k + e) - psi(a + k + d1) - psi(b + k + d1) - log_w
        total = total + p * r
        p = p * w * (a + k + d1) * (b + k + d1) / ((k + 1) * (k + 1 + e))
        return total, p

    logarithmic, _ = fori_loop(
        0, _TRANSFORM_TERMS, log_term, (creation.zeros_like(w), 1 / gamma(e + 1))
    )

    def finite_term(k, carry):
        total, p = carry
        k = k.astype(get_aval(w).dtype)
        p = p * w * (a + k + d2) * (b + k + d2) / ((1 - e + k) * (k + 1))
        return total + jnp.where(k + 1 < e, p, zero), p

    finite, _ = fori_loop(
        0, _FINITE_SUM_TERMS, finite_term, (creation.ones_like(w), creation.ones_like(w))
    )
    finite = finite * gamma(e) * gamma(c) * _rgamma(a + d1) * _rgamma(b + d1)
    log_factor = gamma(c) * _rgamma(a + d2) * _rgamma(b + d2)
    # A zero factor (a pole of Gamma(c - a) or Gamma(c - b)) drops the series, whose digamma
    # terms may be nan there.
    logarithmic = jnp.where(log_factor == 0, zero, logarithmic * log_factor)
    logarithmic = jnp.where(jnp.fmod(e, 2) == 1, -logarithmic, logarithmic)
    w_m = w**m
    value = jnp.where(
        m == 0,
        logarithmic,
        jnp.where(positive, logarithmic * w_m + finite, logarithmic + finite * w_m),
    )
    return jnp.where(e > _FINITE_SUM_TERMS, _c(w, np.nan), value)


def _non_terminating(a: Any, b: Any, c: Any, x: Any) -> Any:
    """``2F1`` for ``x < 1`` when neither ``a`` nor ``b`` is a non-positive integer."""
    negative = x < 0
    # Pfaff: for x < 0 the series runs in z = x / (x - 1) in (0, 1).
    z = jnp.where(negative, x / (x - 1), x)
    b = jnp.where(negative, c - b, b)
    prefactor = jnp.where(negative, (1 - x) ** -a, _c(x, 1))
    # After Pfaff c - b may be a non-positive integer: then the series in z is a polynomial.
    near_one = (z > _NEAR_ONE) & ~_is_non_positive_integer(b)
    series_z = jnp.where(near_one, _c(z, 0), z)
    # Where a branch is not taken, its arguments are kept inside its domain so that neither
    # its value nor its derivative is nan.
    w = jnp.where(near_one, 1 - z, _c(z, 0.05))
    d = c - a - b
    # c - a - b rounds: 0.7 - 1 + 0.3 is 5.6e-17, where the generic formula cancels badly.
    tolerance = 50 * np.finfo(get_aval(d).dtype).eps
    integer_d = jnp.abs(d - jnp.round(d)) < tolerance
    generic_d = jnp.where(integer_d, d + _c(d, 0.5), d)
    # Only d changes between the two: moving c moves d off the integers.
    transformed = jnp.where(
        integer_d,
        _one_minus_z_integer(a, b, c, w),
        _one_minus_z_generic(a, b, a + b + generic_d, w),
    )
    value = jnp.where(near_one, transformed, _series(a, b, c, series_z, _SERIES_TERMS))
    return prefactor * value


def hyp2f1(a: Any, b: Any, c: Any, x: Any) -> Any:
    """Gauss's hypergeometric function ``sum_k (a)_k (b)_k / (c)_k x^k / k!`` (analytically
    continued to ``x < -1``) for real arguments; inf for ``x > 1``, as SciPy."""
    a, b, c, x = prepare_inexact("hyp2f1", a, b, c, x)
    inf, nan = _c(x, np.inf), _c(x, np.nan)
    a_stops = _is_non_positive_integer(a)
    b_stops = _is_non_positive_integer(b)
    # The polynomial's degree is -a (or -b); the one that stops first.
    degree = jnp.where(a_stops & b_stops, jnp.minimum(-a, -b), jnp.where(a_stops, -a, -b))
    polynomial = a_stops | b_stops
    # A pole of (c)_k reached before the series stops makes the value infinite.
    c_pole = _is_non_positive_integer(c) & ~(polynomial & (-degree > c))

    ordinary_x = jnp.where(x < 1, x, _c(x, 0.5))
    ordinary = _non_terminating(
        jnp.where(polynomial, _c(a, 0.5), a), b, jnp.where(c_pole, _c(c, 1), c), ordinary_x
    )
    d = c - a - b
    gamma = _special.gamma
    gauss = gamma(c) * gamma(d) * _rgamma(c - a) * _rgamma(c - b)
    value = jnp.where(x < 1, ordinary, jnp.where((x == 1) & (d > 0), gauss, inf))
    poly_c = jnp.where(c_pole, _c(c, 1), c)
    poly = _series(a, b, poly_c, x, _SERIES_TERMS)
    poly = jnp.where(degree >= _SERIES_TERMS, nan, poly)
    value = jnp.where(polynomial, poly, value)
    return jnp.where(c_pole, inf, jnp.where(x == 0, _c(x, 1), value))
