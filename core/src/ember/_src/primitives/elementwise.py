"""Elementwise primitives: arithmetic, math functions, comparisons, logic and selection.

At this level operands must share a dtype, and their shapes must be equal, except that a
rank-0 operand broadcasts (so ``x * 2.0`` stays one equation). NumPy-style promotion and
broadcasting happen one level up, in ``ember.numpy``. Each primitive here is made by a small
factory that registers all of its rules at once; derivatives follow each definition.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import (
    Primitive,
    ShapedArray,
    Tracer,
    Zero,
    get_aval,
    register_aval_getter,
    tangent_aval,
)
from ember._src.interpreters.ad import is_undefined
from ember._src.interpreters.ad_util import add_any_p, add_tangents, instantiate, zeros
from ember._src.interpreters.batching import not_mapped
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.lowering.module import lower_jaxpr_inline
from ember._src.primitives.shape import (
    batch_size,
    broadcast_in_dim,
    broadcast_to_shape,
    compare_type,
    convert_element_type,
    move_axis,
    reduce_sum,
)

_FLOAT = "float"  # inexact: floating and complex
_ORDERED = "ordered"  # anything but complex (which has no order): lt, le, gt, ge
_INT = "int"  # integer or bool
_NUM = "number"  # anything numeric, not bool
_REAL = "real"  # numeric and not complex (integers or floating): rem
# floating, not complex (XLA has no complex floor, ceil, round, cbrt or is_finite)
_REAL_FLOAT = "real float"
_ANY = "any"


def _kind_ok(dtype: np.dtype, kinds: str) -> bool:
    if kinds == _ANY:
        return True
    if kinds == _FLOAT:
        return dtypes.is_inexact(dtype)
    if kinds == _INT:
        return dtype.kind in "iub"
    if kinds == _REAL:
        return dtype.kind in "iu" or (dtypes.is_inexact(dtype) and dtype.kind != "c")
    if kinds == _REAL_FLOAT:
        return dtypes.is_inexact(dtype) and dtype.kind != "c"
    if kinds == _ORDERED:
        return dtype.kind != "c"
    return dtype != dtypes.bool_


_KIND_WORDS = {
    _FLOAT: "floating-point or complex",
    _INT: "integer or boolean",
    _NUM: "numeric",
    _REAL: "real (integer or floating-point, not complex)",
    _REAL_FLOAT: "real floating-point",
    _ORDERED: "ordered (not complex)",
}


def _nary_abstract_eval(name: str, kinds: str, result_dtype: np.dtype | None = None):
    def abstract_eval(*avals: ShapedArray) -> ShapedArray:
        dtype = avals[0].dtype
        shape: tuple[int, ...] = ()
        for aval in avals:
            if aval.dtype != dtype:
                raise errors.EmberTypeError(
                    f"{name} requires arguments of one dtype, got "
                    f"{', '.join(dtypes.short_name(a.dtype) for a in avals)}{errors.where()}"
                )
            if aval.shape:
                if shape and aval.shape != shape:
                    raise errors.EmberTypeError(
                        f"{name} got incompatible shapes "
                        f"{', '.join(str(a.shape) for a in avals)}{errors.where()}"
                    )
                shape = aval.shape
        if not _kind_ok(dtype, kinds):
            raise errors.EmberTypeError(
                f"{name} needs {_KIND_WORDS[kinds]} operands, got {dtypes.short_name(dtype)}"
                f"{errors.where()}"
            )
        if result_dtype is not None:
            return ShapedArray(shape, result_dtype)
        return ShapedArray(shape, dtype, all(a.weak_type for a in avals))

    return abstract_eval


def _elementwise_batch(primitive: Primitive):
    def batch(vals, dims, **params):
        logical = [
            get_aval(x).shape if d is not_mapped else _drop(get_aval(x).shape, d)
            for x, d in zip(vals, dims)
        ]
        out_shape = builtins.max(logical, key=len)
        batched_dims = {d for d in dims if d is not not_mapped}
        simple = len(batched_dims) == 1 and all(
            (d is not_mapped and not shape) or (d is not not_mapped and shape == out_shape)
            for d, shape in zip(dims, logical)
        )
        if simple:
            return primitive.bind(*vals, **params), batched_dims.pop()
        size = batch_size(vals, dims)
        full = (size,) + out_shape
        aligned = []
        for x, d, shape in zip(vals, dims, logical):
            if d is not_mapped:
                if shape:
                    x = broadcast_in_dim(x, full, tuple(range(1, len(full))))
            else:
                x = move_axis(x, d, 0)
                if not shape and out_shape:
                    x = broadcast_in_dim(x, full, (0,))
            aligned.append(x)
        return primitive.bind(*aligned, **params), 0

    return batch


def _drop(shape: tuple[int, ...], d: int) -> tuple[int, ...]:
    return shape[:d] + shape[d + 1 :]


def _broadcast_operands(ctx, operands: Sequence[str]) -> list[str]:
    """Lowering: broadcast rank-0 operands to the output shape."""
    out_aval = ctx.avals_out[0]
    if not out_aval.shape:
        return list(operands)
    result = []
    for x, aval in zip(operands, ctx.avals_in):
        if not aval.shape:
            x = ctx.broadcast_in_dim(x, ShapedArray(out_aval.shape, aval.dtype), ())
        result.append(x)
    return result


def _hlo_lowering(hlo_op: str):
    def lowering(ctx, *operands, **params):
        return ctx.op(hlo_op, _broadcast_operands(ctx, operands), ctx.avals_out[0])

    return lowering


def _reference(numpy_fn: Callable[..., Any]):
    def reference(*args, **params):
        return numpy_fn(*args)

    return reference


def make_elementwise(
    name: str,
    numpy_fn: Callable[..., Any],
    hlo_op: str | None,
    kinds: str,
    result_dtype: np.dtype | None = None,
) -> Primitive:
    primitive = Primitive(name)
    rules.def_abstract_eval(primitive)(_nary_abstract_eval(name, kinds, result_dtype))
    rules.def_batch(primitive)(_elementwise_batch(primitive))
    rules.def_reference(primitive)(_reference(numpy_fn))
    if hlo_op is not None:
        rules.def_lowering(primitive)(_hlo_lowering(hlo_op))
    return primitive


def _zero_tangent_like(x: Any) -> Zero:
    return Zero(tangent_aval(get_aval(x)))


def def_unary_jvp(primitive: Primitive, derivative: Callable[[Any, Any], Any]) -> None:
    """JVP of ``y = f(x)``: ``t * derivative(x, y)``."""

    @rules.def_jvp(primitive)
    def jvp(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        y = primitive.bind(x, **params)
        if type(t) is Zero:
            return y, _zero_tangent_like(y)
        return y, mul(t, derivative(x, y))


def def_zero_jvp(primitive: Primitive) -> None:
    """Piecewise-constant functions (comparisons, floor, sign, ...) have zero derivative."""

    @rules.def_jvp(primitive)
    def jvp(primals, tangents, **params):
        y = primitive.bind(*primals, **params)
        return y, _zero_tangent_like(y)


def _unbroadcast(aval: ShapedArray, ct: Any) -> Any:
    """Sum a cotangent down to a rank-0 operand that was broadcast."""
    if type(ct) is Zero:
        return Zero(aval)
    ct_aval = get_aval(ct)
    if ct_aval.shape and not aval.shape:
        return reduce_sum(ct, tuple(range(ct_aval.ndim)))
    return ct


def coerce_scalars(*args: Any) -> list[Any]:
    """Give Python scalars the dtype of the array operands (as weakly typed values)."""
    arrays = [a for a in args if not dtypes.is_python_scalar(a)]
    if len(arrays) == len(args):
        return list(args)
    if arrays:
        aval = get_aval(arrays[0])
        dtype, weak = aval.dtype, True
    else:
        dtype, weak = dtypes.promote([(get_aval(a).dtype, True) for a in args])
    return [_scalar_constant(a, dtype, weak) if dtypes.is_python_scalar(a) else a for a in args]


def _scalar_constant(value: Any, dtype: np.dtype, weak: bool) -> Any:
    array = np.asarray(value, dtype)
    return array.view(WeakScalar) if weak else array[()]


class WeakScalar(np.ndarray):
    """A Python scalar converted to an operand's dtype: a 0-d NumPy array that ember treats as
    weakly typed, so ``x_f16 * 2`` stays float16 through staging and eager dispatch alike."""


register_aval_getter(WeakScalar, lambda x: ShapedArray((), x.dtype, True))


# --------------------------------------------------------------------------------------------
# Arithmetic

add_p = make_elementwise("add", np.add, "stablehlo.add", _ANY)
sub_p = make_elementwise("sub", np.subtract, "stablehlo.subtract", _NUM)
mul_p = make_elementwise("mul", np.multiply, "stablehlo.multiply", _ANY)
div_p = make_elementwise("div", None, "stablehlo.divide", _NUM)
rem_p = make_elementwise("rem", None, "stablehlo.remainder", _REAL)
pow_p = make_elementwise("pow", np.power, "stablehlo.power", _FLOAT)
max_p = make_elementwise("max", np.maximum, None, _ANY)  # lowered below, complex apart
min_p = make_elementwise("min", np.minimum, None, _ANY)
atan2_p = make_elementwise("atan2", np.arctan2, "stablehlo.atan2", _FLOAT)


def add(x: Any, y: Any) -> Any:
    return add_p.bind(*coerce_scalars(x, y))


def sub(x: Any, y: Any) -> Any:
    return sub_p.bind(*coerce_scalars(x, y))


def mul(x: Any, y: Any, *, out_dtype: Any = None) -> Any:
    """``x * y``; with ``out_dtype``, both are cast to it before multiplying (as JAX)."""
    x, y = coerce_scalars(x, y)
    if out_dtype is not None:
        x, y = convert_element_type(x, out_dtype), convert_element_type(y, out_dtype)
    return mul_p.bind(x, y)


def div(x: Any, y: Any) -> Any:
    return div_p.bind(*coerce_scalars(x, y))


def rem(x: Any, y: Any) -> Any:
    return rem_p.bind(*coerce_scalars(x, y))


def pow(x: Any, y: Any) -> Any:
    return pow_p.bind(*coerce_scalars(x, y))


def max(x: Any, y: Any) -> Any:
    return max_p.bind(*coerce_scalars(x, y))


def min(x: Any, y: Any) -> Any:
    return min_p.bind(*coerce_scalars(x, y))


def atan2(x: Any, y: Any) -> Any:
    return atan2_p.bind(*coerce_scalars(x, y))


@rules.def_reference(div_p)
def _div_reference(x, y):
    if x.dtype.kind in "iu":
        # XLA's integer division rounds toward zero (C semantics), not toward -inf.
        with np.errstate(divide="ignore", invalid="ignore"):
            quotient = np.trunc(np.true_divide(x, y))
        return np.where(y == 0, -1, quotient).astype(x.dtype)
    return np.true_divide(x, y)


@rules.def_reference(rem_p)
def _rem_reference(x, y):
    if x.dtype.kind in "iu":
        # XLA: x % 0 is x for integers (NumPy would give 0 and warn).
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(y == 0, x, np.fmod(x, np.where(y == 0, 1, y))).astype(x.dtype)
    return np.fmod(x, y)


@rules.def_jvp(add_p)
def _add_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = add(x, y)
    return out, _broadcast_tangent_sum(out, tx, ty, negate_second=False)


@rules.def_jvp(sub_p)
def _sub_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = sub(x, y)
    return out, _broadcast_tangent_sum(out, tx, ty, negate_second=True)


def _broadcast_tangent_sum(out: Any, tx: Any, ty: Any, negate_second: bool) -> Any:
    out_aval = tangent_aval(get_aval(out))
    if type(ty) is not Zero and negate_second:
        ty = neg(ty)
    tx, ty = (_full_shape(t, out_aval) for t in (tx, ty))
    result = add_tangents(tx, ty)
    return Zero(out_aval) if type(result) is Zero else result


def _full_shape(t: Any, aval: ShapedArray) -> Any:
    if type(t) is Zero:
        return t
    if not get_aval(t).shape and aval.shape:
        return broadcast_in_dim(t, aval.shape, ())
    return t


@rules.def_transpose(add_p)
def _add_transpose(ct, x, y):
    return [
        _unbroadcast(x.aval, ct) if is_undefined(x) else None,
        _unbroadcast(y.aval, ct) if is_undefined(y) else None,
    ]


@rules.def_transpose(sub_p)
def _sub_transpose(ct, x, y):
    return [
        _unbroadcast(x.aval, ct) if is_undefined(x) else None,
        _unbroadcast(y.aval, neg(ct)) if is_undefined(y) else None,
    ]


@rules.def_jvp(mul_p)
def _mul_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = mul(x, y)
    out_aval = tangent_aval(get_aval(out))
    a = Zero(out_aval) if type(tx) is Zero else _full_shape(mul(tx, y), out_aval)
    b = Zero(out_aval) if type(ty) is Zero else _full_shape(mul(x, ty), out_aval)
    return out, add_tangents(a, b)


@rules.def_transpose(mul_p)
def _mul_transpose(ct, x, y):
    if is_undefined(x) and is_undefined(y):
        raise TypeError("internal error: mul transposed with respect to both operands")
    if type(ct) is Zero:
        return [None, None]
    if is_undefined(x):
        return [_unbroadcast(x.aval, mul(ct, y)), None]
    return [None, _unbroadcast(y.aval, mul(x, ct))]


@rules.def_jvp(div_p)
def _div_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = div(x, y)
    out_aval = tangent_aval(get_aval(out))
    a = Zero(out_aval) if type(tx) is Zero else _full_shape(div(tx, y), out_aval)
    b = Zero(out_aval) if type(ty) is Zero else _full_shape(neg(mul(ty, div(out, y))), out_aval)
    return out, add_tangents(a, b)


@rules.def_transpose(div_p)
def _div_transpose(ct, x, y):
    if is_undefined(y):
        raise TypeError("internal error: div is not linear in its denominator")
    if type(ct) is Zero:
        return [None, None]
    return [_unbroadcast(x.aval, div(ct, y)), None]


@rules.def_jvp(rem_p)
def _rem_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = rem(x, y)
    out_aval = tangent_aval(get_aval(out))
    a = Zero(out_aval) if type(tx) is Zero else _full_shape(tx, out_aval)
    trunc = round_(div(sub(x, out), y))
    b = Zero(out_aval) if type(ty) is Zero else _full_shape(neg(mul(ty, trunc)), out_aval)
    return out, add_tangents(a, b)


@rules.def_jvp(pow_p)
def _pow_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = pow(x, y)
    out_aval = tangent_aval(get_aval(out))
    a = Zero(out_aval)
    if type(tx) is not Zero:
        # d/dx x^y = y * x^(y-1); written so that x = 0, y = 0 gives 0 rather than nan.
        safe = select_n(eq(y, _like(y, 0)), mul(y, pow(x, sub(y, _like(y, 1)))), _like(y, 0))
        a = _full_shape(mul(tx, safe), out_aval)
    b = Zero(out_aval)
    if type(ty) is not Zero:
        log_x = log(select_n(eq(x, _like(x, 0)), x, _like(x, 1)))
        b = _full_shape(mul(ty, mul(out, log_x)), out_aval)
    return out, add_tangents(a, b)


def _minmax_jvp(primitive: Primitive, pick_x: Callable[[Any, Any], Any]):
    @rules.def_jvp(primitive)
    def jvp(primals, tangents):
        x, y = primals
        tx, ty = tangents
        out = primitive.bind(x, y)
        out_aval = tangent_aval(get_aval(out))
        if type(tx) is Zero and type(ty) is Zero:
            return out, Zero(out_aval)
        # Ties split the derivative evenly, as JAX does, so grad(max)(x, x) is 0.5 each.
        tx = _full_shape(instantiate(tx) if type(tx) is Zero else tx, out_aval)
        ty = _full_shape(instantiate(ty) if type(ty) is Zero else ty, out_aval)
        x_wins = convert_element_type(pick_x(x, y), out_aval.dtype)
        tie = convert_element_type(eq(x, y), out_aval.dtype)
        wx = add(x_wins, mul(tie, 0.5))
        wy = sub(_like(wx, 1), wx)
        return out, add(mul(tx, wx), mul(ty, wy))


_minmax_jvp(max_p, lambda x, y: lexicographic(gt, gt)(x, y))
_minmax_jvp(min_p, lambda x, y: lexicographic(lt, lt)(x, y))


@rules.def_jvp(atan2_p)
def _atan2_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = atan2(x, y)
    out_aval = tangent_aval(get_aval(out))
    denom = add(mul(x, x), mul(y, y))
    a = Zero(out_aval) if type(tx) is Zero else _full_shape(mul(tx, div(y, denom)), out_aval)
    b = Zero(out_aval) if type(ty) is Zero else _full_shape(mul(ty, neg(div(x, denom))), out_aval)
    return out, add_tangents(a, b)


def _like(x: Any, value: Any) -> Any:
    """A scalar of ``x``'s dtype."""
    return np.asarray(value, get_aval(x).dtype)[()]


