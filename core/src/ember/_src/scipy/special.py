"""``ember.scipy.special``: gamma-family, entropy and combinatorial functions, as
``jax.scipy.special``, written from the ``lax`` special primitives and ``ember.numpy``.

The normal-distribution functions (ndtr, log_ndtr, ndtri) and erfcx live in ``ndtr.py``.
Out-of-domain inputs give nan/inf as SciPy's do rather than raising, since they are data.
"""

from __future__ import annotations

import math
import operator
from fractions import Fraction
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.lax import special as _more
from ember._src.nn import functions as nn
from ember._src.numpy import creation, elementwise as jnp, float_functions, manipulation, reductions
from ember._src.numpy.operands import prepare_inexact
from ember._src.primitives import igamma as _igamma, special as _special
from ember._src.transforms.custom_derivatives import custom_jvp


def _c(x: Any, value: float) -> np.ndarray:
    """``value`` in ``x``'s dtype (so constants never promote the computation)."""
    return np.asarray(value, get_aval(x).dtype)


def _floats(name: str, *args: Any) -> list[Any]:
    """The arguments promoted to one inexact dtype and broadcast to one shape."""
    return prepare_inexact(name, *args)


# --------------------------------------------------------------------------------------------
# The gamma function and relatives


def gammaln(x: Any) -> Any:
    """``log |Gamma(x)|``."""
    (x,) = _floats("gammaln", x)
    return _special.lgamma(x)


def gammasgn(x: Any) -> Any:
    """The sign of ``Gamma(x)``: nan at the poles 0, -1, -2, ... except that -0.0 gives -1
    (the sign of the infinity there), and nan for nan and -inf."""
    (x,) = _floats("gammasgn", x)
    floor_x = jnp.floor(x)
    # Gamma is negative on (-2k-1, -2k) for k >= 0, i.e. where floor(x) is odd.
    odd = jnp.equal(jnp.remainder(floor_x, _c(x, 2)), _c(x, 1))
    sign = jnp.where(jnp.logical_and(jnp.less(x, _c(x, 0)), odd), _c(x, -1), _c(x, 1))
    sign = jnp.where(
        jnp.logical_and(jnp.equal(x, _c(x, 0)), float_functions.signbit(x)), _c(x, -1), sign
    )
    pole = jnp.logical_and(jnp.less(x, _c(x, 0)), jnp.equal(x, floor_x))
    return jnp.where(jnp.logical_or(pole, jnp.isnan(x)), _c(x, np.nan), sign)


def gamma(x: Any) -> Any:
    """The gamma function, ``gammasgn(x) * exp(gammaln(x))``."""
    (x,) = _floats("gamma", x)
    return jnp.multiply(gammasgn(x), jnp.exp(_special.lgamma(x)))


def loggamma(x: Any) -> Any:
    """The principal branch of ``log Gamma(x)`` for real ``x``: nan where Gamma(x) <= 0 is
    possible (x <= 0), as JAX's real-valued loggamma."""
    (x,) = _floats("loggamma", x)
    return jnp.where(jnp.greater(x, _c(x, 0)), _special.lgamma(x), _c(x, np.nan))


def digamma(x: Any) -> Any:
    """The digamma function ``psi(x) = d/dx log Gamma(x)``."""
    (x,) = _floats("digamma", x)
    return _special.digamma(x)


def polygamma(n: Any, x: Any) -> Any:
    """The ``n``-th derivative of digamma at ``x``; ``n`` must have an integer dtype."""
    n_dtype = get_aval(creation.asarray(n)).dtype
    if not dtypes.issubdtype(n_dtype, np.integer):
        raise ValueError(
            f"polygamma: argument n must be of integer type, got dtype {n_dtype}{errors.where()}"
        )
    n, x = _floats("polygamma", n, x)
    return _special.polygamma(n, x)


def multigammaln(a: Any, d: Any) -> Any:
    """The log of the multivariate gamma function of dimension ``d`` (a concrete int)."""
    d = operator.index(d) if not hasattr(d, "shape") else int(d)
    if d < 1:
        raise ValueError(f"multigammaln: d must be a positive integer, got {d}{errors.where()}")
    (a,) = _floats("multigammaln", a)
    offsets = _c(a, np.arange(d) / 2.0)
    terms = _special.lgamma(jnp.subtract(manipulation.expand_dims(a, -1), offsets))
    constant = _c(a, d * (d - 1) / 4.0 * math.log(math.pi))
    return jnp.add(reductions.sum(terms, axis=-1), constant)


