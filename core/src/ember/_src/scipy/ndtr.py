"""The standard normal CDF and its relatives for ``ember.scipy.special``: ndtr, log_ndtr,
ndtri and the scaled complementary error function erfcx.

Each keeps relative accuracy in the far tails, where the naive formulas underflow: log_ndtr
switches to the asymptotic series of the Mills ratio, ndtri to a rational approximation in
``sqrt(-2 log p)``, erfcx to the continued fraction of ``erfc``.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from ember._src import errors
from ember._src.core import get_aval
from ember._src.numpy import elementwise as jnp
from ember._src.numpy.operands import prepare_inexact
from ember._src.primitives import special as _special
from ember._src.transforms.custom_derivatives import custom_jvp

_SQRT_2 = math.sqrt(2.0)
_SQRT_PI = math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _c(x: Any, value: Any) -> np.ndarray:
    return np.asarray(value, get_aval(x).dtype)


def _is_f64(x: Any) -> bool:
    return get_aval(x).dtype == np.float64


# --------------------------------------------------------------------------------------------
# ndtr and log_ndtr


def ndtr(x: Any) -> Any:
    """The standard normal CDF, ``erfc(-x / sqrt 2) / 2`` (accurate in both tails)."""
    (x,) = prepare_inexact("ndtr", x)
    return jnp.multiply(_c(x, 0.5), _special.erfc(jnp.divide(jnp.negative(x), _c(x, _SQRT_2))))


def log_ndtr(x: Any, series_order: int = 3) -> Any:
    """``log(ndtr(x))``, accurate far into the lower tail through ``series_order`` terms of
    the asymptotic expansion of the Mills ratio (0 <= series_order <= 30)."""
    series_order = operator.index(series_order)
    if series_order < 0:
        raise ValueError(f"log_ndtr: series_order must be non-negative{errors.where()}")
    if series_order > 30:
        raise ValueError(f"log_ndtr: series_order must be <= 30{errors.where()}")
    (x,) = prepare_inexact("log_ndtr", x)
    # Above 0, log1p(-ndtr(-x)) keeps the relative precision of the small result; between
    # ``lower`` and 0, ndtr itself is accurate; below ``lower`` ndtr underflows.
    lower = -20.0 if _is_f64(x) else -10.0
    x_hi = jnp.maximum(x, _c(x, 0.0))
    x_mid = jnp.clip(x, _c(x, lower), _c(x, 0.0))
    x_lo = jnp.minimum(x, _c(x, lower))
    high = jnp.log1p(jnp.negative(ndtr(jnp.negative(x_hi))))
    middle = jnp.log(ndtr(x_mid))
    low = _log_ndtr_asymptotic(x_lo, series_order)
    return jnp.where(
        jnp.greater(x, _c(x, 0.0)), high, jnp.where(jnp.greater(x, _c(x, lower)), middle, low)
    )


def _log_ndtr_asymptotic(x: Any, series_order: int) -> Any:
    """``log ndtr(x)`` for very negative ``x``: ``-x^2/2 - log(-x) - log sqrt(2 pi)`` plus
    ``log(1 + sum_n (-1)^n (2n-1)!! / x^(2n))``."""
    x_sq = jnp.square(x)
    total = _c(x, 1.0)
    term = _c(x, 1.0)
    for n in range(1, series_order + 1):
        term = jnp.divide(jnp.multiply(term, _c(x, -(2 * n - 1))), x_sq)
        total = jnp.add(total, term)
    head = jnp.subtract(
        jnp.subtract(jnp.multiply(_c(x, -0.5), x_sq), jnp.log(jnp.negative(x))),
        _c(x, _LOG_SQRT_2PI),
    )
    return jnp.add(head, jnp.log(total))


# --------------------------------------------------------------------------------------------
# ndtri: Acklam's rational approximation (relative error below 1.2e-9 in exact arithmetic),
# refined by one Halley step: in float64 the approximation is short of working precision, and
# in float32 its central polynomials lose digits to cancellation.

_A = (-39.69683028665376, 220.9460984245205, -275.9285104469687, 138.3577518672690)
_A += (-30.66479806614716, 2.506628277459239)
_B = (-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972)
_B += (-13.28068155288572, 1.0)
_C = (-0.007784894002430293, -0.3223964580411365, -2.400758277161838, -2.549732539343734)
_C += (4.374664141464968, 2.938163982698783)
_D = (0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416, 1.0)
_P_LOW = 0.02425


def _poly(coefficients: tuple[float, ...], t: Any) -> Any:
    out = _c(t, coefficients[0])
    for c in coefficients[1:]:
        out = jnp.add(jnp.multiply(out, t), _c(t, c))
    return out


def _ndtri_impl(p: Any) -> Any:
    one, half = _c(p, 1.0), _c(p, 0.5)
    # Central region: a rational function of q = p - 1/2 times q.
    q = jnp.subtract(p, half)
    central_ok = jnp.less_equal(jnp.abs(q), _c(p, 0.5 - _P_LOW))
    q_c = jnp.where(central_ok, q, _c(p, 0.0))
    r = jnp.square(q_c)
    central = jnp.divide(jnp.multiply(_poly(_A, r), q_c), _poly(_B, r))
    # Tails: a rational function of sqrt(-2 log p') with p' = min(p, 1 - p) kept in (0, 1).
    tail_p = jnp.minimum(p, jnp.subtract(one, p))
    tail_p = jnp.where(central_ok, half, tail_p)
    tail_p = jnp.clip(tail_p, _c(p, np.finfo(get_aval(p).dtype).tiny), half)
    s = jnp.sqrt(jnp.multiply(_c(p, -2.0), jnp.log(tail_p)))
    tail = jnp.divide(_poly(_C, s), _poly(_D, s))
    tail = jnp.where(jnp.greater(p, half), jnp.negative(tail), tail)
    x = jnp.where(central_ok, central, tail)
    x = _halley_step(p, x)
    x = jnp.where(jnp.equal(p, _c(p, 0.0)), _c(p, -np.inf), x)
    x = jnp.where(jnp.equal(p, one), _c(p, np.inf), x)
    outside = jnp.logical_or(jnp.less(p, _c(p, 0.0)), jnp.greater(p, one))
    return jnp.where(jnp.logical_or(outside, jnp.isnan(p)), _c(p, np.nan), x)


def _halley_step(p: Any, x: Any) -> Any:
    """One Halley iteration on ``ndtr(x) = p``, measuring the residual in the tail nearer to
    ``x`` so that it keeps relative precision."""
    upper = jnp.greater(x, _c(x, 0.0))
    upper_residual = jnp.subtract(jnp.subtract(_c(p, 1.0), p), ndtr(jnp.negative(x)))
    residual = jnp.where(upper, upper_residual, jnp.subtract(ndtr(x), p))
    u = jnp.multiply(
        jnp.multiply(residual, _c(x, _SQRT_2PI)), jnp.exp(jnp.multiply(_c(x, 0.5), jnp.square(x)))
    )
    step = jnp.divide(u, jnp.add(_c(x, 1.0), jnp.multiply(jnp.multiply(x, u), _c(x, 0.5))))
    refined = jnp.subtract(x, step)
    return jnp.where(jnp.isfinite(refined), refined, x)


_ndtri = custom_jvp(_ndtri_impl)


@_ndtri.defjvp
def _ndtri_jvp(primals, tangents):
    (p,), (t,) = primals, tangents
    x = _ndtri(p)
    # dx/dp = 1 / pdf(x) = sqrt(2 pi) exp(x^2 / 2).
    slope = jnp.multiply(_c(x, _SQRT_2PI), jnp.exp(jnp.multiply(_c(x, 0.5), jnp.square(x))))
    return x, jnp.multiply(t, slope)


def ndtri(p: Any) -> Any:
    """The inverse of ndtr: the standard normal quantile of ``p`` (-inf at 0, inf at 1, nan
    outside [0, 1])."""
    (p,) = prepare_inexact("ndtri", p)
    return _ndtri(p)


# --------------------------------------------------------------------------------------------
# erfcx

_ERFCX_SWITCH = 2.5
_ERFCX_TERMS = 50


def _erfcx_impl(x: Any) -> Any:
    # Below the switch exp(x^2) erfc(x) loses nothing (erfc has not underflowed yet); above
    # it, the continued fraction erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + ...)))
    # gives erfcx directly and converges fast.
    small = jnp.less(x, _c(x, _ERFCX_SWITCH))
    x_small = jnp.minimum(x, _c(x, _ERFCX_SWITCH))
    direct = jnp.multiply(jnp.exp(jnp.square(x_small)), _special.erfc(x_small))
    x_big = jnp.maximum(x, _c(x, _ERFCX_SWITCH))
    t = x_big
    for k in range(_ERFCX_TERMS, 0, -1):
        t = jnp.add(x_big, jnp.divide(_c(x, k / 2.0), t))
    fraction = jnp.divide(_c(x, 1.0 / _SQRT_PI), t)
    return jnp.where(small, direct, fraction)


_erfcx = custom_jvp(_erfcx_impl)


@_erfcx.defjvp
def _erfcx_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = _erfcx(x)
    slope = jnp.subtract(jnp.multiply(_c(x, 2.0), jnp.multiply(x, y)), _c(x, 2.0 / _SQRT_PI))
    return y, jnp.multiply(t, slope)


def erfcx(x: Any) -> Any:
    """The scaled complementary error function ``exp(x^2) erfc(x)``."""
    (x,) = prepare_inexact("erfcx", x)
    return _erfcx(x)