# --------------------------------------------------------------------------------------------
# Unary math

neg_p = make_elementwise("neg", np.negative, "stablehlo.negate", _NUM)
sign_p = make_elementwise("sign", np.sign, "stablehlo.sign", _NUM)
floor_p = make_elementwise("floor", np.floor, "stablehlo.floor", _REAL_FLOAT)
ceil_p = make_elementwise("ceil", np.ceil, "stablehlo.ceil", _REAL_FLOAT)
round_p = make_elementwise("round", np.round, "stablehlo.round_nearest_even", _REAL_FLOAT)
abs_p = make_elementwise("abs", np.abs, "stablehlo.abs", _NUM)
exp_p = make_elementwise("exp", np.exp, "stablehlo.exponential", _FLOAT)
log_p = make_elementwise("log", np.log, "stablehlo.log", _FLOAT)
log1p_p = make_elementwise("log1p", np.log1p, "stablehlo.log_plus_one", _FLOAT)
expm1_p = make_elementwise("expm1", np.expm1, "stablehlo.exponential_minus_one", _FLOAT)
sin_p = make_elementwise("sin", np.sin, "stablehlo.sine", _FLOAT)
cos_p = make_elementwise("cos", np.cos, "stablehlo.cosine", _FLOAT)
tan_p = make_elementwise("tan", np.tan, "stablehlo.tan", _FLOAT)
tanh_p = make_elementwise("tanh", np.tanh, "stablehlo.tanh", _FLOAT)
sqrt_p = make_elementwise("sqrt", np.sqrt, "stablehlo.sqrt", _FLOAT)
rsqrt_p = make_elementwise("rsqrt", lambda x: 1 / np.sqrt(x), "stablehlo.rsqrt", _FLOAT)
cbrt_p = make_elementwise("cbrt", np.cbrt, "stablehlo.cbrt", _REAL_FLOAT)
logistic_p = make_elementwise(
    "logistic", lambda x: (1 / (1 + np.exp(-x))).astype(x.dtype), "stablehlo.logistic", _FLOAT
)
asin_p = make_elementwise("asin", np.arcsin, "chlo.asin", _FLOAT)
acos_p = make_elementwise("acos", np.arccos, "chlo.acos", _FLOAT)
atan_p = make_elementwise("atan", np.arctan, "chlo.atan", _FLOAT)
sinh_p = make_elementwise("sinh", np.sinh, "chlo.sinh", _FLOAT)
cosh_p = make_elementwise("cosh", np.cosh, "chlo.cosh", _FLOAT)
asinh_p = make_elementwise("asinh", np.arcsinh, "chlo.asinh", _FLOAT)
acosh_p = make_elementwise("acosh", np.arccosh, "chlo.acosh", _FLOAT)
atanh_p = make_elementwise("atanh", np.arctanh, "chlo.atanh", _FLOAT)
is_finite_p = make_elementwise(
    "is_finite", np.isfinite, "stablehlo.is_finite", _REAL_FLOAT, dtypes.bool_
)