def betaln(a: Any, b: Any) -> Any:
    """``log |B(a, b)|``."""
    a, b = _floats("betaln", a, b)
    lg = _special.lgamma
    return jnp.subtract(jnp.add(lg(a), lg(b)), lg(jnp.add(a, b)))


def beta(a: Any, b: Any) -> Any:
    """The beta function ``Gamma(a) Gamma(b) / Gamma(a + b)``."""
    a, b = _floats("beta", a, b)
    total = jnp.add(a, b)
    # At a pole of Gamma(a + b) the value is 0 (SciPy's answer), whatever the sign there.
    pole = jnp.logical_and(jnp.less_equal(total, _c(total, 0)), jnp.equal(total, jnp.floor(total)))
    sign_total = jnp.where(pole, _c(total, 1), gammasgn(total))
    sign = jnp.multiply(jnp.multiply(gammasgn(a), gammasgn(b)), sign_total)
    return jnp.multiply(sign, jnp.exp(betaln(a, b)))


def betainc(a: Any, b: Any, x: Any) -> Any:
    """The regularised incomplete beta function ``I_x(a, b)``."""
    a, b, x = _floats("betainc", a, b, x)
    return _more.betainc(a, b, x)


def gammainc(a: Any, x: Any) -> Any:
    """The regularised lower incomplete gamma function ``P(a, x)``."""
    a, x = _floats("gammainc", a, x)
    return _igamma.igamma(a, x)


def gammaincc(a: Any, x: Any) -> Any:
    """The regularised upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``."""
    a, x = _floats("gammaincc", a, x)
    return _igamma.igammac(a, x)


def factorial(n: Any, exact: bool = False) -> Any:
    """``n!`` as ``Gamma(n + 1)`` (0 for negative ``n``); ``exact=True`` is not supported."""
    if exact:
        raise NotImplementedError(f"factorial with exact=True{errors.where()}")
    (n,) = _floats("factorial", n)
    value = jnp.exp(_special.lgamma(jnp.add(n, _c(n, 1))))
    return jnp.where(jnp.less(n, _c(n, 0)), _c(n, 0), value)


def comb(N: Any, k: Any, *, repetition: bool = False) -> Any:
    """The number of combinations of ``N`` things taken ``k`` at a time (0 outside
    ``0 <= k <= N``); with ``repetition``, of ``N`` things with replacement."""
    N, k = _floats("comb", N, k)
    if repetition:
        return comb(jnp.subtract(jnp.add(N, k), _c(N, 1)), k)
    one = _c(N, 1)
    lg = _special.lgamma
    log_value = jnp.subtract(
        lg(jnp.add(N, one)), jnp.add(lg(jnp.add(k, one)), lg(jnp.add(jnp.subtract(N, k), one)))
    )
    valid = jnp.logical_and(jnp.greater_equal(k, _c(k, 0)), jnp.less_equal(k, N))
    return jnp.where(valid, jnp.exp(log_value), _c(N, 0))


def poch(z: Any, m: Any) -> Any:
    """The Pochhammer symbol ``Gamma(z + m) / Gamma(z)`` (1 when ``m == 0``)."""
    z, m = _floats("poch", z, m)
    ratio = jnp.divide(gamma(jnp.add(z, m)), gamma(z))
    return jnp.where(jnp.equal(m, _c(m, 0)), _c(z, 1), ratio)


def bernoulli(n: int) -> Any:
    """The Bernoulli numbers ``B_0 .. B_n`` (with ``B_1 = -1/2``); ``n`` must be concrete."""
    try:
        count = operator.index(n) if not hasattr(n, "shape") else int(n)
    except TypeError:
        count = -1
    if count < 0:
        raise ValueError(f"bernoulli: n must be a non-negative integer{errors.where()}")
    return creation.asarray(
        np.asarray(_bernoulli_numbers(count), np.float64), dtypes.default_float()
    )


