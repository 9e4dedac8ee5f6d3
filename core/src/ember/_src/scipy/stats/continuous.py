"""Location-scale continuous distributions of ``ember.scipy.stats`` with closed forms: norm,
t, expon, laplace, logistic, cauchy, uniform, gumbel_l, gumbel_r, pareto.

Each function is named ``<distribution>_<method>``; the public modules re-export them under
the method's name. Values outside the support follow SciPy (logpdf -inf, cdf 0 or 1), and a
quantile outside [0, 1] is nan.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember._src.numpy import elementwise as jnp
from ember._src.scipy import ndtr as _ndtr, special as _special
from ember._src.scipy.stats.operands import c, floats, nan_unless, standardize, where

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _quantile(name: str, q: Any, loc: Any, scale: Any) -> tuple[Any, Any, Any, Any]:
    """``(q, loc, scale, valid)`` with ``valid`` marking ``0 <= q <= 1``."""
    q, loc, scale = floats(name, q, loc, scale)
    return q, loc, scale, (q >= 0) & (q <= 1)


def _log1mexp(x: Any) -> Any:
    """``log(1 - exp(x))`` for ``x <= 0``, accurate near 0 and far below it."""
    return where(x > -math.log(2), jnp.log(-jnp.expm1(x)), jnp.log1p(-jnp.exp(x)))


# --------------------------------------------------------------------------------------------
# norm


def norm_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, scale = standardize("norm.logpdf", x, loc, scale)
    return -(z * z) / 2 - jnp.log(scale) - c(z, _LOG_SQRT_2PI)


def norm_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(norm_logpdf(x, loc, scale))


def norm_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, _ = standardize("norm.cdf", x, loc, scale)
    return _ndtr.ndtr(z)


def norm_logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, _ = standardize("norm.logcdf", x, loc, scale)
    return _ndtr.log_ndtr(z)


def norm_sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, _ = standardize("norm.sf", x, loc, scale)
    return _ndtr.ndtr(-z)


def norm_logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, _ = standardize("norm.logsf", x, loc, scale)
    return _ndtr.log_ndtr(-z)


def norm_ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale = floats("norm.ppf", q, loc, scale)
    return _ndtr.ndtri(q) * scale + loc


def norm_isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale = floats("norm.isf", q, loc, scale)
    # ndtri(1 - q) = -ndtri(q), without the rounding of 1 - q for small q.
    return -_ndtr.ndtri(q) * scale + loc


# --------------------------------------------------------------------------------------------
# t


def t_logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, df, loc, scale = floats("t.logpdf", x, df, loc, scale)
    z = (x - loc) / scale
    half = (df + 1) / 2
    norm_const = (
        _special.gammaln(half) - _special.gammaln(df / 2) - jnp.log(df * math.pi) / 2
    ) - jnp.log(scale)
    return norm_const - half * jnp.log1p(z * z / df)


def t_pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(t_logpdf(x, df, loc, scale))


# --------------------------------------------------------------------------------------------
# expon


def expon_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, scale = standardize("expon.logpdf", x, loc, scale)
    return where(z < 0, c(z, -np.inf), -z - jnp.log(scale))


def expon_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(expon_logpdf(x, loc, scale))


def expon_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, _ = standardize("expon.cdf", x, loc, scale)
    return where(z < 0, c(z, 0), -jnp.expm1(-jnp.maximum(z, c(z, 0))))


def expon_logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, _ = standardize("expon.logcdf", x, loc, scale)
    return where(z < 0, c(z, -np.inf), _log1mexp(-jnp.maximum(z, c(z, 0))))


def expon_sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(expon_logsf(x, loc, scale))


def expon_logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, _ = standardize("expon.logsf", x, loc, scale)
    return where(z < 0, c(z, 0), -z)


def expon_ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale, valid = _quantile("expon.ppf", q, loc, scale)
    return nan_unless(valid, -jnp.log1p(-q) * scale + loc)


# --------------------------------------------------------------------------------------------
# laplace


def laplace_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, scale = standardize("laplace.logpdf", x, loc, scale)
    return -jnp.abs(z) - jnp.log(2 * scale)


def laplace_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(laplace_logpdf(x, loc, scale))


def laplace_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, _ = standardize("laplace.cdf", x, loc, scale)
    half_tail = jnp.exp(-jnp.abs(z)) / 2
    return where(z <= 0, half_tail, 1 - half_tail)


# --------------------------------------------------------------------------------------------
# logistic


def logistic_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, scale = standardize("logistic.logpdf", x, loc, scale)
    # Symmetric in z; the |z| form never exponentiates a large positive number.
    a = jnp.abs(z)
    return -a - 2 * jnp.log1p(jnp.exp(-a)) - jnp.log(scale)


def logistic_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(logistic_logpdf(x, loc, scale))


def logistic_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, _ = standardize("logistic.cdf", x, loc, scale)
    return jnp.sigmoid(z)


def logistic_sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, _ = standardize("logistic.sf", x, loc, scale)
    return jnp.sigmoid(-z)


def logistic_ppf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale, valid = _quantile("logistic.ppf", x, loc, scale)
    return nan_unless(valid, _special.logit(q) * scale + loc)


def logistic_isf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale, valid = _quantile("logistic.isf", x, loc, scale)
    return nan_unless(valid, -_special.logit(q) * scale + loc)


# --------------------------------------------------------------------------------------------
# cauchy


def cauchy_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, scale = standardize("cauchy.logpdf", x, loc, scale)
    return -jnp.log1p(z * z) - jnp.log(scale * math.pi)


def cauchy_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(cauchy_logpdf(x, loc, scale))


def _cauchy_cdf_of(z: Any) -> Any:
    # For z < 0, arctan(1/z) form keeps relative accuracy in the lower tail: -atan(1/z)/pi.
    lower = -jnp.arctan(1 / jnp.minimum(z, c(z, -1))) / math.pi
    central = jnp.arctan(z) / math.pi + c(z, 0.5)
    return where(z < -1, lower, central)


def cauchy_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, _ = standardize("cauchy.cdf", x, loc, scale)
    return _cauchy_cdf_of(z)


def cauchy_logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.log(cauchy_cdf(x, loc, scale))


def cauchy_sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, _ = standardize("cauchy.sf", x, loc, scale)
    return _cauchy_cdf_of(-z)


def cauchy_logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.log(cauchy_sf(x, loc, scale))


def _cauchy_quantile(q: Any) -> Any:
    """The standard Cauchy quantile ``tan(pi (q - 1/2))``. In the tails it is taken as
    ``-1 / tan(pi q)`` (and its mirror) so that the rounding of ``q - 1/2`` does not swamp
    the result, and it reaches the infinities exactly at 0 and 1."""
    central = jnp.tan(math.pi * (q - 0.5))
    lower = -1 / jnp.tan(math.pi * q)
    upper = 1 / jnp.tan(math.pi * (1 - q))
    return where(q < 0.25, lower, where(q > 0.75, upper, central))


def cauchy_ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale, valid = _quantile("cauchy.ppf", q, loc, scale)
    return nan_unless(valid, loc + scale * _cauchy_quantile(q))


def cauchy_isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale, valid = _quantile("cauchy.isf", q, loc, scale)
    return nan_unless(valid, loc - scale * _cauchy_quantile(q))


# --------------------------------------------------------------------------------------------
# uniform


def uniform_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = floats("uniform.logpdf", x, loc, scale)
    inside = (x >= loc) & (x <= loc + scale)
    return where(inside, -jnp.log(scale), c(x, -np.inf))


def uniform_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(uniform_logpdf(x, loc, scale))


def uniform_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, _ = standardize("uniform.cdf", x, loc, scale)
    return jnp.clip(z, c(z, 0), c(z, 1))


def uniform_ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale, valid = _quantile("uniform.ppf", q, loc, scale)
    return nan_unless(valid, loc + q * scale)


# --------------------------------------------------------------------------------------------
# gumbel_r (maximum) and gumbel_l (minimum)


def gumbel_r_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, scale = standardize("gumbel_r.logpdf", x, loc, scale)
    return -z - jnp.exp(-z) - jnp.log(scale)


def gumbel_r_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(gumbel_r_logpdf(x, loc, scale))


def gumbel_r_logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, _ = standardize("gumbel_r.logcdf", x, loc, scale)
    return -jnp.exp(-z)


def gumbel_r_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(gumbel_r_logcdf(x, loc, scale))


def gumbel_r_sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, _ = standardize("gumbel_r.sf", x, loc, scale)
    return -jnp.expm1(-jnp.exp(-z))


def gumbel_r_logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, _ = standardize("gumbel_r.logsf", x, loc, scale)
    return _log1mexp(-jnp.exp(-z))


def gumbel_r_ppf(p: Any, loc: Any = 0, scale: Any = 1) -> Any:
    p, loc, scale, valid = _quantile("gumbel_r.ppf", p, loc, scale)
    return nan_unless(valid, loc - scale * jnp.log(-jnp.log(p)))


def gumbel_l_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, scale = standardize("gumbel_l.logpdf", x, loc, scale)
    return z - jnp.exp(z) - jnp.log(scale)


def gumbel_l_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(gumbel_l_logpdf(x, loc, scale))


def gumbel_l_logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, _ = standardize("gumbel_l.logsf", x, loc, scale)
    return -jnp.exp(z)


def gumbel_l_sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(gumbel_l_logsf(x, loc, scale))


def gumbel_l_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, _ = standardize("gumbel_l.cdf", x, loc, scale)
    return -jnp.expm1(-jnp.exp(z))


def gumbel_l_logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, _ = standardize("gumbel_l.logcdf", x, loc, scale)
    return _log1mexp(-jnp.exp(z))


def gumbel_l_ppf(p: Any, loc: Any = 0, scale: Any = 1) -> Any:
    p, loc, scale, valid = _quantile("gumbel_l.ppf", p, loc, scale)
    return nan_unless(valid, loc + scale * jnp.log(-jnp.log1p(-p)))


# --------------------------------------------------------------------------------------------
# pareto


def _pareto_z(name: str, x: Any, b: Any, loc: Any, scale: Any) -> tuple[Any, Any, Any]:
    x, b, loc, scale = floats(name, x, b, loc, scale)
    return (x - loc) / scale, b, scale


def pareto_logpdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, b, scale = _pareto_z("pareto.logpdf", x, b, loc, scale)
    safe_z = jnp.maximum(z, c(z, 1))
    value = jnp.log(b) - jnp.log(scale) - (b + 1) * jnp.log(safe_z)
    return where(z >= 1, value, c(z, -np.inf))


def pareto_pdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(pareto_logpdf(x, b, loc, scale))


def pareto_logsf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, b, _ = _pareto_z("pareto.logsf", x, b, loc, scale)
    return where(z >= 1, -b * jnp.log(jnp.maximum(z, c(z, 1))), c(z, 0))


def pareto_sf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(pareto_logsf(x, b, loc, scale))


def pareto_cdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return -jnp.expm1(pareto_logsf(x, b, loc, scale))


def pareto_logcdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    logsf = pareto_logsf(x, b, loc, scale)
    return where(logsf < 0, _log1mexp(jnp.minimum(logsf, c(logsf, 0))), c(logsf, -np.inf))


def pareto_ppf(q: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, b, loc, scale = floats("pareto.ppf", q, b, loc, scale)
    valid = (q >= 0) & (q <= 1)
    return nan_unless(valid, loc + scale * jnp.exp(-jnp.log1p(-q) / b))