@rules.def_reference(sign_p)
def _sign_reference(x):
    # np.sign(-0.0) is +0.0; XLA keeps the zero's sign.
    return np.where(x == 0, x, np.sign(x)).astype(x.dtype)


@rules.def_lowering(sign_p)
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


@rules.def_lowering(abs_p)
def _abs_lowering(ctx, x):
    if ctx.avals_in[0].dtype.kind == "u":
        return x  # stablehlo.abs takes signless integers only; unsigned values are their own
    return ctx.op("stablehlo.abs", [x], ctx.avals_out[0])


@rules.def_reference(round_p)
def _round_reference(x):
    return np.round(x)  # NumPy rounds half to even, as round_nearest_even does


def neg(x: Any) -> Any:
    return neg_p.bind(x)


def sign(x: Any) -> Any:
    return sign_p.bind(x)


def floor(x: Any) -> Any:
    return floor_p.bind(x)


def ceil(x: Any) -> Any:
    return ceil_p.bind(x)


def round_(x: Any) -> Any:
    return round_p.bind(x)


def abs(x: Any) -> Any:
    return abs_p.bind(x)


def _default_accuracy_only(name: str, accuracy: Any) -> None:
    """Only the compiler's default implementation exists here, so a requested accuracy
    (a tolerance or mode, as JAX accepts) cannot be honoured."""
    if accuracy is not None:
        raise NotImplementedError(
            f"lax.{name}: accuracy={accuracy!r} is not supported; only accuracy=None "
            f"(the default implementation){errors.where()}"
        )


