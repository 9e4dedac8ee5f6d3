"""Arithmetic: add, sub, mul, div, rem, max, min, neg, sign, floor, ceil, round, abs, and the
parts of complex numbers (real, imag, conj, complex).

Operands share a dtype and a shape, or are rank 0 (see ``elementwise``). Complex operands
are evaluated on the reference backend by ``complex_math``, which gives XLA's answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import ShapedArray, Zero, get_aval, tangent_aval
from ember._src.interpreters.ad import is_undefined
from ember._src.interpreters.ad_util import add_tangents, instantiate, zeros
from ember._src.primitives import complex_math, sharding_rules
from ember._src.primitives.bits import bitwise_and, bitwise_or
from ember._src.primitives.comparisons import eq, ge, gt, lt
from ember._src.primitives.elementwise import (
    _ANY,
    _FLOAT,
    _NUM,
    _REAL,
    _REAL_FLOAT,
    coerce_scalars,
    elementwise_batch,
    elementwise_rules,
    full_shape,
    hlo_lowering,
    lowering_for_complex,
    nary_abstract_eval,
    numpy_reference,
    real_or_complex,
    scalar_like,
    unbroadcast,
    zero_jvp,
    zero_tangent_like,
)
from ember._src.primitives.selection import select_n
from ember._src.primitives.shape import (
    compare_type,
    convert_element_type,
)

# --------------------------------------------------------------------------------------------
# add, sub


def _broadcast_tangent_sum(out: Any, tx: Any, ty: Any, negate_second: bool) -> Any:
    out_aval = tangent_aval(get_aval(out))
    if type(ty) is not Zero and negate_second:
        ty = neg(ty)
    tx, ty = (full_shape(t, out_aval) for t in (tx, ty))
    both = Zero not in (type(tx), type(ty))
    if both and get_aval(tx).typed_sharding != get_aval(ty).typed_sharding:
        # Tangents typed differently (one operand split where the other is whole) are added
        # by add, whose transpose types each cotangent as its operand; add_any's gives both
        # the result's type.
        return add(tx, ty)
    result = add_tangents(tx, ty)
    return Zero(out_aval) if type(result) is Zero else result


def _add_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = add(x, y)
    return out, _broadcast_tangent_sum(out, tx, ty, negate_second=False)


def _add_transpose(ct, x, y):
    return [
        unbroadcast(x.aval, ct) if is_undefined(x) else None,
        unbroadcast(y.aval, ct) if is_undefined(y) else None,
    ]


add_p = rules.define_primitive(
    "add",
    **elementwise_rules(np.add, "stablehlo.add", _ANY),
    jvp=_add_jvp,
    transpose=_add_transpose,
)


def add(x: Any, y: Any) -> Any:
    return add_p.bind(*coerce_scalars(x, y))


def _sub_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = sub(x, y)
    return out, _broadcast_tangent_sum(out, tx, ty, negate_second=True)


def _sub_transpose(ct, x, y):
    return [
        unbroadcast(x.aval, ct) if is_undefined(x) else None,
        unbroadcast(y.aval, neg(ct)) if is_undefined(y) else None,
    ]


sub_p = rules.define_primitive(
    "sub",
    **elementwise_rules(np.subtract, "stablehlo.subtract", _NUM),
    jvp=_sub_jvp,
    transpose=_sub_transpose,
)


def sub(x: Any, y: Any) -> Any:
    return sub_p.bind(*coerce_scalars(x, y))


# --------------------------------------------------------------------------------------------
# mul, div, rem


def _mul_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = mul(x, y)
    out_aval = tangent_aval(get_aval(out))
    a = Zero(out_aval) if type(tx) is Zero else full_shape(mul(tx, y), out_aval)
    b = Zero(out_aval) if type(ty) is Zero else full_shape(mul(x, ty), out_aval)
    return out, add_tangents(a, b)


def _mul_transpose(ct, x, y):
    if is_undefined(x) and is_undefined(y):
        raise TypeError("internal error: mul transposed with respect to both operands")
    if type(ct) is Zero:
        return [None, None]
    if is_undefined(x):
        return [unbroadcast(x.aval, mul(ct, y)), None]
    return [None, unbroadcast(y.aval, mul(x, ct))]


mul_p = rules.define_primitive(
    "mul",
    **elementwise_rules(np.multiply, "stablehlo.multiply", _ANY),
    jvp=_mul_jvp,
    transpose=_mul_transpose,
)


def mul(x: Any, y: Any, *, out_dtype: Any = None) -> Any:
    """``x * y``; with ``out_dtype``, both are cast to it before multiplying (as JAX)."""
    x, y = coerce_scalars(x, y)
    if out_dtype is not None:
        x, y = convert_element_type(x, out_dtype), convert_element_type(y, out_dtype)
    return mul_p.bind(x, y)


def _real_divide(x, y):
    if x.dtype.kind in "iu":
        # XLA's integer division rounds toward zero (C semantics), not toward -inf.
        with np.errstate(divide="ignore", invalid="ignore"):
            quotient = np.trunc(np.true_divide(x, y))
        return np.where(y == 0, -1, quotient).astype(x.dtype)
    return np.true_divide(x, y)


def _div_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = div(x, y)
    out_aval = tangent_aval(get_aval(out))
    a = Zero(out_aval) if type(tx) is Zero else full_shape(div(tx, y), out_aval)
    b = Zero(out_aval) if type(ty) is Zero else full_shape(neg(mul(ty, div(out, y))), out_aval)
    return out, add_tangents(a, b)


def _div_transpose(ct, x, y):
    if is_undefined(y):
        raise TypeError("internal error: div is not linear in its denominator")
    if type(ct) is Zero:
        return [None, None]
    return [unbroadcast(x.aval, div(ct, y)), None]


div_p = rules.define_primitive(
    "div",
    **elementwise_rules(
        real_or_complex(_real_divide, complex_math.divide), "stablehlo.divide", _NUM
    ),
    jvp=_div_jvp,
    transpose=_div_transpose,
)


def div(x: Any, y: Any) -> Any:
    return div_p.bind(*coerce_scalars(x, y))


def _rem_reference(x, y):
    if x.dtype.kind in "iu":
        # XLA: x % 0 is x for integers (NumPy would give 0 and warn).
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(y == 0, x, np.fmod(x, np.where(y == 0, 1, y))).astype(x.dtype)
    return np.fmod(x, y)


def _rem_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = rem(x, y)
    out_aval = tangent_aval(get_aval(out))
    a = Zero(out_aval) if type(tx) is Zero else full_shape(tx, out_aval)
    trunc = round_(div(sub(x, out), y))
    b = Zero(out_aval) if type(ty) is Zero else full_shape(neg(mul(ty, trunc)), out_aval)
    return out, add_tangents(a, b)


rem_p = rules.define_primitive(
    "rem",
    **elementwise_rules(_rem_reference, "stablehlo.remainder", _REAL),
    jvp=_rem_jvp,
)


def rem(x: Any, y: Any) -> Any:
    return rem_p.bind(*coerce_scalars(x, y))


# --------------------------------------------------------------------------------------------
# max, min: complex numbers ordered lexicographically, as NumPy and JAX order them


def lexicographic(strict: Callable[[Any, Any], Any], last: Callable[[Any, Any], Any]):
    """A comparison that orders complex numbers as NumPy does: by real part (``strict``),
    then by imaginary part (``last``) where the real parts are equal. Real operands: ``last``."""

    def compare(x: Any, y: Any) -> Any:
        if get_aval(x).dtype.kind != "c":
            return last(x, y)
        rx, ry = real(x), real(y)
        return bitwise_or(strict(rx, ry), bitwise_and(eq(rx, ry), last(imag(x), imag(y))))

    return compare


def _minmax_jvp(pick_x: Callable[[Any, Any], Any]):
    def build(primitive):
        def jvp(primals, tangents):
            x, y = primals
            tx, ty = tangents
            out = primitive.bind(x, y)
            out_aval = tangent_aval(get_aval(out))
            if type(tx) is Zero and type(ty) is Zero:
                return out, Zero(out_aval)
            # Ties split the derivative evenly, as JAX does, so grad(max)(x, x) is 0.5 each.
            tx = full_shape(instantiate(tx) if type(tx) is Zero else tx, out_aval)
            ty = full_shape(instantiate(ty) if type(ty) is Zero else ty, out_aval)
            x_wins = convert_element_type(pick_x(x, y), out_aval.dtype)
            tie = convert_element_type(eq(x, y), out_aval.dtype)
            wx = add(x_wins, mul(tie, 0.5))
            wy = sub(scalar_like(wx, 1), wx)
            return out, add(mul(tx, wx), mul(ty, wy))

        return jvp

    return rules.per_primitive(build)


def _lexicographic_pick(compare):
    """x where ``compare`` orders it first by (real, imag) pairs, else y: the lowering of
    complex max and min (stablehlo.maximum/minimum do not order complex values so)."""

    def pick(x, y):
        rx, ry = real(x), real(y)
        which = select_n(eq(rx, ry), compare(rx, ry), compare(imag(x), imag(y)))
        return select_n(which, y, x)

    return pick


max_p = rules.define_primitive(
    "max",
    **elementwise_rules(
        real_or_complex(np.maximum, complex_math.maximum),
        lowering_for_complex("stablehlo.maximum", _lexicographic_pick(gt)),
        _ANY,
    ),
    jvp=_minmax_jvp(lambda x, y: lexicographic(gt, gt)(x, y)),
)


def max(x: Any, y: Any) -> Any:
    return max_p.bind(*coerce_scalars(x, y))


min_p = rules.define_primitive(
    "min",
    **elementwise_rules(
        real_or_complex(np.minimum, complex_math.minimum),
        lowering_for_complex("stablehlo.minimum", _lexicographic_pick(lt)),
        _ANY,
    ),
    jvp=_minmax_jvp(lambda x, y: lexicographic(lt, lt)(x, y)),
)


def min(x: Any, y: Any) -> Any:
    return min_p.bind(*coerce_scalars(x, y))


# --------------------------------------------------------------------------------------------
# neg, sign, floor, ceil, round, abs


def _neg_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return neg(x), t if type(t) is Zero else neg(t)


def _neg_transpose(ct, x):
    return [Zero(x.aval) if type(ct) is Zero else neg(ct)]


neg_p = rules.define_primitive(
    "neg",
    **elementwise_rules(np.negative, "stablehlo.negate", _NUM),
    jvp=_neg_jvp,
    transpose=_neg_transpose,
)


def neg(x: Any) -> Any:
    return neg_p.bind(x)


def _real_sign(x):
    # np.sign(-0.0) is +0.0; XLA keeps the zero's sign.
    return np.where(x == 0, x, np.sign(x)).astype(x.dtype)


def _sign_lowering(ctx, x):
    aval = ctx.avals_in[0]
    if aval.dtype.kind != "u":
        return ctx.op("stablehlo.sign", [x], ctx.avals_out[0])
    # stablehlo.sign takes signless integers only: an unsigned sign is x != 0.
    nonzero = ctx.op(
        "stablehlo.compare",
        [x, ctx.full(0, aval)],
        ShapedArray(aval.shape, dtypes.bool_),
        {
            "comparison_direction": "#stablehlo<comparison_direction NE>",
            "compare_type": compare_type(aval.dtype),
        },
    )
    return ctx.op("stablehlo.convert", [nonzero], ctx.avals_out[0])


sign_p = rules.define_primitive(
    "sign",
    **elementwise_rules(real_or_complex(_real_sign, complex_math.sign), _sign_lowering, _NUM),
    jvp=zero_jvp,
)


def sign(x: Any) -> Any:
    return sign_p.bind(x)


floor_p = rules.define_primitive(
    "floor", **elementwise_rules(np.floor, "stablehlo.floor", _REAL_FLOAT), jvp=zero_jvp
)


def floor(x: Any) -> Any:
    return floor_p.bind(x)


ceil_p = rules.define_primitive(
    "ceil", **elementwise_rules(np.ceil, "stablehlo.ceil", _REAL_FLOAT), jvp=zero_jvp
)


def ceil(x: Any) -> Any:
    return ceil_p.bind(x)


# NumPy rounds half to even, as round_nearest_even does.
round_p = rules.define_primitive(
    "round",
    **elementwise_rules(np.round, "stablehlo.round_nearest_even", _REAL_FLOAT),
    jvp=zero_jvp,
)


def round_(x: Any) -> Any:
    return round_p.bind(x)


def _abs_abstract_eval(x: ShapedArray) -> ShapedArray:
    out = nary_abstract_eval("abs", _NUM)(x)
    if x.dtype.kind == "c":  # |complex| is real
        return ShapedArray(x.shape, dtypes.real_dtype(x.dtype))
    return out


def _abs_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = abs_p.bind(x)
    if type(t) is Zero:
        return y, zero_tangent_like(y)
    if get_aval(x).dtype.kind != "c":
        return y, mul(t, select_n(ge(x, scalar_like(x, 0)), scalar_like(x, -1), scalar_like(x, 1)))
    # d|x| = Re(conj(x) dx) / |x|, taken as 0 at x = 0 (as JAX does).
    dot = add(mul(real(x), real(t)), mul(imag(x), imag(t)))
    safe = select_n(eq(y, scalar_like(y, 0)), y, scalar_like(y, 1))
    return y, select_n(eq(y, scalar_like(y, 0)), div(dot, safe), scalar_like(y, 0))


def _abs_lowering(ctx, x):
    if ctx.avals_in[0].dtype.kind == "u":
        return x  # stablehlo.abs takes signless integers only; unsigned values are their own
    return ctx.op("stablehlo.abs", [x], ctx.avals_out[0])


def _complex_abs(z):
    return complex_math.complex_abs(z.real, z.imag)


abs_p = rules.define_primitive(
    "abs",
    sharding=sharding_rules.same_as_operand,
    abstract_eval=_abs_abstract_eval,
    jvp=_abs_jvp,
    batch=rules.per_primitive(elementwise_batch),
    lowering=_abs_lowering,
    reference=numpy_reference(real_or_complex(np.abs, _complex_abs)),
)


def abs(x: Any) -> Any:
    return abs_p.bind(x)


# --------------------------------------------------------------------------------------------
# Complex numbers: parts, conjugate, assembly. Transposes follow JAX's convention (linear maps
# over the complex numbers are transposed without conjugation).


def _complex_part_abstract_eval(primitive):
    def abstract_eval(x: ShapedArray) -> ShapedArray:
        if x.dtype.kind != "c":
            raise errors.EmberTypeError(
                f"{primitive.name} needs a complex operand, got {dtypes.short_name(x.dtype)}"
                f"{errors.where()}"
            )
        return ShapedArray(x.shape, dtypes.real_dtype(x.dtype), x.weak_type)

    return abstract_eval


def _linear_unary_jvp(primitive):
    def jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        y = primitive.bind(x)
        return y, zero_tangent_like(y) if type(t) is Zero else primitive.bind(t)

    return jvp


def _linear_unary_transpose(transpose: Callable[[Any], Any]):
    def rule(ct, x):
        return [Zero(x.aval) if type(ct) is Zero else transpose(ct)]

    return rule


real_p = rules.define_primitive(
    "real",
    sharding=sharding_rules.same_as_operand,
    abstract_eval=rules.per_primitive(_complex_part_abstract_eval),
    jvp=rules.per_primitive(_linear_unary_jvp),
    transpose=_linear_unary_transpose(lambda ct: complex(ct, scalar_like(ct, 0))),
    batch=rules.per_primitive(elementwise_batch),
    lowering=hlo_lowering("stablehlo.real"),
    reference=numpy_reference(np.real),
)


def real(x: Any) -> Any:
    return real_p.bind(x)


imag_p = rules.define_primitive(
    "imag",
    sharding=sharding_rules.same_as_operand,
    abstract_eval=rules.per_primitive(_complex_part_abstract_eval),
    jvp=rules.per_primitive(_linear_unary_jvp),
    transpose=_linear_unary_transpose(lambda ct: complex(scalar_like(ct, 0), neg(ct))),
    batch=rules.per_primitive(elementwise_batch),
    lowering=hlo_lowering("stablehlo.imag"),
    reference=numpy_reference(np.imag),
)


def imag(x: Any) -> Any:
    return imag_p.bind(x)


def _conj_abstract_eval(x: ShapedArray) -> ShapedArray:
    if x.dtype.kind != "c":
        raise errors.EmberTypeError(f"conj needs a complex operand, got {x.str_short()}")
    return x


def _conj_lowering(ctx, x):
    part = ShapedArray(ctx.avals_in[0].shape, dtypes.real_dtype(ctx.avals_in[0].dtype))
    re = ctx.op("stablehlo.real", [x], part)
    im = ctx.op("stablehlo.negate", [ctx.op("stablehlo.imag", [x], part)], part)
    return ctx.op("stablehlo.complex", [re, im], ctx.avals_out[0])


conj_p = rules.define_primitive(
    "conj",
    sharding=sharding_rules.same_as_operand,
    abstract_eval=_conj_abstract_eval,
    jvp=rules.per_primitive(_linear_unary_jvp),
    transpose=_linear_unary_transpose(lambda ct: conj(ct)),
    batch=rules.per_primitive(elementwise_batch),
    lowering=_conj_lowering,
    reference=numpy_reference(np.conj),
)


def conj(x: Any) -> Any:
    return conj_p.bind(x)


def _complex_abstract_eval(x: ShapedArray, y: ShapedArray) -> ShapedArray:
    out = nary_abstract_eval("complex", _FLOAT)(x, y)
    if out.dtype.kind != "f":
        raise errors.EmberTypeError(
            f"complex needs real floating-point parts, got {out.str_short()}{errors.where()}"
        )
    return ShapedArray(out.shape, dtypes.complex_dtype(out.dtype), out.weak_type)


def _complex_jvp(primals, tangents):
    out = complex_p.bind(*primals)
    tx, ty = tangents
    if type(tx) is Zero and type(ty) is Zero:
        return out, zero_tangent_like(out)
    tx = zeros(tx.aval) if type(tx) is Zero else tx
    ty = zeros(ty.aval) if type(ty) is Zero else ty
    return out, complex_p.bind(tx, ty)


def _complex_transpose(ct, x, y):
    if type(ct) is Zero:
        return [Zero(x.aval), Zero(y.aval)]
    return [real(ct), neg(imag(ct))]


complex_p = rules.define_primitive(
    "complex",
    sharding=rules.per_primitive(sharding_rules.elementwise),
    abstract_eval=_complex_abstract_eval,
    jvp=_complex_jvp,
    transpose=_complex_transpose,
    batch=rules.per_primitive(elementwise_batch),
    lowering=hlo_lowering("stablehlo.complex"),
    # x + 1j * y would lose a -0 imaginary part and turn an infinite y into nan + inf j.
    reference=numpy_reference(complex_math.from_parts),
)


def complex(x: Any, y: Any) -> Any:
    return complex_p.bind(*coerce_scalars(x, y))
