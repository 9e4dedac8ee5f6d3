"""Gauss's hypergeometric function ``2F1(a, b; c; x)`` for ``ember.scipy.special``, real
arguments, following SciPy's values.

Regions (``w = 1 - z``):

- ``x == 0``: 1; ``a == c`` or ``b == c``: ``(1 - x)^-b`` or ``(1 - x)^-a`` (inf at ``x > 1``
  where that is not real).
- ``a`` or ``b`` a non-positive integer ``-n``: ``2F1`` is a polynomial of degree ``n``,
  summed in ``x`` for ``x <= 0.5`` and in ``1 - x`` above (DLMF 15.8.7), where the sum in
  ``x`` would cancel; valid for any ``x``.
- Otherwise, for ``x < 0``, Pfaff's transformation ``2F1(a, b; c; x) = (1 - x)^-a
  2F1(a, c - b; c; z)`` with ``z = x / (x - 1)`` in ``(0, 1)``; for ``0 <= x < 1``, ``z = x``.
  Then the power series in ``z`` (500 terms) for ``z <= 0.9`` or where those terms suffice,
  and otherwise the ``1 - z`` transformation (DLMF 15.8.4), two series in ``w < 0.1``. When
  ``d = c - a - b`` is an integer its gamma factors have poles, and the limit (Abramowitz &
  Stegun 15.3.10-12, with digamma terms, as Cephes' ``hys2f1``) is used instead. With large
  parameters the transformation's two terms cancel (``hyp2f1(15.5, 15.5, 35.7, 0.99)`` is
  off by 3e-6, relative).
- ``c - a`` or ``c - b`` a non-positive integer (before the two cases above): Euler's
  transformation ``(1 - x)^d 2F1(c - a, c - b; c; x)``, a polynomial, for any ``x``.
- ``x == 1``: Gauss's sum ``Gamma(c) Gamma(d) / (Gamma(c - a) Gamma(c - b))`` if ``d > 0``,
  else inf; ``x > 1``: inf (the real function is not defined there), as SciPy.
- ``c`` a non-positive integer: inf, unless the series stops (``a`` or ``b`` a non-positive
  integer ``> c``) before its denominator vanishes; ``b == c`` a non-positive integer gives
  SciPy's partial sum ``sum_(k <= -c) (a)_k x^k / k!``.

Every loop has a fixed length, so the function is jit-able and reverse-differentiable (the
derivative is that of the composition; in ``a``, ``b`` and ``c`` it is nan where the integer
``d`` limit is used, which holds ``d`` fixed). Beyond those loops (polynomials of degree
500 or more; integer ``d`` with ``|d| > 100`` near ``x = 1``) the value is nan.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as jnp
from ember._src.numpy.operands import prepare_inexact
from ember._src.primitives.control_flow.loops import fori_loop
from ember._src.scipy import special as _special
from ember._src.transforms.custom_derivatives import custom_jvp

_SERIES_TERMS = 500
_NEAR_ONE = 0.9
_TRANSFORM_TERMS = 60  # w < 0.1: 0.1^60 is far below float64 rounding
_FINITE_SUM_TERMS = 100


def _c(x: Any, value: Any) -> np.ndarray:
    return np.asarray(value, get_aval(x).dtype)


def _safe(taken: Any, value: Any, fallback: float) -> Any:
    """``value`` where ``taken``, else ``fallback``. A branch of ``where`` gets arguments inside
    its domain where it is not taken: ``where`` sends that branch a zero cotangent, and
    ``0 * inf`` from an infinite partial derivative would make the gradient nan."""
    return jnp.where(taken, value, _c(value, fallback))


def _is_non_positive_integer(v: Any) -> Any:
    return (v <= 0) & (v == jnp.floor(v))


def _rgamma(v: Any) -> Any:
    """``1 / Gamma(v)``, 0 at the poles of Gamma (where ``gamma`` answers nan)."""
    pole = _is_non_positive_integer(v)
    return jnp.where(pole, _c(v, 0), 1 / _special.gamma(_safe(~pole, v, 1.0)))


def _next_term(term: Any, a: Any, b: Any, c: Any, z: Any, k: Any) -> Any:
    """The series' term ``k + 1`` from term ``k``."""
    # A polynomial whose c is a non-positive integer below its degree reaches 0 / 0 in the
    # step after its last term; the numerator is 0 then, and so is the term.
    denominator = (c + k) * (k + 1)
    denominator = jnp.where(denominator == 0, _c(z, 1), denominator)
    return term * (a + k) * (b + k) / denominator * z


def _series(a: Any, b: Any, c: Any, z: Any, terms: int) -> Any:
    """``sum_k (a)_k (b)_k / (c)_k z^k / k!`` over ``terms`` terms (a loop, not unrolled:
    hundreds of unrolled steps make a graph XLA is slow to compile)."""

    def step(k, carry):
        term, total = carry
        term = _next_term(term, a, b, c, z, k.astype(get_aval(z).dtype))
        return term, total + term

    ones = creation.ones_like(z)
    return fori_loop(0, terms, step, (ones, ones))[1]