def exp(x: Any, *, accuracy: Any = None) -> Any:
    _default_accuracy_only("exp", accuracy)
    return exp_p.bind(x)


def log(x: Any, *, accuracy: Any = None) -> Any:
    _default_accuracy_only("log", accuracy)
    return log_p.bind(x)


def log1p(x: Any, *, accuracy: Any = None) -> Any:
    _default_accuracy_only("log1p", accuracy)
    return log1p_p.bind(x)


def expm1(x: Any, *, accuracy: Any = None) -> Any:
    _default_accuracy_only("expm1", accuracy)
    return expm1_p.bind(x)


def sin(x: Any, *, accuracy: Any = None) -> Any:
    _default_accuracy_only("sin", accuracy)
    return sin_p.bind(x)


def cos(x: Any, *, accuracy: Any = None) -> Any:
    _default_accuracy_only("cos", accuracy)
    return cos_p.bind(x)


def tan(x: Any, *, accuracy: Any = None) -> Any:
    _default_accuracy_only("tan", accuracy)
    return tan_p.bind(x)


def tanh(x: Any, *, accuracy: Any = None) -> Any:
    _default_accuracy_only("tanh", accuracy)
    return tanh_p.bind(x)


def sqrt(x: Any, *, accuracy: Any = None) -> Any:
    _default_accuracy_only("sqrt", accuracy)
    return sqrt_p.bind(x)


