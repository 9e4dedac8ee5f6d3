"""Kummer's confluent hypergeometric function ``1F1(a; b; x)`` for ``ember.scipy.special``.

Negative ``x`` goes through Kummer's transformation ``M(a, b, x) = e^x M(b - a, b, -x)`` so
that only ``x >= 0`` is evaluated: by the power series (256 terms) up to ``x = 60``, and
beyond by the leading asymptotic series ``Gamma(b)/Gamma(a) e^x x^(a-b) sum_k (b-a)_k (1-a)_k
/ (k! x^k)`` (the other part is smaller by ``e^-x``). When ``a`` is 0 or a negative integer
``M`` is a polynomial and the (terminating) power series is used throughout.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as jnp
from ember._src.numpy.operands import prepare_inexact
from ember._src.primitives.control_flow.loops import fori_loop
from ember._src.scipy import special as _special

_SERIES_TERMS = 256
_ASYMPTOTIC_TERMS = 30
_SWITCH = 60.0


def _c(x: Any, value: Any) -> np.ndarray:
    return np.asarray(value, get_aval(x).dtype)


def _series(a: Any, b: Any, x: Any) -> Any:
    # A loop rather than unrolled terms: 256 unrolled steps make a graph XLA is slow (and
    # memory-hungry) to compile.
    def step(k, carry):
        term, total = carry
        k = k.astype(get_aval(x).dtype)
        term = term * (a + k) / (b + k) * x / (k + 1)
        return term, total + term

    ones = creation.ones_like(x)
    return fori_loop(0, _SERIES_TERMS, step, (ones, ones))[1]


def _asymptotic(a: Any, b: Any, x: Any, log_factor: Any) -> Any:
    """``e^log_factor M(a, b, x)`` for large ``x``, the factor folded into the exponent so
    that ``e^-x M(., ., x)`` (Kummer's transformation) does not overflow on the way."""
    total = creation.ones_like(x)
    term = creation.ones_like(x)
    for k in range(_ASYMPTOTIC_TERMS):
        term = term * (b - a + k) * (1 - a + k) / ((k + 1) * x)
        total = total + term
    log_scale = _special.gammaln(b) - _special.gammaln(a) + (a - b) * jnp.log(x)
    sign = _special.gammasgn(b) * _special.gammasgn(a)
    return sign * jnp.exp(log_scale + (x + log_factor)) * total


def _scaled(a: Any, b: Any, x: Any, log_factor: Any) -> Any:
    """``e^log_factor M(a, b, x)`` for ``x >= 0``."""
    polynomial = (a <= 0) & (a == jnp.floor(a))
    far = (x > _SWITCH) & ~polynomial
    near_x = jnp.where(far, _c(x, 0), x)
    far_x = jnp.where(far, x, _c(x, _SWITCH + 1))
    far_a = jnp.where(far, a, _c(a, 1))
    near = jnp.exp(log_factor) * _series(a, b, near_x)
    return jnp.where(far, _asymptotic(far_a, b, far_x, log_factor), near)


def hyp1f1(a: Any, b: Any, x: Any) -> Any:
    """Kummer's function ``M(a, b, x) = sum_k (a)_k / (b)_k x^k / k!`` for real arguments."""
    a, b, x = prepare_inexact("hyp1f1", a, b, x)
    negative = x < 0
    # Kummer: M(a, b, x) = e^x M(b - a, b, -x) for x < 0.
    log_factor = jnp.where(negative, x, _c(x, 0))
    return _scaled(jnp.where(negative, b - a, a), b, jnp.abs(x), log_factor)