def _bernoulli_numbers(n: int) -> list[float]:
    """B_0 .. B_n exactly, by the recurrence ``sum_{j<=m} C(m+1, j) B_j = 0``."""
    numbers: list[Fraction] = []
    for m in range(n + 1):
        total = sum((math.comb(m + 1, j) * numbers[j] for j in range(m)), Fraction(0))
        numbers.append(Fraction(1) if m == 0 else -total / (m + 1))
    return [float(b) for b in numbers]


# --------------------------------------------------------------------------------------------
# Logistic, logs, entropies


def expit(x: Any) -> Any:
    """The logistic sigmoid ``1 / (1 + exp(-x))``."""
    return jnp.sigmoid(x)


def logit(x: Any) -> Any:
    """``log(x / (1 - x))``, the inverse of expit."""
    (x,) = _floats("logit", x)
    return jnp.log(jnp.divide(x, jnp.subtract(_c(x, 1), x)))


def _xlog_value(log: Any, x: Any, y: Any) -> Any:
    """``x * log(y)``, 0 wherever ``x == 0`` (whatever ``y`` is)."""
    nonzero = jnp.not_equal(x, _c(x, 0))
    # The log of a harmless stand-in where x == 0, so no inf/nan reaches the result.
    safe_y = jnp.where(nonzero, y, _c(y, 1))
    return jnp.where(nonzero, jnp.multiply(x, log(safe_y)), _c(x, 0))


def _xlog_jvp(log: Any, dlog: Any):
    """The derivative ``log(y) dx + x log'(y) dy``, whose second term is 0 where ``x == 0``
    (JAX's first term, log(y), is kept even there: -inf at y == 0)."""

    def jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        nonzero = jnp.not_equal(x, _c(x, 0))
        slope_y = jnp.where(nonzero, jnp.multiply(x, dlog(jnp.where(nonzero, y, _c(y, 1)))), 0)
        tangent = jnp.add(jnp.multiply(tx, log(y)), jnp.multiply(ty, slope_y))
        return _xlog_value(log, x, y), tangent

    return jvp


def _reciprocal_1p(y: Any) -> Any:
    return jnp.divide(_c(y, 1), jnp.add(y, _c(y, 1)))


def _reciprocal(y: Any) -> Any:
    return jnp.divide(_c(y, 1), y)


_xlogy = custom_jvp(lambda x, y: _xlog_value(jnp.log, x, y))
_xlogy.defjvp(_xlog_jvp(jnp.log, _reciprocal))
_xlog1py = custom_jvp(lambda x, y: _xlog_value(jnp.log1p, x, y))
_xlog1py.defjvp(_xlog_jvp(jnp.log1p, _reciprocal_1p))


def xlogy(x: Any, y: Any) -> Any:
    """``x * log(y)``, 0 where ``x == 0``."""
    return _xlogy(*_floats("xlogy", x, y))


def xlog1py(x: Any, y: Any) -> Any:
    """``x * log1p(y)``, 0 where ``x == 0``."""
    return _xlog1py(*_floats("xlog1py", x, y))


def entr(x: Any) -> Any:
    """The elementwise entropy ``-x log x`` (0 at 0, -inf for negative ``x``)."""
    (x,) = _floats("entr", x)
    # -xlogy(x, x) has the derivative -log(x) - 1, +inf at 0 as in JAX.
    value = jnp.negative(_xlogy(x, x))
    return jnp.where(jnp.less(x, _c(x, 0)), _c(x, -np.inf), value)


def _positive_pair(p: Any, q: Any) -> tuple[Any, Any, Any, Any]:
    both = jnp.logical_and(jnp.greater(p, _c(p, 0)), jnp.greater(q, _c(q, 0)))
    zero_p = jnp.logical_and(jnp.equal(p, _c(p, 0)), jnp.greater_equal(q, _c(q, 0)))
    safe_p = jnp.where(both, p, _c(p, 1))
    safe_q = jnp.where(both, q, _c(q, 1))
    return both, zero_p, safe_p, safe_q