def rsqrt(x: Any, *, accuracy: Any = None) -> Any:
    _default_accuracy_only("rsqrt", accuracy)
    return rsqrt_p.bind(x)


def cbrt(x: Any, *, accuracy: Any = None) -> Any:
    _default_accuracy_only("cbrt", accuracy)
    return cbrt_p.bind(x)


def logistic(x: Any, *, accuracy: Any = None) -> Any:
    _default_accuracy_only("logistic", accuracy)
    return logistic_p.bind(x)


def asin(x: Any) -> Any:
    return asin_p.bind(x)


def acos(x: Any) -> Any:
    return acos_p.bind(x)


def atan(x: Any) -> Any:
    return atan_p.bind(x)


def sinh(x: Any) -> Any:
    return sinh_p.bind(x)


def cosh(x: Any) -> Any:
    return cosh_p.bind(x)


def asinh(x: Any) -> Any:
    return asinh_p.bind(x)


def acosh(x: Any) -> Any:
    return acosh_p.bind(x)


def atanh(x: Any) -> Any:
    return atanh_p.bind(x)


def is_finite(x: Any) -> Any:
    return is_finite_p.bind(x)


@rules.def_jvp(neg_p)
def _neg_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return neg(x), t if type(t) is Zero else neg(t)


@rules.def_transpose(neg_p)
def _neg_transpose(ct, x):
    return [Zero(x.aval) if type(ct) is Zero else neg(ct)]


for _primitive in (sign_p, floor_p, ceil_p, round_p, is_finite_p):
    def_zero_jvp(_primitive)


@rules.def_jvp(abs_p)
def _abs_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = abs_p.bind(x)
    if type(t) is Zero:
        return y, _zero_tangent_like(y)
    if get_aval(x).dtype.kind != "c":
        return y, mul(t, select_n(ge(x, _like(x, 0)), _like(x, -1), _like(x, 1)))
    # d|x| = Re(conj(x) dx) / |x|, taken as 0 at x = 0 (as JAX does).
    dot = add(mul(real(x), real(t)), mul(imag(x), imag(t)))
    safe = select_n(eq(y, _like(y, 0)), y, _like(y, 1))
    return y, select_n(eq(y, _like(y, 0)), div(dot, safe), _like(y, 0))


# Replaces the generic elementwise rule: |complex| is real.
@rules.def_abstract_eval(abs_p)
def _abs_abstract_eval(x: ShapedArray) -> ShapedArray:
    out = _nary_abstract_eval("abs", _NUM)(x)
    if x.dtype.kind == "c":
        return ShapedArray(x.shape, dtypes.real_dtype(x.dtype))
    return out


# --------------------------------------------------------------------------------------------
# Complex numbers: parts, conjugate, assembly. Transposes follow JAX's convention (linear maps
# over the complex numbers are transposed without conjugation).

real_p = Primitive("real")
imag_p = Primitive("imag")
conj_p = Primitive("conj")
complex_p = Primitive("complex")


def real(x: Any) -> Any:
    return real_p.bind(x)


def imag(x: Any) -> Any:
    return imag_p.bind(x)


def conj(x: Any) -> Any:
    return conj_p.bind(x)


def complex(x: Any, y: Any) -> Any:
    return complex_p.bind(*coerce_scalars(x, y))


def _complex_part(name: str):
    def abstract_eval(x: ShapedArray) -> ShapedArray:
        if x.dtype.kind != "c":
            raise errors.EmberTypeError(
                f"{name} needs a complex operand, got {dtypes.short_name(x.dtype)}{errors.where()}"
            )
        return ShapedArray(x.shape, dtypes.real_dtype(x.dtype), x.weak_type)

    return abstract_eval


rules.def_abstract_eval(real_p)(_complex_part("real"))
rules.def_abstract_eval(imag_p)(_complex_part("imag"))


@rules.def_abstract_eval(conj_p)
def _conj_abstract_eval(x: ShapedArray) -> ShapedArray:
    if x.dtype.kind != "c":
        raise errors.EmberTypeError(f"conj needs a complex operand, got {x.str_short()}")
    return x


@rules.def_abstract_eval(complex_p)
def _complex_abstract_eval(x: ShapedArray, y: ShapedArray) -> ShapedArray:
    out = _nary_abstract_eval("complex", _FLOAT)(x, y)
    if out.dtype.kind != "f":
        raise errors.EmberTypeError(
            f"complex needs real floating-point parts, got {out.str_short()}{errors.where()}"
        )
    return ShapedArray(out.shape, dtypes.complex_dtype(out.dtype), out.weak_type)


for _primitive, _numpy, _hlo in (
    (real_p, np.real, "stablehlo.real"),
    (imag_p, np.imag, "stablehlo.imag"),
    (conj_p, np.conj, None),
    (complex_p, lambda x, y: x + 1j * y, "stablehlo.complex"),
):
    rules.def_batch(_primitive)(_elementwise_batch(_primitive))
    rules.def_reference(_primitive)(_reference(_numpy))
    if _hlo is not None:
        rules.def_lowering(_primitive)(_hlo_lowering(_hlo))


