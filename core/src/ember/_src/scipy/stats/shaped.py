"""Continuous distributions of ``ember.scipy.stats`` with shape parameters: gamma, chi2, beta,
truncnorm, vonmises, wrapcauchy, gennorm (functions named ``<distribution>_<method>``).

CDFs come from the regularised incomplete gamma and beta functions; parameters outside their
domain (a non-positive shape, ``a >= b`` for truncnorm) give nan, as SciPy's do.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember._src.numpy import elementwise as jnp
from ember._src.scipy import ndtr as _ndtr, special as _special
from ember._src.scipy.stats import operands  # wrapcauchy's parameter c shadows operands.c
from ember._src.scipy.stats.continuous import _log1mexp
from ember._src.scipy.stats.operands import c, floats, nan_unless, where

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


# --------------------------------------------------------------------------------------------
# gamma and chi2


def _gamma_args(name: str, x: Any, a: Any, loc: Any, scale: Any) -> tuple[Any, Any, Any, Any]:
    """``(x, z, a, scale)`` with ``z = (x - loc) / scale`` clamped at 0 (the edge of the
    support), all in one dtype."""
    x, a, loc, scale = floats(name, x, a, loc, scale)
    z = (x - loc) / scale
    return x - loc, jnp.maximum(z, c(z, 0)), a, scale


def gamma_logpdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    shifted, z, a, scale = _gamma_args("gamma.logpdf", x, a, loc, scale)
    value = _special.xlogy(a - 1, z) - z - _special.gammaln(a) - jnp.log(scale)
    value = where(shifted < 0, c(z, -np.inf), value)
    return nan_unless(a > 0, value)


def gamma_pdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(gamma_logpdf(x, a, loc, scale))


def gamma_cdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    _, z, a, _ = _gamma_args("gamma.cdf", x, a, loc, scale)
    return _special.gammainc(a, z)


def gamma_logcdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.log(gamma_cdf(x, a, loc, scale))


def gamma_sf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    _, z, a, _ = _gamma_args("gamma.sf", x, a, loc, scale)
    return _special.gammaincc(a, z)


def gamma_logsf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.log(gamma_sf(x, a, loc, scale))


def _chi2_as_gamma(name: str, x: Any, df: Any, loc: Any, scale: Any) -> tuple[Any, ...]:
    # chi2(df) is gamma(df / 2) with twice the scale.
    x, df, loc, scale = floats(name, x, df, loc, scale)
    return x, df / 2, loc, scale * 2


def chi2_logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return gamma_logpdf(*_chi2_as_gamma("chi2.logpdf", x, df, loc, scale))


def chi2_pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return gamma_pdf(*_chi2_as_gamma("chi2.pdf", x, df, loc, scale))


def chi2_cdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return gamma_cdf(*_chi2_as_gamma("chi2.cdf", x, df, loc, scale))


def chi2_logcdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return gamma_logcdf(*_chi2_as_gamma("chi2.logcdf", x, df, loc, scale))


def chi2_sf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return gamma_sf(*_chi2_as_gamma("chi2.sf", x, df, loc, scale))


def chi2_logsf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return gamma_logsf(*_chi2_as_gamma("chi2.logsf", x, df, loc, scale))


# --------------------------------------------------------------------------------------------
# beta


def _beta_args(name: str, x: Any, a: Any, b: Any, loc: Any, scale: Any) -> tuple[Any, ...]:
    x, a, b, loc, scale = floats(name, x, a, b, loc, scale)
    return (x - loc) / scale, a, b, scale


def beta_logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, a, b, scale = _beta_args("beta.logpdf", x, a, b, loc, scale)
    inside = (z >= 0) & (z <= 1)
    safe_z = jnp.clip(z, c(z, 0), c(z, 1))
    value = (
        _special.xlogy(a - 1, safe_z)
        + _special.xlog1py(b - 1, -safe_z)
        - _special.betaln(a, b)
        - jnp.log(scale)
    )
    return nan_unless((a > 0) & (b > 0), where(inside, value, c(z, -np.inf)))


def beta_pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(beta_logpdf(x, a, b, loc, scale))


def beta_cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, a, b, _ = _beta_args("beta.cdf", x, a, b, loc, scale)
    return _special.betainc(a, b, jnp.clip(z, c(z, 0), c(z, 1)))


def beta_logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.log(beta_cdf(x, a, b, loc, scale))


def beta_sf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, a, b, _ = _beta_args("beta.sf", x, a, b, loc, scale)
    # I_{1-z}(b, a) keeps the relative accuracy of small upper tails.
    return _special.betainc(b, a, jnp.clip(1 - z, c(z, 0), c(z, 1)))


def beta_logsf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.log(beta_sf(x, a, b, loc, scale))


# --------------------------------------------------------------------------------------------
# truncnorm


def _log_normal_mass(lo: Any, hi: Any) -> Any:
    """``log(ndtr(hi) - ndtr(lo))`` for ``lo <= hi``, computed in the tail on the far side of
    0 from the interval so that neither term rounds to 1."""
    log_ndtr = _ndtr.log_ndtr
    upper = log_ndtr(-lo) + _log1mexp(jnp.minimum(log_ndtr(-hi) - log_ndtr(-lo), c(lo, 0)))
    lower = log_ndtr(hi) + _log1mexp(jnp.minimum(log_ndtr(lo) - log_ndtr(hi), c(lo, 0)))
    return where(lo > 0, upper, lower)


def _truncnorm_args(name: str, x: Any, a: Any, b: Any, loc: Any, scale: Any) -> tuple[Any, ...]:
    """``(z, a, b, scale, log_mass)``; ``log_mass`` (the log of the normal mass on
    ``[a, b]``) is nan unless ``a < b``, which makes every result nan there."""
    x, a, b, loc, scale = floats(name, x, a, b, loc, scale)
    valid = a < b
    safe_b = where(valid, b, a + 1)
    log_mass = nan_unless(valid, _log_normal_mass(a, safe_b))
    return (x - loc) / scale, a, safe_b, scale, log_mass


def truncnorm_logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, a, b, scale, log_mass = _truncnorm_args("truncnorm.logpdf", x, a, b, loc, scale)
    value = -(z * z) / 2 - c(z, _LOG_SQRT_2PI) - jnp.log(scale) - log_mass
    outside = nan_unless(jnp.isfinite(log_mass) | (log_mass < 0), c(z, -np.inf))
    return where((z >= a) & (z <= b), value, outside)


def truncnorm_pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(truncnorm_logpdf(x, a, b, loc, scale))


def truncnorm_logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, a, b, _, log_mass = _truncnorm_args("truncnorm.logcdf", x, a, b, loc, scale)
    return _log_normal_mass(a, jnp.clip(z, a, b)) - log_mass


def truncnorm_cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(truncnorm_logcdf(x, a, b, loc, scale))


def truncnorm_logsf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, a, b, _, log_mass = _truncnorm_args("truncnorm.logsf", x, a, b, loc, scale)
    return _log_normal_mass(jnp.clip(z, a, b), b) - log_mass


def truncnorm_sf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(truncnorm_logsf(x, a, b, loc, scale))


# --------------------------------------------------------------------------------------------
# Circular distributions: vonmises and wrapcauchy


def vonmises_logpdf(x: Any, kappa: Any) -> Any:
    x, kappa = floats("vonmises.logpdf", x, kappa)
    # kappa cos x - log(2 pi I0(kappa)), with I0 scaled by exp(-kappa) so it cannot overflow.
    value = kappa * (jnp.cos(x) - 1) - jnp.log(2 * math.pi * _special.i0e(kappa))
    return nan_unless(kappa >= 0, value)


def vonmises_pdf(x: Any, kappa: Any) -> Any:
    return jnp.exp(vonmises_logpdf(x, kappa))


def wrapcauchy_logpdf(x: Any, c: Any) -> Any:
    x, rho = floats("wrapcauchy.logpdf", x, c)
    value = (
        jnp.log1p(-rho * rho)
        - operands.c(x, math.log(2 * math.pi))
        - jnp.log1p(rho * rho - 2 * rho * jnp.cos(x))
    )
    inside = (x >= 0) & (x <= 2 * math.pi)
    return nan_unless((rho > 0) & (rho < 1), where(inside, value, operands.c(x, -np.inf)))


def wrapcauchy_pdf(x: Any, c: Any) -> Any:
    return jnp.exp(wrapcauchy_logpdf(x, c))


# --------------------------------------------------------------------------------------------
# gennorm


def gennorm_logpdf(x: Any, beta: Any) -> Any:
    x, beta = floats("gennorm.logpdf", x, beta)
    return (
        jnp.log(beta) - c(x, math.log(2)) - _special.gammaln(1 / beta) - jnp.power(jnp.abs(x), beta)
    )


def gennorm_pdf(x: Any, beta: Any) -> Any:
    return jnp.exp(gennorm_logpdf(x, beta))


def gennorm_cdf(x: Any, beta: Any) -> Any:
    x, beta = floats("gennorm.cdf", x, beta)
    half_mass = _special.gammainc(1 / beta, jnp.power(jnp.abs(x), beta)) / 2
    return nan_unless(beta > 0, c(x, 0.5) + jnp.sign(x) * half_mass)