def rel_entr(p: Any, q: Any) -> Any:
    """``p log(p / q)`` for positive ``p, q``; 0 where ``p == 0 <= q``; inf elsewhere."""
    p, q = _floats("rel_entr", p, q)
    both, zero_p, safe_p, safe_q = _positive_pair(p, q)
    value = jnp.multiply(safe_p, jnp.log(jnp.divide(safe_p, safe_q)))
    return jnp.where(both, value, jnp.where(zero_p, _c(p, 0), _c(p, np.inf)))


def kl_div(p: Any, q: Any) -> Any:
    """``p log(p / q) - p + q`` for positive ``p, q``; ``q`` where ``p == 0 <= q``; inf
    elsewhere."""
    p, q = _floats("kl_div", p, q)
    both, zero_p, safe_p, safe_q = _positive_pair(p, q)
    value = jnp.add(
        jnp.subtract(jnp.multiply(safe_p, jnp.log(jnp.divide(safe_p, safe_q))), safe_p), safe_q
    )
    return jnp.where(both, value, jnp.where(zero_p, q, _c(p, np.inf)))


def boxcox(x: Any, lmbda: Any) -> Any:
    """The Box-Cox transform ``(x**lmbda - 1) / lmbda`` (``log x`` when ``lmbda == 0``)."""
    x, lmbda = _floats("boxcox", x, lmbda)
    return _boxcox_of_log(jnp.log(x), lmbda)


def boxcox1p(x: Any, lmbda: Any) -> Any:
    """The Box-Cox transform of ``1 + x``, accurate for small ``x``."""
    x, lmbda = _floats("boxcox1p", x, lmbda)
    return _boxcox_of_log(jnp.log1p(x), lmbda)


def _boxcox_of_log(log_x: Any, lmbda: Any) -> Any:
    zero = jnp.equal(lmbda, _c(lmbda, 0))
    safe = jnp.where(zero, _c(lmbda, 1), lmbda)
    return jnp.where(zero, log_x, jnp.divide(jnp.expm1(jnp.multiply(safe, log_x)), safe))


# --------------------------------------------------------------------------------------------
# Error functions, Bessel functions, zeta


def erf(x: Any) -> Any:
    """The error function."""
    (x,) = _floats("erf", x)
    return _special.erf(x)


def erfc(x: Any) -> Any:
    """The complementary error function ``1 - erf(x)``."""
    (x,) = _floats("erfc", x)
    return _special.erfc(x)


def erfinv(x: Any) -> Any:
    """The inverse of erf on (-1, 1)."""
    (x,) = _floats("erfinv", x)
    return _special.erf_inv(x)


def i0e(x: Any) -> Any:
    """``exp(-|x|) I0(x)``."""
    (x,) = _floats("i0e", x)
    return _more.bessel_i0e(x)


def i1e(x: Any) -> Any:
    """``exp(-|x|) I1(x)``."""
    (x,) = _floats("i1e", x)
    return _more.bessel_i1e(x)


def i0(x: Any) -> Any:
    """The modified Bessel function of the first kind, order 0."""
    (x,) = _floats("i0", x)
    return jnp.multiply(jnp.exp(jnp.abs(x)), _more.bessel_i0e(x))


def i1(x: Any) -> Any:
    """The modified Bessel function of the first kind, order 1."""
    (x,) = _floats("i1", x)
    return jnp.multiply(jnp.exp(jnp.abs(x)), _more.bessel_i1e(x))


def zeta(x: Any, q: Any = None) -> Any:
    """The Hurwitz zeta function ``sum_k (q + k)^-x``; ``q`` is required, as in JAX."""
    if q is None:
        raise NotImplementedError(
            "zeta: the Riemann zeta function is not implemented; pass q (q=1 gives it)"
            f"{errors.where()}"
        )
    x, q = _floats("zeta", x, q)
    return _more.zeta(x, q)


# --------------------------------------------------------------------------------------------
# Reductions shared with ember.nn (JAX's scipy versions default to axis=None)


def softmax(x: Any, /, *, axis: Any = None) -> Any:
    """``exp(x) / sum(exp(x))`` over ``axis`` (all axes by default)."""
    return nn.softmax(x, axis=axis)


def log_softmax(x: Any, /, *, axis: Any = None) -> Any:
    """``x - logsumexp(x)`` over ``axis`` (all axes by default)."""
    return nn.log_softmax(x, axis=axis)
