"""Math functions: exponentials, logarithms, trigonometric and hyperbolic functions and their
inverses, roots, powers (pow, integer_pow, square), atan2 and the logistic function.

Each is elementwise (see ``elementwise``); the derivative of a unary one is written as
``unary_jvp(lambda x, y: dy/dx)``. Complex operands are evaluated on the reference backend by
``complex_math``, which gives XLA's answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember._src import errors, rules
from ember._src.core import Zero, get_aval, tangent_aval
from ember._src.interpreters.ad_util import add_tangents
from ember._src.primitives import complex_math, sharding_rules
from ember._src.primitives.arithmetic import add, complex, div, imag, mul, neg, real, sub
from ember._src.primitives.comparisons import eq
from ember._src.primitives.elementwise import (
    _FLOAT,
    _NUM,
    _REAL_FLOAT,
    coerce_scalars,
    elementwise_batch,
    elementwise_rules,
    full_shape,
    lowering_for_complex,
    nary_abstract_eval,
    real_or_complex,
    scalar_like,
    zero_tangent_like,
)
from ember._src.primitives.selection import select_n


def unary_jvp(derivative: Callable[[Any, Any], Any]) -> rules.per_primitive:
    """The jvp rule of ``y = f(x)``: ``t * derivative(x, y)``."""

    def build(primitive):
        def jvp(primals, tangents, **params):
            (x,), (t,) = primals, tangents
            y = primitive.bind(x, **params)
            if type(t) is Zero:
                return y, zero_tangent_like(y)
            return y, mul(t, derivative(x, y))

        return jvp

    return rules.per_primitive(build)


def _default_accuracy_only(name: str, accuracy: Any) -> None:
    """Only the compiler's default implementation exists here, so a requested accuracy
    (a tolerance or mode, as JAX accepts) cannot be honoured."""
    if accuracy is not None:
        raise NotImplementedError(
            f"lax.{name}: accuracy={accuracy!r} is not supported; only accuracy=None "
            f"(the default implementation){errors.where()}"
        )


# --------------------------------------------------------------------------------------------
# Exponentials and logarithms


exp_p = rules.define_primitive(
    "exp",
    **elementwise_rules(real_or_complex(np.exp, complex_math.exp), "stablehlo.exponential", _FLOAT),
    jvp=unary_jvp(lambda x, y: y),
)


def exp(x: Any, *, accuracy: Any = None) -> Any:
    _default_accuracy_only("exp", accuracy)
    return exp_p.bind(x)


log_p = rules.define_primitive(
    "log",
    **elementwise_rules(real_or_complex(np.log, complex_math.log), "stablehlo.log", _FLOAT),
    jvp=unary_jvp(lambda x, y: div(scalar_like(x, 1), x)),
)


def log(x: Any, *, accuracy: Any = None) -> Any:
    _default_accuracy_only("log", accuracy)
    return log_p.bind(x)


log1p_p = rules.define_primitive(
    "log1p",
    **elementwise_rules(
        real_or_complex(np.log1p, complex_math.log1p), "stablehlo.log_plus_one", _FLOAT
    ),
    jvp=unary_jvp(lambda x, y: div(scalar_like(x, 1), add(x, scalar_like(x, 1)))),
)


def log1p(x: Any, *, accuracy: Any = None) -> Any:
    _default_accuracy_only("log1p", accuracy)
    return log1p_p.bind(x)


expm1_p = rules.define_primitive(
    "expm1",
    **elementwise_rules(
        real_or_complex(np.expm1, complex_math.expm1), "stablehlo.exponential_minus_one", _FLOAT
    ),
    jvp=unary_jvp(lambda x, y: add(y, scalar_like(y, 1))),
)


def expm1(x: Any, *, accuracy: Any = None) -> Any:
    _default_accuracy_only("expm1", accuracy)
    return expm1_p.bind(x)


# --------------------------------------------------------------------------------------------
# sin and cos. XLA's own complex sine gives nan + inf j for sin(inf j); JAX lowers complex sin
# and cos through real functions instead, with sinh and cosh from expm1 (accurate near 0).


def _sin_cos_parts(x):
    a, b = real(x), imag(x)
    two = scalar_like(a, 2)
    e1, e2 = expm1(b), expm1(neg(b))
    sinh_b = div(sub(e1, e2), two)
    cosh_b = div(add(add(e1, e2), two), two)
    return a, sin(a), cos(a), sinh_b, cosh_b


def _complex_sin(x):
    a, sn, cs, sinh_b, cosh_b = _sin_cos_parts(x)
    zero = scalar_like(a, 0)
    # A zero real part gives an exactly zero real result (not inf * 0 = nan for large b).
    re = select_n(eq(a, zero), mul(sn, cosh_b), zero)
    return complex(re, mul(cs, sinh_b))


def _complex_cos(x):
    a, sn, cs, sinh_b, cosh_b = _sin_cos_parts(x)
    zero = scalar_like(a, 0)
    im = select_n(eq(a, zero), mul(neg(sn), sinh_b), zero)
    return complex(mul(cs, cosh_b), im)


sin_p = rules.define_primitive(
    "sin",
    **elementwise_rules(
        real_or_complex(np.sin, complex_math.sin),
        lowering_for_complex("stablehlo.sine", _complex_sin),
        _FLOAT,
    ),
    jvp=unary_jvp(lambda x, y: cos(x)),
)


def sin(x: Any, *, accuracy: Any = None) -> Any:
    _default_accuracy_only("sin", accuracy)
    return sin_p.bind(x)


cos_p = rules.define_primitive(
    "cos",
    **elementwise_rules(
        real_or_complex(np.cos, complex_math.cos),
        lowering_for_complex("stablehlo.cosine", _complex_cos),
        _FLOAT,
    ),
    jvp=unary_jvp(lambda x, y: neg(sin(x))),
)


def cos(x: Any, *, accuracy: Any = None) -> Any:
    _default_accuracy_only("cos", accuracy)
    return cos_p.bind(x)


# --------------------------------------------------------------------------------------------
# tan, tanh


tan_p = rules.define_primitive(
    "tan",
    **elementwise_rules(real_or_complex(np.tan, complex_math.tan), "stablehlo.tan", _FLOAT),
    jvp=unary_jvp(lambda x, y: add(scalar_like(y, 1), mul(y, y))),
)


def tan(x: Any, *, accuracy: Any = None) -> Any:
    _default_accuracy_only("tan", accuracy)
    return tan_p.bind(x)


tanh_p = rules.define_primitive(
    "tanh",
    **elementwise_rules(real_or_complex(np.tanh, complex_math.tanh), "stablehlo.tanh", _FLOAT),
    jvp=unary_jvp(lambda x, y: sub(scalar_like(y, 1), mul(y, y))),
)


def tanh(x: Any, *, accuracy: Any = None) -> Any:
    _default_accuracy_only("tanh", accuracy)
    return tanh_p.bind(x)


# --------------------------------------------------------------------------------------------
# Roots and the logistic function


sqrt_p = rules.define_primitive(
    "sqrt",
    **elementwise_rules(real_or_complex(np.sqrt, complex_math.sqrt), "stablehlo.sqrt", _FLOAT),
    jvp=unary_jvp(lambda x, y: div(scalar_like(y, 0.5), y)),
)


def sqrt(x: Any, *, accuracy: Any = None) -> Any:
    _default_accuracy_only("sqrt", accuracy)
    return sqrt_p.bind(x)


def _rsqrt_reference(x):
    return 1 / np.sqrt(x)


rsqrt_p = rules.define_primitive(
    "rsqrt",
    **elementwise_rules(_rsqrt_reference, "stablehlo.rsqrt", _FLOAT),
    jvp=unary_jvp(lambda x, y: mul(scalar_like(y, -0.5), div(y, x))),
)


def rsqrt(x: Any, *, accuracy: Any = None) -> Any:
    _default_accuracy_only("rsqrt", accuracy)
    return rsqrt_p.bind(x)


cbrt_p = rules.define_primitive(
    "cbrt",
    **elementwise_rules(np.cbrt, "stablehlo.cbrt", _REAL_FLOAT),
    jvp=unary_jvp(lambda x, y: div(scalar_like(y, 1 / 3), mul(y, y))),
)


def cbrt(x: Any, *, accuracy: Any = None) -> Any:
    _default_accuracy_only("cbrt", accuracy)
    return cbrt_p.bind(x)


def _logistic_reference(x):
    return (1 / (1 + np.exp(-x))).astype(x.dtype)


logistic_p = rules.define_primitive(
    "logistic",
    **elementwise_rules(_logistic_reference, "stablehlo.logistic", _FLOAT),
    jvp=unary_jvp(lambda x, y: mul(y, sub(scalar_like(y, 1), y))),
)


def logistic(x: Any, *, accuracy: Any = None) -> Any:
    _default_accuracy_only("logistic", accuracy)
    return logistic_p.bind(x)


# --------------------------------------------------------------------------------------------
# Inverse trigonometric and hyperbolic functions


asin_p = rules.define_primitive(
    "asin",
    **elementwise_rules(real_or_complex(np.arcsin, complex_math.asin), "chlo.asin", _FLOAT),
    jvp=unary_jvp(lambda x, y: rsqrt(sub(scalar_like(x, 1), mul(x, x)))),
)


def asin(x: Any) -> Any:
    return asin_p.bind(x)


acos_p = rules.define_primitive(
    "acos",
    **elementwise_rules(real_or_complex(np.arccos, complex_math.acos), "chlo.acos", _FLOAT),
    jvp=unary_jvp(lambda x, y: neg(rsqrt(sub(scalar_like(x, 1), mul(x, x))))),
)


def acos(x: Any) -> Any:
    return acos_p.bind(x)


atan_p = rules.define_primitive(
    "atan",
    **elementwise_rules(real_or_complex(np.arctan, complex_math.atan), "chlo.atan", _FLOAT),
    jvp=unary_jvp(lambda x, y: div(scalar_like(x, 1), add(scalar_like(x, 1), mul(x, x)))),
)


def atan(x: Any) -> Any:
    return atan_p.bind(x)


sinh_p = rules.define_primitive(
    "sinh",
    **elementwise_rules(real_or_complex(np.sinh, complex_math.sinh), "chlo.sinh", _FLOAT),
    jvp=unary_jvp(lambda x, y: cosh(x)),
)


def sinh(x: Any) -> Any:
    return sinh_p.bind(x)


cosh_p = rules.define_primitive(
    "cosh",
    **elementwise_rules(real_or_complex(np.cosh, complex_math.cosh), "chlo.cosh", _FLOAT),
    jvp=unary_jvp(lambda x, y: sinh(x)),
)


def cosh(x: Any) -> Any:
    return cosh_p.bind(x)


asinh_p = rules.define_primitive(
    "asinh",
    **elementwise_rules(real_or_complex(np.arcsinh, complex_math.asinh), "chlo.asinh", _FLOAT),
    jvp=unary_jvp(lambda x, y: rsqrt(add(mul(x, x), scalar_like(x, 1)))),
)


def asinh(x: Any) -> Any:
    return asinh_p.bind(x)


acosh_p = rules.define_primitive(
    "acosh",
    **elementwise_rules(real_or_complex(np.arccosh, complex_math.acosh), "chlo.acosh", _FLOAT),
    jvp=unary_jvp(lambda x, y: rsqrt(mul(sub(x, scalar_like(x, 1)), add(x, scalar_like(x, 1))))),
)


def acosh(x: Any) -> Any:
    return acosh_p.bind(x)


atanh_p = rules.define_primitive(
    "atanh",
    **elementwise_rules(real_or_complex(np.arctanh, complex_math.atanh), "chlo.atanh", _FLOAT),
    jvp=unary_jvp(lambda x, y: div(scalar_like(x, 1), sub(scalar_like(x, 1), mul(x, x)))),
)


def atanh(x: Any) -> Any:
    return atanh_p.bind(x)


# --------------------------------------------------------------------------------------------
# Powers: square, integer_pow, pow


def _square_lowering(ctx, x):
    """x * x; chlo.square for inexact types, whose complex form keeps (a - b)(a + b) exact
    where a * a - b * b would round or overflow."""
    op = "stablehlo.multiply" if ctx.avals_in[0].dtype.kind in "iu" else "chlo.square"
    return ctx.op(op, [x, x] if op == "stablehlo.multiply" else [x], ctx.avals_out[0])


square_p = rules.define_primitive(
    "square",
    **elementwise_rules(
        real_or_complex(lambda x: x * x, complex_math.square), _square_lowering, _NUM
    ),
    jvp=unary_jvp(lambda x, y: mul(scalar_like(x, 2), x)),
)


def square(x: Any) -> Any:
    return square_p.bind(x)


def _integer_pow_reference(x, *, y):
    return np.power(x, x.dtype.type(y)) if y >= 0 else (1 / np.power(x, -y)).astype(x.dtype)


def _complex_integer_pow(x, *, y):
    return complex_math.integer_power(x, y)


def _integer_pow_jvp(primals, tangents, *, y):
    (x,), (t,) = primals, tangents
    out = integer_pow(x, y)
    if type(t) is Zero:
        return out, zero_tangent_like(out)
    if y == 0:
        return out, Zero(tangent_aval(get_aval(out)))
    if y == 1:
        return out, t
    power = x if y == 2 else integer_pow(x, y - 1)
    return out, mul(t, mul(scalar_like(x, y), power))


def _integer_pow_lowering(ctx, x, *, y):
    """Repeated squaring and multiplication (and, for y < 0, a division)."""
    aval = ctx.avals_out[0]
    if y == 0:
        return ctx.full(1, aval)
    acc = None
    base = x
    n = -y if y < 0 else y
    while n:
        if n & 1:
            acc = base if acc is None else ctx.op("stablehlo.multiply", [acc, base], aval)
        n >>= 1
        if n:
            base = ctx.op("stablehlo.multiply", [base, base], aval)
    if y < 0:
        acc = ctx.op("stablehlo.divide", [ctx.full(1, aval), acc], aval)
    return acc


integer_pow_p = rules.define_primitive(
    "integer_pow",
    sharding=sharding_rules.same_as_operand,
    abstract_eval=nary_abstract_eval("integer_pow", _NUM),
    jvp=_integer_pow_jvp,
    batch=rules.per_primitive(elementwise_batch),
    lowering=_integer_pow_lowering,
    reference=real_or_complex(_integer_pow_reference, _complex_integer_pow),
)


def integer_pow(x: Any, y: int) -> Any:
    """``x ** y`` for a static integer ``y``."""
    return integer_pow_p.bind(x, y=int(y))


def _pow_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = pow(x, y)
    out_aval = tangent_aval(get_aval(out))
    a = Zero(out_aval)
    if type(tx) is not Zero:
        # d/dx x^y = y * x^(y-1); written so that x = 0, y = 0 gives 0 rather than nan.
        safe = select_n(
            eq(y, scalar_like(y, 0)),
            mul(y, pow(x, sub(y, scalar_like(y, 1)))),
            scalar_like(y, 0),
        )
        a = full_shape(mul(tx, safe), out_aval)
    b = Zero(out_aval)
    if type(ty) is not Zero:
        log_x = log(select_n(eq(x, scalar_like(x, 0)), x, scalar_like(x, 1)))
        b = full_shape(mul(ty, mul(out, log_x)), out_aval)
    return out, add_tangents(a, b)


pow_p = rules.define_primitive(
    "pow",
    **elementwise_rules(real_or_complex(np.power, complex_math.power), "stablehlo.power", _FLOAT),
    jvp=_pow_jvp,
)


def pow(x: Any, y: Any) -> Any:
    return pow_p.bind(*coerce_scalars(x, y))


# --------------------------------------------------------------------------------------------
# atan2


def _atan2_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = atan2(x, y)
    out_aval = tangent_aval(get_aval(out))
    denom = add(mul(x, x), mul(y, y))
    a = Zero(out_aval) if type(tx) is Zero else full_shape(mul(tx, div(y, denom)), out_aval)
    b = Zero(out_aval) if type(ty) is Zero else full_shape(mul(ty, neg(div(x, denom))), out_aval)
    return out, add_tangents(a, b)


atan2_p = rules.define_primitive(
    "atan2", **elementwise_rules(np.arctan2, "stablehlo.atan2", _FLOAT), jvp=_atan2_jvp
)


def atan2(x: Any, y: Any) -> Any:
    return atan2_p.bind(*coerce_scalars(x, y))
