"""Discrete distributions of ``ember.scipy.stats``: poisson, bernoulli, binom, geom, nbinom,
betabinom (functions named ``<distribution>_<method>``).

As SciPy's: a non-integer ``k`` has probability 0 (logpmf -inf), parameters outside their
domain give nan, and ``loc`` shifts the support.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember._src.numpy import elementwise as jnp, reductions
from ember._src.scipy import special as _special
from ember._src.scipy.stats.operands import c, floats, nan_unless, where

gammaln = _special.gammaln


def _is_integer(k: Any) -> Any:
    return jnp.equal(k, jnp.floor(k))


def _support(k: Any, value: Any, inside: Any) -> Any:
    """``value`` where ``k`` is an integer and ``inside``, -inf elsewhere."""
    return where(_is_integer(k) & inside, value, c(value, -np.inf))


def _log_comb(n: Any, k: Any) -> Any:
    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)


# --------------------------------------------------------------------------------------------
# poisson


def poisson_logpmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    k, mu, loc = floats("poisson.logpmf", k, mu, loc)
    k = k - loc
    value = _special.xlogy(k, mu) - gammaln(k + 1) - mu
    return nan_unless(mu >= 0, _support(k, value, k >= 0))


def poisson_pmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    return jnp.exp(poisson_logpmf(k, mu, loc))


def poisson_cdf(k: Any, mu: Any, loc: Any = 0) -> Any:
    k, mu, loc = floats("poisson.cdf", k, mu, loc)
    k = jnp.floor(k - loc)
    # P(K <= k) = Q(k + 1, mu), the upper regularised incomplete gamma function.
    value = _special.gammaincc(jnp.maximum(k, c(k, 0)) + 1, mu)
    return nan_unless(mu >= 0, where(k < 0, c(k, 0), value))


# Below this mean the entropy is summed over the support (160 terms hold all but a negligible
# tail of the mass); above, the asymptotic series in 1/mu is within 2e-8 of it.
_ENTROPY_SWITCH = 50.0
_ENTROPY_TERMS = 160


def poisson_entropy(mu: Any, loc: Any = 0) -> Any:
    mu, _ = floats("poisson.entropy", mu, loc)
    small = jnp.minimum(mu, c(mu, _ENTROPY_SWITCH))
    ks = c(mu, np.arange(_ENTROPY_TERMS, dtype=np.float64))
    expanded = small[..., None]
    log_p = _special.xlogy(ks, expanded) - gammaln(ks + 1) - expanded
    # Terms of zero probability (every k > 0 when mu == 0) contribute 0, not 0 * -inf.
    terms = where(log_p > -np.inf, jnp.exp(log_p) * log_p, c(log_p, 0))
    summed = -reductions.sum(terms, axis=-1)
    big = jnp.maximum(mu, c(mu, _ENTROPY_SWITCH))
    inv = 1 / big
    series = 0.5 * jnp.log(2 * math.pi * math.e * big) - inv / 12 - inv**2 / 24 - 19 * inv**3 / 360
    value = where(mu < _ENTROPY_SWITCH, summed, series)
    # mu == 0 is a point mass: exactly 0 (the sum would carry lgamma(1)'s rounding on XLA).
    value = where(mu == 0, c(mu, 0), value)
    return nan_unless(mu >= 0, value)


# --------------------------------------------------------------------------------------------
# bernoulli


def _probability(p: Any) -> Any:
    return (p >= 0) & (p <= 1)


def bernoulli_logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    k, p, loc = floats("bernoulli.logpmf", k, p, loc)
    k = k - loc
    value = _special.xlogy(k, p) + _special.xlog1py(1 - k, -p)
    return nan_unless(_probability(p), _support(k, value, (k == 0) | (k == 1)))


def bernoulli_pmf(k: Any, p: Any, loc: Any = 0) -> Any:
    return jnp.exp(bernoulli_logpmf(k, p, loc))


def bernoulli_cdf(k: Any, p: Any) -> Any:
    k, p = floats("bernoulli.cdf", k, p)
    value = where(k < 0, c(k, 0), where(k < 1, 1 - p, c(k, 1)))
    return nan_unless(_probability(p), value)


def bernoulli_ppf(q: Any, p: Any) -> Any:
    q, p = floats("bernoulli.ppf", q, p)
    # SciPy's conventions: ppf(0) is one below the support, ppf(1) its top.
    value = where(q <= 1 - p, c(q, 0), c(q, 1))
    value = where(q == 0, c(q, -1), where(q == 1, c(q, 1), value))
    return nan_unless(_probability(p) & (q >= 0) & (q <= 1), value)


# --------------------------------------------------------------------------------------------
# binom, geom, nbinom, betabinom


def binom_logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    k, n, p, loc = floats("binom.logpmf", k, n, p, loc)
    k = k - loc
    inside = (k >= 0) & (k <= n)
    safe_k = jnp.clip(k, c(k, 0), jnp.maximum(n, c(n, 0)))
    value = _log_comb(n, safe_k) + _special.xlogy(safe_k, p) + _special.xlog1py(n - safe_k, -p)
    valid = _probability(p) & (n >= 0) & _is_integer(n)
    return nan_unless(valid, _support(k, value, inside))


def binom_pmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    return jnp.exp(binom_logpmf(k, n, p, loc))


def geom_logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    k, p, loc = floats("geom.logpmf", k, p, loc)
    k = k - loc
    # The number of trials up to and including the first success: k >= 1.
    value = _special.xlog1py(jnp.maximum(k, c(k, 1)) - 1, -p) + jnp.log(p)
    return nan_unless((p > 0) & (p <= 1), _support(k, value, k >= 1))


def geom_pmf(k: Any, p: Any, loc: Any = 0) -> Any:
    return jnp.exp(geom_logpmf(k, p, loc))


def nbinom_logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    k, n, p, loc = floats("nbinom.logpmf", k, n, p, loc)
    k = k - loc
    safe_k = jnp.maximum(k, c(k, 0))
    value = (
        gammaln(n + safe_k)
        - gammaln(safe_k + 1)
        - gammaln(n)
        + _special.xlogy(n, p)
        + _special.xlog1py(safe_k, -p)
    )
    return nan_unless((p > 0) & (p <= 1) & (n > 0), _support(k, value, k >= 0))


def nbinom_pmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    return jnp.exp(nbinom_logpmf(k, n, p, loc))


def betabinom_logpmf(k: Any, n: Any, a: Any, b: Any, loc: Any = 0) -> Any:
    k, n, a, b, loc = floats("betabinom.logpmf", k, n, a, b, loc)
    k = k - loc
    inside = (k >= 0) & (k <= n)
    safe_k = jnp.clip(k, c(k, 0), jnp.maximum(n, c(n, 0)))
    value = (
        _log_comb(n, safe_k) + _special.betaln(safe_k + a, n - safe_k + b) - _special.betaln(a, b)
    )
    valid = (a > 0) & (b > 0) & (n >= 0) & _is_integer(n)
    return nan_unless(valid, _support(k, value, inside))


def betabinom_pmf(k: Any, n: Any, a: Any, b: Any, loc: Any = 0) -> Any:
    return jnp.exp(betabinom_logpmf(k, n, a, b, loc))
