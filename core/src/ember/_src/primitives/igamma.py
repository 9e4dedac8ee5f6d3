"""The regularized incomplete gamma functions and their derivatives with respect to ``a``.

``igamma(a, x) = P(a, x)`` and ``igammac(a, x) = Q(a, x) = 1 - P(a, x)``. StableHLO has no
op for them, so, as JAX does, they are lowered as compositions of other primitives: the
power series of P where ``x < max(1, a)`` and the continued fraction of Q elsewhere, each a
``while_loop`` that runs until every element has converged to the dtype's epsilon. The same
loops also carry the derivatives of their terms with respect to ``a``, which gives
``igamma_grad_a`` (dP/da) and ``random_gamma_grad``: the derivative of a Gamma(a, 1) sample
with respect to ``a`` at a fixed quantile (implicit reparameterisation),
``-(dP/da) / (dP/dx)``.

float16 and bfloat16 operands are computed in float32. The reference rules evaluate the same
series in float64 (``special_numpy``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, rules
from ember._src.core import Zero, get_aval, tangent_aval
from ember._src.lowering.expressions import lower_via
from ember._src.primitives import special_numpy
from ember._src.primitives.arithmetic import abs, add, div, mul, neg, sub
from ember._src.primitives.bits import bitwise_and, bitwise_not, bitwise_or
from ember._src.primitives.comparisons import eq, ge, gt, le, lt, ne
from ember._src.primitives.control_flow.loops import while_loop
from ember._src.primitives.elementwise import _FLOAT, coerce_scalars, elementwise_rules
from ember._src.primitives.math_functions import exp, log
from ember._src.primitives.reduce import reduce_or
from ember._src.primitives.selection import select_n
from ember._src.primitives.shape import broadcast_in_dim, convert_element_type
from ember._src.primitives.special import digamma, lgamma

VALUE, DERIVATIVE, SAMPLE_DERIVATIVE = (
    special_numpy.VALUE,
    special_numpy.DERIVATIVE,
    special_numpy.SAMPLE_DERIVATIVE,
)


def _c(x: Any, value: float) -> Any:
    """A constant of ``x``'s shape and dtype."""
    aval = get_aval(x)
    scalar = np.asarray(value, aval.dtype)
    return broadcast_in_dim(scalar, aval.shape, ()) if aval.shape else scalar


def _where(pred: Any, on_true: Any, on_false: Any) -> Any:
    return select_n(pred, on_false, on_true)


def _any(pred: Any) -> Any:
    return reduce_or(pred, tuple(range(get_aval(pred).ndim)))


def _eps(x: Any) -> float:
    return float(dtypes.finfo(get_aval(x).dtype).eps)


def _series(ax, x, a, enabled, mode):
    """The power series of P(a, x) (and of its derivative in ``a``)."""
    eps = _eps(x)

    def body(state):
        enabled, r, c, ans, dc_da, dans_da = state
        r_new = add(r, _c(r, 1))
        dc_new = sub(mul(dc_da, div(x, r_new)), div(mul(c, x), mul(r_new, r_new)))
        dans_new = add(dans_da, dc_new)
        c_new = mul(c, div(x, r_new))
        ans_new = add(ans, c_new)
        test = div(c_new, ans_new) if mode == VALUE else abs(div(dc_new, dans_new))
        return (
            bitwise_and(enabled, gt(test, _c(test, eps))),
            _where(enabled, r_new, r),
            _where(enabled, c_new, c),
            _where(enabled, ans_new, ans),
            _where(enabled, dc_new, dc_da),
            _where(enabled, dans_new, dans_da),
        )

    init = (enabled, a, _c(a, 1), _c(a, 1), _c(a, 0), _c(a, 0))
    _, _, _, ans, _, dans_da = while_loop(lambda s: _any(s[0]), body, init)
    if mode == VALUE:
        return div(mul(ans, ax), a)
    dlogax_da = sub(log(x), digamma(add(a, _c(a, 1))))
    if mode == DERIVATIVE:
        return div(mul(ax, add(mul(ans, dlogax_da), dans_da)), a)
    return neg(div(mul(add(dans_da, mul(ans, dlogax_da)), x), a))


