"""Exponential integrals for ``ember.scipy.special``: exp1, expi and expn.

Each uses its power series near 0 and a continued fraction (or, for Ei, the asymptotic series)
further out, with fixed term counts so the graphs are static; derivatives are given in closed
form (d/dx E_n = -E_{n-1}, d/dx Ei = e^x / x).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import errors
from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as jnp, manipulation
from ember._src.numpy.operands import prepare_inexact
from ember._src.primitives import special as _special
from ember._src.primitives.control_flow.loops import fori_loop
from ember._src.transforms.custom_derivatives import custom_jvp

_SERIES_TERMS = 25  # E_n(x) for x <= 1
_FRACTION_TERMS = 60  # E_n(x) for x > 1: relative error below 1e-13 from x = 1 on
_EI_SERIES_TERMS = 120  # Ei(x) for 0 < x <= 40
_EI_ASYMPTOTIC_TERMS = 30  # Ei(x) for x > 40
# The series and fractions run as fori_loops, not unrolled Python loops: unrolled, every program
# that uses them holds hundreds of copies of the step, which XLA is slow (and once crashed) to
# compile.


def _c(x: Any, value: Any) -> np.ndarray:
    return np.asarray(value, get_aval(x).dtype)


def _fraction(n: Any, x: Any) -> Any:
    """``E_n(x)`` for ``x > 1`` by the even contraction of its continued fraction:
    ``e^-x / (x + n - 1 n / (x + n + 2 - 2 (n + 1) / (x + n + 4 - ...)))``."""

    def step(i, t):
        k = (_FRACTION_TERMS - i).astype(get_aval(x).dtype)  # k = _FRACTION_TERMS .. 1
        return x + n + 2 * (k - 1) - k * (n + k - 1) / t

    t = fori_loop(0, _FRACTION_TERMS, step, x + n + 2 * _FRACTION_TERMS)
    return jnp.exp(-x) / t


def _series(n: Any, x: Any) -> Any:
    """``E_n(x)`` for ``0 < x <= 1``, ``n >= 1``: the term ``k = n - 1`` of the power series
    is replaced by its limit ``(-x)^(n-1) / (n-1)! (psi(n) - log x)``."""
    log_part = _special.digamma(n) - jnp.log(x)

    def step(k, carry):
        total, power = carry  # power = (-x)^k / k!
        k = k.astype(get_aval(x).dtype)
        power = jnp.where(k == 0, power, power * -x / jnp.maximum(k, _c(x, 1)))
        hit = n == k + 1
        regular = jnp.where(hit, _c(x, 0), power / jnp.where(hit, _c(x, 1), k + 1 - n))
        return total + jnp.where(hit, power * log_part, -regular), power

    start = (creation.zeros_like(x), creation.ones_like(x))
    return fori_loop(0, _SERIES_TERMS, step, start)[0]


def _expn_impl(n: Any, x: Any) -> Any:
    positive = x > 0
    safe_x = jnp.where(positive, x, _c(x, 1))
    safe_n = jnp.where(n >= 1, n, _c(n, 1))
    small = safe_x <= 1
    value = jnp.where(
        small,
        _series(safe_n, jnp.minimum(safe_x, _c(x, 1))),
        _fraction(safe_n, jnp.maximum(safe_x, _c(x, 1))),
    )
    value = jnp.where(n == 0, jnp.exp(-safe_x) / safe_x, value)
    # At x == 0, E_n is 1 / (n - 1) for n > 1 and infinite for n <= 1.
    at_zero = jnp.where(n > 1, 1 / jnp.maximum(n - 1, _c(n, 1)), _c(x, np.inf))
    value = jnp.where(x == 0, at_zero, value)
    invalid = (x < 0) | (n < 0) | (n != jnp.floor(n)) | jnp.isnan(x)
    return jnp.where(invalid, _c(x, np.nan), value)


_expn = custom_jvp(_expn_impl)


@_expn.defjvp
def _expn_jvp(primals, tangents):
    (n, x), (_, tx) = primals, tangents
    # d/dx E_n(x) = -E_{n-1}(x); for n == 0, d/dx (e^-x / x) = -e^-x (x + 1) / x^2.
    lower = _expn(jnp.maximum(n - 1, _c(n, 0)), x)
    zeroth = -jnp.exp(-x) * (x + 1) / (x * x)
    slope = jnp.where(n == 0, zeroth, -lower)
    return _expn(n, x), tx * slope


def expn(n: Any, x: Any) -> Any:
    """The generalised exponential integral ``E_n(x) = int_1^inf e^(-x t) / t^n dt`` for
    integer ``n >= 0`` and ``x >= 0`` (nan elsewhere)."""
    n, x = prepare_inexact("expn", n, x)
    return _expn(n, x)


def exp1(x: Any) -> Any:
    """The exponential integral ``E_1(x) = int_x^inf e^-t / t dt`` (nan for ``x < 0``)."""
    (x,) = prepare_inexact("exp1", x)
    return _expn(creation.ones_like(x), x)


def _ei_positive(x: Any) -> Any:
    """``Ei(x)`` for ``x > 0``: ``gamma + log x + sum x^k / (k k!)`` up to 40, then the
    asymptotic ``e^x / x sum k! / x^k``."""
    dtype = get_aval(x).dtype
    near = jnp.minimum(x, _c(x, 40))

    def series_step(k, carry):
        term, total = carry
        k = (k + 1).astype(dtype)
        term = term * near / k
        return term, total + term / k

    start = (creation.ones_like(near), creation.zeros_like(near))
    total = fori_loop(0, _EI_SERIES_TERMS, series_step, start)[1]
    series = _c(x, np.euler_gamma) + jnp.log(near) + total
    far = jnp.maximum(x, _c(x, 40))

    def asymptotic_step(k, carry):
        term, total = carry
        term = term * (k + 1).astype(dtype) / far
        return term, total + term

    start = (creation.ones_like(far), creation.ones_like(far))
    asymptotic = fori_loop(0, _EI_ASYMPTOTIC_TERMS, asymptotic_step, start)[1]
    # e^x / x * sum, with e^x split so the product overflows only when the value does.
    half = jnp.exp(far / 2)
    asymptotic = half * (half / far) * asymptotic
    return jnp.where(x <= 40, series, asymptotic)


def _expi_impl(x: Any) -> Any:
    positive = x > 0
    value = jnp.where(
        positive,
        _ei_positive(jnp.where(positive, x, _c(x, 1))),
        -_expn(creation.ones_like(x), jnp.where(positive, _c(x, 1), -x)),
    )
    return jnp.where(x == 0, _c(x, -np.inf), value)


_expi = custom_jvp(_expi_impl)


@_expi.defjvp
def _expi_jvp(primals, tangents):
    (x,), (tx,) = primals, tangents
    return _expi(x), tx * jnp.exp(x) / x


def expi(x: Any) -> Any:
    """The exponential integral ``Ei(x) = -PV int_-x^inf e^-t / t dt`` (``-E_1(-x)`` for
    ``x < 0``)."""
    (x,) = prepare_inexact("expi", x)
    return _expi(x)


# --------------------------------------------------------------------------------------------
# Bessel functions of the first kind, J_0 .. J_v (Miller's backward recurrence)

_RESCALE_AT = 1e10


def _bessel_jn_small(z: Any, v: int) -> list[Any]:
    """``J_k(z)`` for tiny ``|z|``: the first two terms of the power series."""
    out = []
    half = z / 2
    for k in range(v + 1):
        lead = half**k / float(np.prod(np.arange(1, k + 1, dtype=np.float64)))
        out.append(lead * (1 - half * half / (k + 1)))
    return out


def _bessel_jn_miller(z: Any, v: int, n_iter: int) -> list[Any]:
    """``J_0(z) .. J_v(z)``: run ``J_(k-1) = (2k / z) J_k - J_(k+1)`` down from order
    ``n_iter`` with arbitrary start values, rescaling whenever they grow large, and normalise
    by ``J_0 + 2 (J_2 + J_4 + ...) = 1``."""
    top = max(n_iter, v + 1)
    prev, cur = creation.zeros_like(z), creation.ones_like(z)
    norm = creation.zeros_like(z) if top % 2 else 2 * cur
    kept: dict[int, Any] = {top: cur} if top <= v else {}
    for k in range(top, 0, -1):
        prev, cur = cur, (2 * k / z) * cur - prev
        order = k - 1
        if order % 2 == 0:
            norm = norm + (cur if order == 0 else 2 * cur)
        if order <= v:
            kept[order] = cur
        scale = jnp.where(jnp.abs(cur) > _RESCALE_AT, _c(z, 1 / _RESCALE_AT), _c(z, 1))
        prev, cur, norm = prev * scale, cur * scale, norm * scale
        kept = {j: value * scale for j, value in kept.items()}
    return [kept[k] / norm for k in range(v + 1)]


def bessel_jn(z: Any, *, v: int, n_iter: int = 50) -> Any:
    """Bessel functions of the first kind of orders ``0 .. v`` at ``z``, stacked on a new
    leading axis; ``n_iter`` is the order the backward recurrence starts from (accurate for
    ``|z|`` well below it)."""
    (z,) = prepare_inexact("bessel_jn", z)
    v, n_iter = int(v), int(n_iter)
    if v < 0:
        raise ValueError(f"bessel_jn: v must be a non-negative integer, got {v}{errors.where()}")
    if n_iter < 1:
        raise ValueError(f"bessel_jn: n_iter must be positive, got {n_iter}{errors.where()}")
    az = jnp.abs(z)
    tiny = az < 1e-3
    safe = jnp.where(tiny, _c(z, 1), az)
    series = _bessel_jn_small(az, v)
    miller = _bessel_jn_miller(safe, v, n_iter)
    rows = []
    for k in range(v + 1):
        value = jnp.where(tiny, series[k], miller[k])
        # J_k(-z) = (-1)^k J_k(z).
        if k % 2:
            value = jnp.where(z < 0, -value, value)
        rows.append(value)
    return manipulation.stack(rows)