@rules.def_lowering(conj_p)
def _conj_lowering(ctx, x):
    part = ShapedArray(ctx.avals_in[0].shape, dtypes.real_dtype(ctx.avals_in[0].dtype))
    re = ctx.op("stablehlo.real", [x], part)
    im = ctx.op("stablehlo.negate", [ctx.op("stablehlo.imag", [x], part)], part)
    return ctx.op("stablehlo.complex", [re, im], ctx.avals_out[0])


def _linear_unary(primitive: Primitive, transpose) -> None:
    @rules.def_jvp(primitive)
    def jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        y = primitive.bind(x)
        return y, _zero_tangent_like(y) if type(t) is Zero else primitive.bind(t)

    @rules.def_transpose(primitive)
    def _transpose(ct, x):
        return [Zero(x.aval) if type(ct) is Zero else transpose(ct)]


_linear_unary(real_p, lambda ct: complex(ct, _like(ct, 0)))
_linear_unary(imag_p, lambda ct: complex(_like(ct, 0), neg(ct)))
_linear_unary(conj_p, conj)


@rules.def_jvp(complex_p)
def _complex_jvp(primals, tangents):
    out = complex_p.bind(*primals)
    tx, ty = tangents
    if type(tx) is Zero and type(ty) is Zero:
        return out, _zero_tangent_like(out)
    tx = zeros(tx.aval) if type(tx) is Zero else tx
    ty = zeros(ty.aval) if type(ty) is Zero else ty
    return out, complex_p.bind(tx, ty)


@rules.def_transpose(complex_p)
def _complex_transpose(ct, x, y):
    if type(ct) is Zero:
        return [Zero(x.aval), Zero(y.aval)]
    return [real(ct), neg(imag(ct))]


def_unary_jvp(exp_p, lambda x, y: y)
def_unary_jvp(log_p, lambda x, y: div(_like(x, 1), x))
def_unary_jvp(log1p_p, lambda x, y: div(_like(x, 1), add(x, _like(x, 1))))
def_unary_jvp(expm1_p, lambda x, y: add(y, _like(y, 1)))
def_unary_jvp(sin_p, lambda x, y: cos(x))
def_unary_jvp(cos_p, lambda x, y: neg(sin(x)))
def_unary_jvp(tan_p, lambda x, y: add(_like(y, 1), mul(y, y)))
def_unary_jvp(tanh_p, lambda x, y: sub(_like(y, 1), mul(y, y)))
def_unary_jvp(sqrt_p, lambda x, y: div(_like(y, 0.5), y))
def_unary_jvp(rsqrt_p, lambda x, y: mul(_like(y, -0.5), div(y, x)))
def_unary_jvp(cbrt_p, lambda x, y: div(_like(y, 1 / 3), mul(y, y)))
def_unary_jvp(logistic_p, lambda x, y: mul(y, sub(_like(y, 1), y)))
def_unary_jvp(asin_p, lambda x, y: rsqrt(sub(_like(x, 1), mul(x, x))))
def_unary_jvp(acos_p, lambda x, y: neg(rsqrt(sub(_like(x, 1), mul(x, x)))))
def_unary_jvp(atan_p, lambda x, y: div(_like(x, 1), add(_like(x, 1), mul(x, x))))
def_unary_jvp(sinh_p, lambda x, y: cosh(x))
def_unary_jvp(cosh_p, lambda x, y: sinh(x))
def_unary_jvp(asinh_p, lambda x, y: rsqrt(add(mul(x, x), _like(x, 1))))
def_unary_jvp(acosh_p, lambda x, y: rsqrt(mul(sub(x, _like(x, 1)), add(x, _like(x, 1)))))
def_unary_jvp(atanh_p, lambda x, y: div(_like(x, 1), sub(_like(x, 1), mul(x, x))))


def _lower_via(expression: Callable[..., Any]):
    """Lower a primitive by lowering the jaxpr of an expression of other primitives."""

    def lowering(ctx, *operands, **params):
        closed = trace_to_jaxpr(lambda *xs: [expression(*xs)], ctx.avals_in)
        consts = [ctx.constant(c, get_aval(c)) for c in closed.consts]
        return lower_jaxpr_inline(ctx, closed.jaxpr, consts, operands)[0]

    return lowering


# --------------------------------------------------------------------------------------------
# square: x * x (chlo.square for inexact types, whose complex form keeps (a - b)(a + b) exact
# where a * a - b * b would round or overflow)

square_p = make_elementwise("square", lambda x: x * x, None, _NUM)
def_unary_jvp(square_p, lambda x, y: mul(_like(x, 2), x))


def square(x: Any) -> Any:
    return square_p.bind(x)


@rules.def_lowering(square_p)
def _square_lowering(ctx, x):
    op = "stablehlo.multiply" if ctx.avals_in[0].dtype.kind in "iu" else "chlo.square"
    return ctx.op(op, [x, x] if op == "stablehlo.multiply" else [x], ctx.avals_out[0])


def lexicographic(strict: Callable[[Any, Any], Any], last: Callable[[Any, Any], Any]):
    """A comparison that orders complex numbers as NumPy does: by real part (``strict``),
    then by imaginary part (``last``) where the real parts are equal. Real operands: ``last``."""

    def compare(x: Any, y: Any) -> Any:
        if get_aval(x).dtype.kind != "c":
            return last(x, y)
        rx, ry = real(x), real(y)
        return bitwise_or(strict(rx, ry), bitwise_and(eq(rx, ry), last(imag(x), imag(y))))

    return compare