def _continued_fraction(ax, x, a, enabled, mode):
    """The continued fraction of Q(a, x) (and of its derivative in ``a``), evaluated by the
    recurrence of its convergents p_k / q_k, rescaled whenever they grow too large."""
    eps = _eps(x)

    def cond(state):
        return bitwise_and(lt(state[1], np.asarray(2000, get_aval(x).dtype)), _any(state[0]))

    def body(state):
        enabled, c, y, z, ans, dans, pkm1, qkm1, pkm2, qkm2, dpkm1, dqkm1, dpkm2, dqkm2 = state
        c = add(c, np.asarray(1, get_aval(x).dtype))
        y_new, z_new = add(y, _c(y, 1)), add(z, _c(z, 2))
        yc = mul(y_new, c)
        pk = sub(mul(pkm1, z_new), mul(pkm2, yc))
        qk = sub(mul(qkm1, z_new), mul(qkm2, yc))
        nonzero = ne(qk, _c(qk, 0))
        r = div(pk, qk)
        t = _where(nonzero, abs(div(sub(ans, r), r)), _c(r, 1))
        ans_new = _where(nonzero, r, ans)
        dpk = add(sub(sub(mul(dpkm1, z_new), pkm1), mul(dpkm2, yc)), mul(pkm2, c))
        dqk = add(sub(sub(mul(dqkm1, z_new), qkm1), mul(dqkm2, yc)), mul(qkm2, c))
        dans_new = _where(nonzero, div(sub(dpk, mul(ans_new, dqk)), qk), dans)
        grad_test = _where(nonzero, abs(sub(dans_new, dans)), _c(dans, 1))
        rescale = gt(abs(pk), _c(pk, 1 / eps))

        def scaled(v):
            return _where(rescale, mul(v, _c(v, eps)), v)

        new = (y_new, z_new, ans_new, dans_new, scaled(pk), scaled(qk), scaled(pkm1),
               scaled(qkm1), scaled(dpk), scaled(dqk), scaled(dpkm1), scaled(dqkm1))  # fmt: skip
        old = (y, z, ans, dans, pkm1, qkm1, pkm2, qkm2, dpkm1, dqkm1, dpkm2, dqkm2)
        kept = [_where(enabled, n, o) for n, o in zip(new, old)]
        test = t if mode == VALUE else grad_test
        still = bitwise_and(enabled, gt(test, _c(test, eps)))
        y, z, ans, dans = kept[:4]
        return (still, c, y, z, ans, dans, *kept[4:])

    y = sub(_c(a, 1), a)
    z = add(add(x, y), _c(x, 1))
    pkm2, qkm2 = _c(x, 1), x
    pkm1, qkm1 = add(x, _c(x, 1)), mul(z, x)
    ans = div(pkm1, qkm1)
    dpkm2, dqkm2, dpkm1, dqkm1 = _c(x, 0), _c(x, 0), _c(x, 0), neg(x)
    dans = div(sub(dpkm1, mul(ans, dqkm1)), qkm1)
    init = (enabled, np.asarray(0, get_aval(x).dtype), y, z, ans, dans,
            pkm1, qkm1, pkm2, qkm2, dpkm1, dqkm1, dpkm2, dqkm2)  # fmt: skip
    final = while_loop(cond, body, init)
    ans, dans = final[4], final[5]
    if mode == VALUE:
        return mul(ans, ax)
    dlogax_da = sub(log(x), digamma(a))
    if mode == DERIVATIVE:
        return mul(ax, add(mul(ans, dlogax_da), dans))
    return neg(mul(add(dans, mul(ans, dlogax_da)), x))


def _common(a, x):
    is_nan = bitwise_or(ne(a, a), ne(x, x))
    log_ax = sub(sub(mul(a, log(x)), x), lgamma(a))
    underflow = lt(log_ax, _c(log_ax, -np.log(dtypes.finfo(get_aval(a).dtype).max)))
    return is_nan, exp(log_ax), underflow


def _any_of(*preds):
    out = preds[0]
    for p in preds[1:]:
        out = bitwise_or(out, p)
    return out


def _igamma_impl(a, x):
    is_nan, ax, underflow = _common(a, x)
    x_inf, x_zero = eq(x, _c(x, np.inf)), eq(x, _c(x, 0))
    domain = _any_of(lt(x, _c(x, 0)), lt(a, _c(a, 0)), bitwise_and(eq(a, _c(a, 0)), x_zero), is_nan)
    use_cf = bitwise_and(ge(x, _c(x, 1)), gt(x, a))
    enabled = bitwise_not(_any_of(x_zero, domain, underflow, x_inf))
    out = _where(
        use_cf,
        sub(_c(a, 1), _continued_fraction(ax, x, a, bitwise_and(enabled, use_cf), VALUE)),
        _series(ax, x, a, bitwise_and(enabled, bitwise_not(use_cf)), VALUE),
    )
    out = _where(x_zero, _c(out, 0), out)
    out = _where(x_inf, _c(out, 1), out)
    return _where(domain, _c(out, np.nan), out)


def _igammac_impl(a, x):
    is_nan, ax, underflow = _common(a, x)
    x_inf, a_zero = eq(x, _c(x, np.inf)), eq(a, _c(a, 0))
    domain = _any_of(lt(x, _c(x, 0)), lt(a, _c(a, 0)), bitwise_and(a_zero, eq(x, _c(x, 0))), is_nan)
    use_series = bitwise_or(lt(x, _c(x, 1)), lt(x, a))
    enabled = bitwise_not(_any_of(domain, underflow, x_inf, a_zero))
    out = _where(
        use_series,
        sub(_c(a, 1), _series(ax, x, a, bitwise_and(enabled, use_series), VALUE)),
        _continued_fraction(ax, x, a, bitwise_and(enabled, bitwise_not(use_series)), VALUE),
    )
    out = _where(bitwise_or(x_inf, a_zero), _c(out, 0), out)
    return _where(domain, _c(out, np.nan), out)