def _one_minus_x_to(x: Any, p: Any) -> Any:
    """``(1 - x)^p``, inf (as SciPy) where that is not real: ``x > 1`` with ``p`` no integer."""
    not_real = (x > 1) & (p != jnp.round(p))
    return jnp.where(not_real, _c(x, np.inf), _safe(~not_real, 1 - x, 1.0) ** p)


def _polynomial(a: Any, b: Any, c: Any, z: Any) -> Any:
    """``2F1(a, -n; c; z)`` with ``b = -n`` a non-positive integer, for any ``z``."""
    n = -b
    # DLMF 15.8.7: 2F1(a, -n; c; z) = (c - a)_n / (c)_n 2F1(-n, a; a - c - n + 1; 1 - z).
    reflected_c = a - c - n + 1
    flip = (z > 0.5) & ~_is_non_positive_integer(reflected_c) & ~_is_non_positive_integer(c)
    flipped_c = _safe(flip, reflected_c, 1.0)
    flipped_w = _safe(flip, 1 - z, 0.0)
    direct_z = _safe(~flip, z, 0.0)

    # One loop for the three sums (the ratio, the sum in 1 - z, the one in z): a loop's
    # steps cost more than its width.
    def step(k, carry):
        ratio, flipped_term, flipped, direct_term, direct = carry
        k = k.astype(get_aval(z).dtype)
        ratio = jnp.where(k < n, ratio * (c - a + k) / _safe(flip, c + k, 1.0), ratio)
        flipped_term = _next_term(flipped_term, b, a, flipped_c, flipped_w, k)
        direct_term = _next_term(direct_term, a, b, c, direct_z, k)
        return ratio, flipped_term, flipped + flipped_term, direct_term, direct + direct_term

    ones = creation.ones_like(z)
    ratio, _, flipped, _, direct = fori_loop(0, _SERIES_TERMS, step, (ones,) * 5)
    value = jnp.where(flip, ratio * flipped, direct)
    return jnp.where(n >= _SERIES_TERMS, _c(z, np.nan), value)


def _one_minus_z_generic(a: Any, b: Any, c: Any, w: Any) -> Any:
    """DLMF 15.8.4 for non-integer ``d = c - a - b``."""
    d = c - a - b
    gamma = _special.gamma
    first = gamma(c) * gamma(d) * _rgamma(c - a) * _rgamma(c - b)
    second = gamma(c) * gamma(-d) * _rgamma(a) * _rgamma(b)
    return first * _series(a, b, 1 - d, w, _TRANSFORM_TERMS) + second * w**d * _series(
        c - a, c - b, 1 + d, w, _TRANSFORM_TERMS
    )


@custom_jvp
def _unknown_derivative(v: Any) -> Any:
    """0, with a nan derivative: added where the value is right but the derivative the
    composition would give is not (a silent wrong gradient is worse than nan)."""
    return creation.zeros_like(v)


@_unknown_derivative.defjvp
def _unknown_derivative_jvp(primals, tangents):
    (v,), (tv,) = primals, tangents
    return creation.zeros_like(v), tv * _c(v, np.nan)


def _one_minus_z_integer(a: Any, b: Any, c: Any, w: Any) -> Any:
    """A&S 15.3.10-12 for integer ``m = c - a - b``: a logarithmic series (digamma terms)
    plus, for ``m != 0``, a finite sum of ``|m|`` terms."""
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
        0, _TRANSFORM_TERMS, log_term, (creation.zeros_like(w), _rgamma(e + 1))
    )

    def finite_term(k, carry):
        total, p = carry
        k = k.astype(get_aval(w).dtype)
        p = p * w * (a + k + d2) * (b + k + d2) / _safe(k + 1 < e, (1 - e + k) * (k + 1), 1.0)
        return total + jnp.where(k + 1 < e, p, zero), p

    finite, _ = fori_loop(
        0, _FINITE_SUM_TERMS, finite_term, (creation.ones_like(w), creation.ones_like(w))
    )
    finite = finite * gamma(_safe(e > 0, e, 1.0)) * gamma(c) * _rgamma(a + d1) * _rgamma(b + d1)
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
    # After Pfaff c - b may be a non-positive integer: then the series in z is a polynomial
    # (where hyp2f1 uses Euler's transformation; this value is not taken).
    # Above 0.9 the series is still used where its last term, ~ z^N N^(a + b - c - 1) with
    # N = 500, is below rounding: more accurate than the transformation, whose two terms
    # cancel when the parameters are large.
    eps = np.finfo(get_aval(z).dtype).eps
    log_last_term = _SERIES_TERMS * jnp.log(jnp.clip(z, _c(z, 0.5), _c(z, 1))) + (
        a + b - c - 1
    ) * np.log(_SERIES_TERMS)
    series_converges = log_last_term < np.log(eps / 10)
    near_one = (z > _NEAR_ONE) & ~series_converges & ~_is_non_positive_integer(b)
    w = _safe(near_one, 1 - z, 0.05)
    d = c - a - b
    # c - a - b rounds: 0.7 - 1 + 0.3 is 5.6e-17, where the generic formula cancels badly.
    tolerance = 50 * np.finfo(get_aval(d).dtype).eps
    integer_d = jnp.abs(d - jnp.round(d)) < tolerance
    # The integer formula holds d at its integer, so its derivatives in a, b and c miss the
    # term from moving d: those are nan there (the one in x is right).
    frozen_d = near_one & integer_d
    unknown = _unknown_derivative(
        _safe(frozen_d, a, 0.5) + _safe(frozen_d, b, 0.5) + _safe(frozen_d, c, 0.5)
    )
    # Each formula gets a d in its own domain (moving c moves d) where it is not taken.
    transformed = jnp.where(
        integer_d,
        _one_minus_z_integer(a, b, jnp.where(integer_d, c, jnp.round(d) + a + b), w) + unknown,
        _one_minus_z_generic(a, b, jnp.where(integer_d, c + _c(c, 0.5), c), w),
    )
    series = _series(a, b, c, _safe(~near_one, z, 0.0), _SERIES_TERMS)
    return prefactor * jnp.where(near_one, transformed, series)