def _minmax_lowering(hlo_op: str, first_wins: Callable[[Any, Any], Any]):
    """max/min: XLA's own op for real types; for complex ones the lexicographic order NumPy
    and JAX use (by real part, then imaginary part), which XLA's CPU op does not follow."""
    real_lowering = _hlo_lowering(hlo_op)

    def pick(x, y):
        shape = np.broadcast_shapes(get_aval(x).shape, get_aval(y).shape)
        x, y = broadcast_to_shape(x, shape), broadcast_to_shape(y, shape)
        return select_n(lexicographic(first_wins, first_wins)(x, y), y, x)

    complex_lowering = _lower_via(pick)

    def lowering(ctx, *operands, **params):
        if ctx.avals_out[0].dtype.kind == "c":
            return complex_lowering(ctx, *operands, **params)
        return real_lowering(ctx, *operands, **params)

    return lowering


rules.def_lowering(max_p)(_minmax_lowering("stablehlo.maximum", lambda a, b: gt(a, b)))
rules.def_lowering(min_p)(_minmax_lowering("stablehlo.minimum", lambda a, b: lt(a, b)))


# --------------------------------------------------------------------------------------------
# integer_pow: x ** n for a static integer n (lowered to repeated multiplication)

integer_pow_p = Primitive("integer_pow")
rules.def_abstract_eval(integer_pow_p)(lambda x, *, y: _nary_abstract_eval("integer_pow", _NUM)(x))
rules.def_batch(integer_pow_p)(_elementwise_batch(integer_pow_p))


def integer_pow(x: Any, y: int) -> Any:
    return integer_pow_p.bind(x, y=int(y))


@rules.def_reference(integer_pow_p)
def _integer_pow_reference(x, *, y):
    return np.power(x, x.dtype.type(y)) if y >= 0 else (1 / np.power(x, -y)).astype(x.dtype)


@rules.def_jvp(integer_pow_p)
def _integer_pow_jvp(primals, tangents, *, y):
    (x,), (t,) = primals, tangents
    out = integer_pow(x, y)
    if type(t) is Zero:
        return out, _zero_tangent_like(out)
    if y == 0:
        return out, Zero(tangent_aval(get_aval(out)))
    if y == 1:
        return out, t
    power = x if y == 2 else integer_pow(x, y - 1)
    return out, mul(t, mul(_like(x, y), power))


@rules.def_lowering(integer_pow_p)
def _integer_pow_lowering(ctx, x, *, y):
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


# --------------------------------------------------------------------------------------------
# Comparisons and logic

_DIRECTIONS = {"eq": "EQ", "ne": "NE", "lt": "LT", "le": "LE", "gt": "GT", "ge": "GE"}


def _make_comparison(name: str, numpy_fn: Callable[..., Any]) -> Primitive:
    # XLA orders complex numbers in no documented way (and NumPy's order is lexicographic),
    # so, as in JAX, only eq and ne accept them; ember.numpy orders them itself.
    kinds = _ANY if name in ("eq", "ne") else _ORDERED
    primitive = make_elementwise(name, numpy_fn, None, kinds, dtypes.bool_)
    direction = _DIRECTIONS[name]

    @rules.def_lowering(primitive)
    def lowering(ctx, x, y):
        x, y = _broadcast_operands(ctx, [x, y])
        return ctx.op(
            "stablehlo.compare",
            [x, y],
            ctx.avals_out[0],
            {
                "comparison_direction": f"#stablehlo<comparison_direction {direction}>",
                "compare_type": compare_type(ctx.avals_in[0].dtype),
            },
        )

    def_zero_jvp(primitive)
    return primitive


eq_p = _make_comparison("eq", np.equal)
ne_p = _make_comparison("ne", np.not_equal)
lt_p = _make_comparison("lt", np.less)
le_p = _make_comparison("le", np.less_equal)
gt_p = _make_comparison("gt", np.greater)
ge_p = _make_comparison("ge", np.greater_equal)


def eq(x: Any, y: Any) -> Any:
    return eq_p.bind(*coerce_scalars(x, y))


def ne(x: Any, y: Any) -> Any:
    return ne_p.bind(*coerce_scalars(x, y))


def lt(x: Any, y: Any) -> Any:
    return lt_p.bind(*coerce_scalars(x, y))


def le(x: Any, y: Any) -> Any:
    return le_p.bind(*coerce_scalars(x, y))


def gt(x: Any, y: Any) -> Any:
    return gt_p.bind(*coerce_scalars(x, y))


def ge(x: Any, y: Any) -> Any:
    return ge_p.bind(*coerce_scalars(x, y))


and_p = make_elementwise("and", np.bitwise_and, "stablehlo.and", _INT)
or_p = make_elementwise("or", np.bitwise_or, "stablehlo.or", _INT)
xor_p = make_elementwise("xor", np.bitwise_xor, "stablehlo.xor", _INT)
not_p = make_elementwise("not", np.invert, "stablehlo.not", _INT)
for _primitive in (and_p, or_p, xor_p, not_p):
    def_zero_jvp(_primitive)


def bitwise_and(x: Any, y: Any) -> Any:
    return and_p.bind(*coerce_scalars(x, y))


def bitwise_or(x: Any, y: Any) -> Any:
    return or_p.bind(*coerce_scalars(x, y))


def bitwise_xor(x: Any, y: Any) -> Any:
    return xor_p.bind(*coerce_scalars(x, y))


def bitwise_not(x: Any) -> Any:
    return not_p.bind(x)


# --------------------------------------------------------------------------------------------
# select_n: cases[which], elementwise

select_n_p = Primitive("select_n")


def select_n(which: Any, *cases: Any) -> Any:
    """Pick ``cases[which]`` elementwise; ``which`` is bool (two cases) or int32."""
    if len(cases) == 1:
        return cases[0]
    cases = coerce_scalars(*cases)
    return select_n_p.bind(which, *cases)