def _derivative_impl(mode):
    def impl(a, x):
        is_nan, ax, underflow = _common(a, x)
        x_zero = eq(x, _c(x, 0))
        domain = bitwise_or(lt(x, _c(x, 0)), le(a, _c(a, 0)))
        use_cf = bitwise_and(gt(x, _c(x, 1)), gt(x, a))
        enabled = bitwise_not(_any_of(x_zero, domain, underflow, is_nan))
        out = _where(
            use_cf,
            neg(_continued_fraction(ax, x, a, bitwise_and(enabled, use_cf), mode)),
            _series(ax, x, a, bitwise_and(enabled, bitwise_not(use_cf)), mode),
        )
        out = _where(x_zero, _c(out, 0), out)
        return _where(bitwise_or(domain, is_nan), _c(out, np.nan), out)

    return impl


def _broadcast_and_upcast(impl):
    """Broadcast rank-0 operands and compute narrow floats in float32 (as JAX does)."""

    def expression(a, x, **params):
        shape = get_aval(a).shape or get_aval(x).shape
        a, x = (broadcast_in_dim(v, shape, ()) if not get_aval(v).shape else v for v in (a, x))
        dtype = get_aval(a).dtype
        if dtype.itemsize < 4:
            f32 = np.dtype(np.float32)
            return convert_element_type(impl(convert_element_type(a, f32),
                                             convert_element_type(x, f32)), dtype)  # fmt: skip
        return impl(a, x)

    return expression


def _float64_rule(fn):
    def reference(a: np.ndarray, x: np.ndarray) -> np.ndarray:
        return np.asarray(fn(a, x)).astype(a.dtype)

    return reference


def _family_rules(numpy_fn, impl) -> dict[str, Any]:
    """The rules of a member: evaluated in float64 by ``numpy_fn``, lowered through ``impl``."""
    return elementwise_rules(
        _float64_rule(numpy_fn), lower_via(_broadcast_and_upcast(impl)), _FLOAT
    )


def _density(a: Any, x: Any) -> Any:
    """dP(a, x)/dx = x^(a-1) e^-x / Gamma(a)."""
    return exp(sub(sub(mul(sub(a, _c(a, 1)), log(x)), x), lgamma(a)))


def _full(t: Any, shape: tuple[int, ...]) -> Any:
    return broadcast_in_dim(t, shape, ()) if shape and not get_aval(t).shape else t


def _partials_jvp(d_da, d_dx) -> rules.per_primitive:
    """JVP of a function of (a, x) from its two partial derivatives (None: not defined)."""

    def build(primitive):
        def jvp(primals, tangents):
            a, x = primals
            ta, tx = tangents
            out = primitive.bind(a, x)
            out_aval = tangent_aval(get_aval(out))
            result = None
            for t, partial, which in ((ta, d_da, "a"), (tx, d_dx, "x")):
                if type(t) is Zero:
                    continue
                if partial is None:
                    raise ValueError(
                        f"{primitive.name} is not differentiable with respect to {which}"
                    )
                term = mul(_full(t, out_aval.shape), partial(a, x))
                result = term if result is None else add(result, term)
            return out, Zero(out_aval) if result is None else result

        return jvp

    return rules.per_primitive(build)


igamma_p = rules.define_primitive(
    "igamma",
    **_family_rules(special_numpy.igamma, _igamma_impl),
    jvp=_partials_jvp(lambda a, x: igamma_grad_a(a, x), _density),
)


def igamma(a: Any, x: Any) -> Any:
    """The regularized lower incomplete gamma function P(a, x)."""
    return igamma_p.bind(*coerce_scalars(a, x))


igammac_p = rules.define_primitive(
    "igammac",
    **_family_rules(special_numpy.igammac, _igammac_impl),
    jvp=_partials_jvp(lambda a, x: neg(igamma_grad_a(a, x)), lambda a, x: neg(_density(a, x))),
)


def igammac(a: Any, x: Any) -> Any:
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return igammac_p.bind(*coerce_scalars(a, x))


# d/dx dP/da = d/da dP/dx; derivatives in a of the derivative functions are not defined
# (as in JAX).
igamma_grad_a_p = rules.define_primitive(
    "igamma_grad_a",
    **_family_rules(special_numpy.igamma_grad_a, _derivative_impl(DERIVATIVE)),
    jvp=_partials_jvp(None, lambda a, x: mul(_density(a, x), sub(log(x), digamma(a)))),
)


def igamma_grad_a(a: Any, x: Any) -> Any:
    """dP(a, x)/da."""
    return igamma_grad_a_p.bind(*coerce_scalars(a, x))


random_gamma_grad_p = rules.define_primitive(
    "random_gamma_grad",
    **_family_rules(special_numpy.random_gamma_grad, _derivative_impl(SAMPLE_DERIVATIVE)),
    jvp=_partials_jvp(None, None),
)


def random_gamma_grad(a: Any, x: Any) -> Any:
    """The derivative with respect to ``a`` of a sample ``x`` of Gamma(a, 1), holding its
    quantile P(a, x) fixed."""
    return random_gamma_grad_p.bind(*coerce_scalars(a, x))