def hyp2f1(a: Any, b: Any, c: Any, x: Any) -> Any:
    """Gauss's hypergeometric function ``sum_k (a)_k (b)_k / (c)_k x^k / k!`` (analytically
    continued to ``x < -1``) for real arguments; inf for ``x > 1``, as SciPy."""
    a, b, c, x = prepare_inexact("hyp2f1", a, b, c, x)
    inf = _c(x, np.inf)
    a_stops = _is_non_positive_integer(a)
    b_stops = _is_non_positive_integer(b)
    polynomial = a_stops | b_stops
    # The polynomial's parameter as b: the one that stops first (the larger) where both do.
    swap = a_stops & (~b_stops | (a > b))
    stop, other = jnp.where(swap, a, b), jnp.where(swap, b, a)
    # A pole of (c)_k reached before the series stops makes the value infinite.
    c_pole = _is_non_positive_integer(c) & ~(polynomial & (stop > c))
    below_one = x < 1
    ordinary = _non_terminating(
        _safe(~polynomial, a, 0.5),
        _safe(~polynomial, b, 0.5),
        _safe(~c_pole, c, 1.0),
        _safe(below_one & ~polynomial, x, 0.5),
    )
    d = c - a - b
    gauss_sum = (x == 1) & (d > 0) & ~c_pole
    safe_c, safe_d = _safe(gauss_sum, c, 1.0), _safe(gauss_sum, d, 1.0)
    gauss = (
        _special.gamma(safe_c)
        * _special.gamma(safe_d)
        * _rgamma(_safe(gauss_sum, c - a, 1.0))
        * _rgamma(_safe(gauss_sum, c - b, 1.0))
    )
    value = jnp.where(below_one, ordinary, jnp.where(gauss_sum, gauss, inf))

    # The finite sums, one call for the three cases (each is a long loop):
    # Euler: 2F1(a, b; c; x) = (1 - x)^d 2F1(c - a, c - b; c; x), a polynomial times a power
    # when c - a or c - b is a non-positive integer; valid for any x (as SciPy).
    ca_stops = _is_non_positive_integer(c - a)
    cb_stops = _is_non_positive_integer(c - b)
    euler = (ca_stops | cb_stops) & ~polynomial & ~c_pole
    euler_swap = ca_stops & (~cb_stops | (a < b))
    # SciPy's one asymmetric case: b == c a non-positive integer (a != c) sums the series of
    # (1 - x)^-a only up to the term x^-c, where (c)_k reaches its pole: 2F1(a, c; c; x) summed
    # as a polynomial in the parameter c.
    truncated = (b == c) & (a != c) & _is_non_positive_integer(c)
    finite = polynomial | euler | truncated
    sum_a = jnp.where(polynomial, other, jnp.where(euler, jnp.where(euler_swap, c - b, c - a), a))
    sum_b = jnp.where(polynomial, stop, jnp.where(euler, jnp.where(euler_swap, c - a, c - b), c))
    sum_c = jnp.where(c_pole & ~truncated, _c(c, 1), c)
    finite_sum = _polynomial(
        _safe(finite, sum_a, 0.5), _safe(finite, sum_b, 0.0), _safe(finite, sum_c, 1.0), x
    )
    euler_power = _one_minus_x_to(x, _safe(euler, d, 0.0))
    value = jnp.where(euler, euler_power * finite_sum, value)
    value = jnp.where(polynomial, finite_sum, value)
    value = jnp.where(c_pole, inf, value)
    # (1 - x)^-b where a == c (and the mirror image), as SciPy, even for polynomials and
    # x >= 1 (there inf where c is a pole of the series that does not stop).
    value = jnp.where(
        b == c, _one_minus_x_to(x, -a), jnp.where(a == c, _one_minus_x_to(x, -b), value)
    )
    defined = below_one | ~_is_non_positive_integer(c) | (b == c) & a_stops | (a == c) & b_stops
    value = jnp.where(((a == c) | (b == c)) & ~defined, inf, value)
    value = jnp.where(truncated, finite_sum, value)
    return jnp.where(x == 0, _c(x, 1), value)
