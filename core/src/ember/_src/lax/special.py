"""More special functions, composed from elementwise operations: the exponentially scaled
modified Bessel functions ``bessel_i0e``/``bessel_i1e``, the Hurwitz ``zeta`` and the
regularised incomplete beta function ``betainc``.

Bessel: the power series ``sum (x^2/4)^k / (k! (k+nu)!)`` (all terms positive, so accurate)
up to a switch point, and the large-argument expansion
``e^-x I_nu(x) ~ (2 pi x)^-1/2 sum_k prod_{j<=k} (4 nu^2 - (2j-1)^2) / (-8 j x)`` beyond it.
Each branch is evaluated on arguments clamped to its own side, so that the branch not taken
produces no infinities (and no NaN gradients).

``zeta`` is Euler-Maclaurin summation, with XLA's answers outside ``x > 1, q > 0``.
``betainc`` is the continued fraction of the incomplete beta function (modified Lentz, a
fixed number of steps), on whichever of ``x`` and ``1 - x`` it converges faster for.
All are differentiable through their own arithmetic.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.primitives import (
    elementwise as ew,
)
from ember._src.primitives.arithmetic import (
    abs as abs_,
    add,
    div,
    floor,
    max as max_,
    min as min_,
    mul,
    neg,
    sign,
    sub,
)
from ember._src.primitives.bits import bitwise_and, bitwise_not, bitwise_or
from ember._src.primitives.comparisons import eq, gt, le, lt, ne
from ember._src.primitives.control_flow.loops import fori_loop
from ember._src.primitives.math_functions import exp, log, log1p, pow as pow_, rsqrt
from ember._src.primitives.selection import select_n
from ember._src.primitives.shape import broadcast_to_shape, convert_element_type
from ember._src.primitives.special import lgamma
from ember._src.primitives.special_numpy import ZETA_TAIL
from ember._src.transforms.custom_derivatives import custom_jvp

# (series terms, asymptotic terms, switch point) per precision; chosen so that the relative
# error against a float64 reference stays within a few ulps.
_BESSEL_PLAN = {4: (32, 12, 20.0), 8: (60, 30, 25.0)}


def _float_operands(name: str, *args: Any) -> list[Any]:
    """The arguments as arrays of one floating dtype and shape (Python scalars follow)."""
    args = ew.coerce_scalars(*args)
    avals = [get_aval(a) for a in args]
    dtype = avals[0].dtype
    for aval in avals:
        if aval.dtype != dtype or not dtypes.is_float(aval.dtype):
            raise TypeError(
                f"{name} needs floating-point arguments of one dtype, got "
                f"{', '.join(a.str_short() for a in avals)}{errors.where()}"
            )
    shape = np.broadcast_shapes(*[a.shape for a in avals])
    return [a if get_aval(a).shape == shape else broadcast_to_shape(a, shape) for a in args]


def _full(like: Any, value: float) -> np.ndarray:
    aval = get_aval(like)
    return np.full(aval.shape, value, aval.dtype)


def _plan(x: Any) -> tuple[int, int, float]:
    return _BESSEL_PLAN[8 if get_aval(x).dtype.itemsize >= 8 else 4]


def _bessel_series(ax: Any, nu: int, terms: int) -> Any:
    """``e^-ax I_nu(ax)`` by the power series, evaluated from its tail (Horner)."""
    y = mul(mul(ax, ax), _full(ax, 0.25))
    total = _full(ax, 1.0)
    for k in range(terms, 0, -1):
        total = add(_full(ax, 1.0), mul(total, div(y, _full(ax, k * (k + nu)))))
    if nu == 1:
        total = mul(total, mul(ax, _full(ax, 0.5)))
    return mul(exp(neg(ax)), total)


def _bessel_asymptotic(ax: Any, nu: int, terms: int) -> Any:
    """``e^-ax I_nu(ax)`` by its large-argument expansion."""
    term, total = _full(ax, 1.0), _full(ax, 1.0)
    for k in range(1, terms + 1):
        factor = -(4 * nu * nu - (2 * k - 1) ** 2) / (8 * k)
        term = div(mul(term, _full(ax, factor)), ax)
        total = add(total, term)
    return mul(total, rsqrt(mul(ax, _full(ax, 2 * math.pi))))


def _bessel_scaled(x: Any, nu: int) -> Any:
    series_terms, asymptotic_terms, switch = _plan(x)
    ax = abs_(x)
    small = le(ax, _full(ax, switch))
    near = _bessel_series(min_(ax, _full(ax, switch)), nu, series_terms)
    far = _bessel_asymptotic(max_(ax, _full(ax, switch)), nu, asymptotic_terms)
    out = select_n(small, far, near)  # inf gives 0 and nan stays nan by itself
    if nu == 1:
        out = mul(out, sign(x))
    return out


def _i0e(x: Any) -> Any:
    return _bessel_scaled(x, 0)


def _i1e(x: Any) -> Any:
    return _bessel_scaled(x, 1)


# The derivatives of the scaled functions, exact at 0 (where |x| has no derivative):
# i0e' = i1e - sign(x) i0e and i1e' = i0e - (sign(x) + 1/x) i1e, which is 1/2 at 0.
_i0e_custom = custom_jvp(_i0e)
_i1e_custom = custom_jvp(_i1e)


@_i0e_custom.defjvp
def _i0e_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = _i0e_custom(x)
    slope = sub(_i1e_custom(x), mul(sign(x), out))
    return out, mul(t, slope)


@_i1e_custom.defjvp
def _i1e_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = _i1e_custom(x)
    zero = eq(x, _full(x, 0.0))
    safe_x = select_n(zero, x, _full(x, 1.0))
    slope = sub(
        _i0e_custom(x),
        mul(add(sign(x), div(_full(x, 1.0), safe_x)), out),
    )
    slope = select_n(zero, slope, _full(x, 0.5))
    return out, mul(t, slope)


def bessel_i0e(x: Any) -> Any:
    """``exp(-|x|) I0(x)``, the exponentially scaled modified Bessel function of order 0."""
    (x,) = _float_operands("bessel_i0e", x)
    return _i0e_custom(x)


def bessel_i1e(x: Any) -> Any:
    """``exp(-|x|) I1(x)``, the exponentially scaled modified Bessel function of order 1."""
    (x,) = _float_operands("bessel_i1e", x)
    return _i1e_custom(x)


# --------------------------------------------------------------------------------------------
# Hurwitz zeta

_ZETA_TERMS = 12


def _zeta_sum(s: Any, q: Any) -> Any:
    """Euler-Maclaurin: ``sum_{k<N} (q+k)^-s`` plus the integral and Bernoulli tail of the
    rest (valid for ``q + N > 0``)."""
    total = _full(s, 0.0)
    neg_s = neg(s)
    for k in range(_ZETA_TERMS):
        total = add(total, pow_(add(q, _full(q, k)), neg_s))
    w = add(q, _full(q, _ZETA_TERMS))
    one = _full(s, 1.0)
    total = add(total, div(pow_(w, sub(one, s)), sub(s, one)))
    total = add(total, mul(_full(s, 0.5), pow_(w, neg_s)))
    rising, power = s, pow_(w, sub(neg_s, one))
    w2 = mul(w, w)
    for j, coefficient in enumerate(ZETA_TAIL):
        total = add(total, mul(_full(s, coefficient), mul(rising, power)))
        step = mul(add(s, _full(s, 2 * j + 1)), add(s, _full(s, 2 * j + 2)))
        rising = mul(rising, step)
        power = div(power, w2)
    return total


def zeta(x: Any, q: Any) -> Any:
    """The Hurwitz zeta function ``sum_k (q + k)^-x``: nan for ``x < 1``, inf at ``x == 1``
    and at non-positive integer ``q``, nan at negative non-integer ``q`` unless ``x`` is an
    integer (where the sum is still real), and nan at infinite ``x`` or ``q`` (as XLA)."""
    x, q = _float_operands("zeta", x, q)
    out = _zeta_sum(x, q)
    nan, inf = _full(x, np.nan), _full(x, np.inf)
    q_integer = eq(floor(q), q)
    x_integer = eq(floor(x), x)
    q_nonpositive = le(q, _full(q, 0.0))
    out = select_n(bitwise_and(q_nonpositive, bitwise_not(x_integer)), out, nan)
    out = select_n(bitwise_and(q_nonpositive, q_integer), out, inf)
    out = select_n(eq(x, _full(x, 1.0)), out, inf)
    out = select_n(eq(q, inf), out, nan)  # as XLA
    return select_n(lt(x, _full(x, 1.0)), out, nan)


# --------------------------------------------------------------------------------------------
# Regularised incomplete beta

_BETAINC_STEPS = 200


def _guard(v: Any, tiny: np.ndarray) -> Any:
    """``v`` moved away from zero (Lentz's safeguard against division by zero)."""
    small = lt(abs_(v), tiny)
    return select_n(small, v, tiny)


def _continued_fraction(a: Any, b: Any, x: Any) -> Any:
    """The continued fraction ``K`` with ``I_x(a, b) = x^a (1-x)^b K / (a B(a, b))``,
    converging for ``x < (a + 1) / (a + b + 2)``."""
    one = _full(a, 1.0)
    tiny = _full(a, np.finfo(get_aval(a).dtype).tiny * 1e3)
    apb = add(a, b)
    c = one
    d = div(
        one,
        _guard(
            sub(one, div(mul(apb, x), add(a, one))),
            tiny,
        ),
    )

    def lentz(coefficient: Any, c: Any, d: Any) -> tuple[Any, Any, Any]:
        d = div(one, _guard(add(one, mul(coefficient, d)), tiny))
        c = _guard(add(one, div(coefficient, c)), tiny)
        return c, d, mul(c, d)

    eps = _full(a, np.finfo(get_aval(a).dtype).eps)

    def step(m: Any, carry: tuple) -> tuple:
        c, d, h, done = carry
        aval = get_aval(a)
        m = broadcast_to_shape(convert_element_type(m, aval.dtype), aval.shape)
        two_m = add(m, m)
        even = div(
            mul(mul(m, sub(b, m)), x),
            mul(add(sub(a, one), two_m), add(a, two_m)),
        )
        c, d, even_factor = lentz(even, c, d)
        odd = neg(
            div(
                mul(mul(add(a, m), add(apb, m)), x),
                mul(add(a, two_m), add(add(a, one), two_m)),
            )
        )
        c, d, odd_factor = lentz(odd, c, d)
        factor = mul(even_factor, odd_factor)
        # Once the factors are 1 to working precision, stop: multiplying by rounded ones
        # would only accumulate rounding error.
        h = select_n(done, mul(h, factor), h)
        done = bitwise_or(done, le(abs_(sub(factor, one)), eps))
        return c, d, h, done

    start = (c, d, d, np.zeros(get_aval(a).shape, np.bool_))
    _, _, h, _ = fori_loop(1, _BETAINC_STEPS + 1, step, start)
    return h


def _log_prefactor(a: Any, b: Any, x: Any) -> Any:
    """``log(x^a (1-x)^b / B(a, b))``."""
    log_beta = sub(add(lgamma(a), lgamma(b)), lgamma(add(a, b)))
    power = add(
        mul(a, log(x)),
        mul(b, log1p(neg(x))),
    )
    return sub(power, log_beta)


def betainc(a: Any, b: Any, x: Any) -> Any:
    """The regularised incomplete beta function ``I_x(a, b)``."""
    a, b, x = _float_operands("betainc", a, b, x)
    one, zero = _full(x, 1.0), _full(x, 0.0)
    eps = _full(x, np.finfo(get_aval(x).dtype).eps)
    inside = bitwise_and(gt(x, zero), lt(x, one))
    # Evaluate on safe stand-ins where the answer is decided below, so no NaN leaks into
    # gradients through the branch not taken.
    xs = select_n(inside, _full(x, 0.5), x)
    positive = bitwise_and(gt(a, zero), gt(b, zero))
    a_s = select_n(positive, one, a)
    b_s = select_n(positive, one, b)
    direct = lt(
        xs,
        div(add(a_s, one), add(add(a_s, b_s), _full(x, 2.0))),
    )
    # Swap (a, b, x) -> (b, a, 1 - x) where the fraction converges faster that way.
    a_cf = select_n(direct, b_s, a_s)
    b_cf = select_n(direct, a_s, b_s)
    x_cf = select_n(direct, sub(one, xs), xs)
    x_cf = max_(x_cf, eps)
    fraction = _continued_fraction(a_cf, b_cf, x_cf)
    tail = div(mul(exp(_log_prefactor(a_cf, b_cf, x_cf)), fraction), a_cf)
    out = select_n(direct, sub(one, tail), tail)
    # Edges: I_0 = 0, I_1 = 1; a == 0 puts all mass at 0, b == 0 at 1.
    out = select_n(inside, select_n(le(x, zero), one, zero), out)
    out = select_n(bitwise_and(eq(b, zero), gt(a, zero)), out, zero)
    out = select_n(bitwise_and(eq(a, zero), gt(b, zero)), out, one)
    invalid = bitwise_or(
        bitwise_or(lt(a, zero), lt(b, zero)),
        bitwise_or(lt(x, zero), gt(x, one)),
    )
    invalid = bitwise_or(invalid, bitwise_and(eq(a, zero), eq(b, zero)))
    unknown = bitwise_or(bitwise_or(ne(a, a), ne(b, b)), ne(x, x))
    return select_n(bitwise_or(invalid, unknown), out, _full(x, np.nan))