@rules.def_abstract_eval(select_n_p)
def _select_n_abstract_eval(which, *cases):
    if which.dtype != dtypes.bool_ and which.dtype.kind not in "iu":
        raise errors.EmberTypeError(
            f"select_n: the selector must be bool or integer, got {which.dtype}{errors.where()}"
        )
    if which.dtype == dtypes.bool_ and len(cases) > 2:
        raise errors.EmberTypeError(
            f"select_n: a bool selector picks between 2 cases, got {len(cases)}{errors.where()}"
        )
    out = _nary_abstract_eval("select_n", _ANY)(*cases)
    if which.shape and out.shape and which.shape != out.shape:
        raise errors.EmberTypeError(
            f"select_n: selector shape {which.shape} differs from case shape {out.shape}"
            f"{errors.where()}"
        )
    shape = out.shape or which.shape
    return ShapedArray(shape, out.dtype, out.weak_type)


rules.def_batch(select_n_p)(_elementwise_batch(select_n_p))


@rules.def_jvp(select_n_p)
def _select_n_jvp(primals, tangents):
    which, *cases = primals
    _, *case_tangents = tangents
    out = select_n_p.bind(which, *cases)
    out_aval = tangent_aval(get_aval(out))
    if all(type(t) is Zero for t in case_tangents):
        return out, Zero(out_aval)
    filled = [
        _full_shape(instantiate(t) if type(t) is Zero else t, out_aval) for t in case_tangents
    ]
    return out, select_n_p.bind(which, *filled)


@rules.def_transpose(select_n_p)
def _select_n_transpose(ct, which, *cases):
    if is_undefined(which):
        raise TypeError("internal error: select_n is not linear in its selector")
    result: list[Any] = [None]
    if type(ct) is Zero:
        return result + [Zero(c.aval) if is_undefined(c) else None for c in cases]
    zero = instantiate(Zero(get_aval(ct)))
    for i, case in enumerate(cases):
        if not is_undefined(case):
            result.append(None)
            continue
        picks = [zero] * len(cases)
        picks[i] = ct
        result.append(_unbroadcast(case.aval, select_n_p.bind(which, *picks)))
    return result


@rules.def_lowering(select_n_p)
def _select_n_lowering(ctx, which, *cases):
    out_aval = ctx.avals_out[0]
    which_aval = ctx.avals_in[0]
    cases = _broadcast_operands_from(ctx, cases, ctx.avals_in[1:])
    pred_aval = ShapedArray(out_aval.shape, dtypes.bool_)
    if which_aval.shape != out_aval.shape:
        which = ctx.broadcast_in_dim(which, ShapedArray(out_aval.shape, which_aval.dtype), ())
    if which_aval.dtype == dtypes.bool_:
        return ctx.op("stablehlo.select", [which, cases[1], cases[0]], out_aval)
    result = cases[0]
    index_aval = ShapedArray(out_aval.shape, which_aval.dtype)
    for i in range(1, len(cases)):
        threshold = ctx.full(i, index_aval)
        pred = ctx.op(
            "stablehlo.compare",
            [which, threshold],
            pred_aval,
            {
                "comparison_direction": "#stablehlo<comparison_direction GE>",
                "compare_type": compare_type(which_aval.dtype),
            },
        )
        result = ctx.op("stablehlo.select", [pred, cases[i], result], out_aval)
    return result


def _broadcast_operands_from(ctx, operands, avals) -> list[str]:
    out_aval = ctx.avals_out[0]
    result = []
    for x, aval in zip(operands, avals):
        if not aval.shape and out_aval.shape:
            x = ctx.broadcast_in_dim(x, ShapedArray(out_aval.shape, aval.dtype), ())
        result.append(x)
    return result


@rules.def_reference(select_n_p)
def _select_n_reference(which, *cases):
    index = np.asarray(which, np.int64)
    return np.choose(index, np.broadcast_arrays(*cases)).astype(cases[0].dtype)


@rules.def_batch(add_any_p)
def _add_any_batch(vals, dims):
    """Both cotangents carried to the batched one's layout.

    Unlike the other elementwise primitives, add_any takes two values of exactly one type (it
    sums cotangents of one variable), so a rank-0 unbatched operand is not left to broadcast:
    it is broadcast explicitly, else the sum of a batched and an unbatched scalar cotangent
    (as ``vmap(grad(f))`` makes) would be rejected.
    """
    (x, y), (dx, dy) = vals, dims
    if dx == dy:
        return add_any_p.bind(x, y), dx
    if dx is not_mapped or dy is not_mapped:
        d = dy if dx is not_mapped else dx
        batched, other = (y, x) if dx is not_mapped else (x, y)
        shape = get_aval(batched).shape
        other = broadcast_in_dim(other, shape, tuple(i for i in range(len(shape)) if i != d))
        return add_any_p.bind(batched, other), d
    return add_any_p.bind(x, move_axis(y, dy, dx)), dx


def is_tracer(x: Any) -> bool:
    return isinstance(x, Tracer)


# --------------------------------------------------------------------------------------------
# stop_gradient: the identity, with a zero derivative

stop_gradient_p = Primitive("stop_gradient")
rules.def_abstract_eval(stop_gradient_p)(lambda x: x)
rules.def_batch(stop_gradient_p)(lambda vals, dims: (stop_gradient_p.bind(vals[0]), dims[0]))
rules.def_reference(stop_gradient_p)(lambda x: x)
rules.def_lowering(stop_gradient_p)(lambda ctx, x: x)
def_zero_jvp(stop_gradient_p)


def stop_gradient(x: Any) -> Any:
    """``x`` itself, but treated as a constant by differentiation."""
    return stop_gradient_p.bind(x)
