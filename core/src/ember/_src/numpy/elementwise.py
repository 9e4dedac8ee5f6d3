"""ember.numpy's elementwise functions: NumPy promotion and broadcasting over lax primitives."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import ShapedArray, Tracer, get_aval
from ember._src.lax.log_add_exp import log_add_exp
from ember._src.numpy.operands import (
    as_operand,
    broadcast_args,
    cast,
    prepare,
    prepare_inexact,
    promote_dtypes,
)
from ember._src.primitives import (
    arithmetic,
    bits as bitwise,
    comparisons,
    math_functions,
    selection,
)
from ember._src.primitives.shape import broadcast_in_dim
from ember._src.transforms.jit import jit


def _unary_inexact(lax_fn):
    def fn(x: Any, /) -> Any:
        (x,) = prepare_inexact(lax_fn.__name__, x)
        return lax_fn(x)

    return fn


def _unary_numeric(lax_fn):
    def fn(x: Any, /) -> Any:
        (x,) = promote_dtypes(x)
        return lax_fn(x)

    return fn


def _ufunc_misuse(name: str, nin: int, args: tuple, out: Any, where: Any) -> Exception:
    """The error for a ufunc-style call ember cannot serve: a wrong operand count, or
    ``out=``/``where=`` (JAX's ufuncs accept both only as None)."""
    if out is not None:
        return NotImplementedError(
            f"The 'out' argument to jnp.{name} is not supported.{errors.where()}"
        )
    if where is not None:
        return NotImplementedError(
            f"The 'where' argument to jnp.{name} is not supported.{errors.where()}"
        )
    return TypeError(f"{name}() takes {nin} positional arguments, got {len(args)}{errors.where()}")


def as_ufunc(fn, name: str, nin: int):
    """``fn`` called as JAX calls its ufuncs: ``(*args, out=None, where=None)``."""

    def ufunc(*args: Any, out: None = None, where: None = None) -> Any:
        if len(args) != nin or out is not None or where is not None:
            raise _ufunc_misuse(name, nin, args, out, where)
        return fn(*args)

    ufunc.__name__ = ufunc.__qualname__ = name
    ufunc.__doc__ = fn.__doc__
    ufunc.__wrapped__ = fn  # what enp's ufunc objects call, having checked the arguments
    return ufunc


def _binary(lax_fn, name: str, prepare_operands=prepare, ufunc: bool = False):
    def composite(x: Any, y: Any) -> Any:
        x, y = prepare_operands(name, x, y)
        return lax_fn(x, y)

    composite.__name__ = name
    compiled = jit(composite, inline=True)
    exact_ok = prepare_operands is not prepare_inexact

    def fn(x: Any, y: Any, /) -> Any:
        # Operands of one abstract value go straight to the primitive. Called eagerly on a mix
        # of shapes, dtypes or Python scalars, the promotion, broadcast and op run as one
        # compiled program instead of three dispatches.
        first = getattr(x, "aval", None)
        if (
            type(first) is ShapedArray
            and getattr(y, "aval", None) == first
            and (exact_ok or dtypes.is_inexact(first.dtype))  # else integers need converting
        ):
            return lax_fn(x, y)
        if isinstance(x, Tracer) or isinstance(y, Tracer):
            return composite(x, y)
        return compiled(x, y)

    def ufunc_fn(*args: Any, out: None = None, where: None = None) -> Any:
        if len(args) != 2 or out is not None or where is not None:
            raise _ufunc_misuse(name, 2, args, out, where)
        return fn(*args)

    fn.__name__ = fn.__qualname__ = name
    if not ufunc:
        return fn
    ufunc_fn.__name__ = ufunc_fn.__qualname__ = name
    ufunc_fn.__wrapped__ = fn  # what enp's ufunc objects call, having checked the arguments
    return ufunc_fn


def _binary_inexact(lax_fn, name: str):
    return _binary(lax_fn, name, prepare_inexact)


add = _binary(arithmetic.add, "add", ufunc=True)
subtract = _binary(arithmetic.sub, "subtract", ufunc=True)
multiply = _binary(arithmetic.mul, "multiply", ufunc=True)
maximum = _binary(arithmetic.max, "maximum", ufunc=True)
minimum = _binary(arithmetic.min, "minimum", ufunc=True)
arctan2 = _binary_inexact(math_functions.atan2, "arctan2")
equal = _binary(comparisons.eq, "equal")
not_equal = _binary(comparisons.ne, "not_equal")
# Complex numbers are ordered lexicographically, as in NumPy (lax refuses to order them).
less = _binary(arithmetic.lexicographic(comparisons.lt, comparisons.lt), "less")
less_equal = _binary(arithmetic.lexicographic(comparisons.lt, comparisons.le), "less_equal")
greater = _binary(arithmetic.lexicographic(comparisons.gt, comparisons.gt), "greater")
greater_equal = _binary(arithmetic.lexicographic(comparisons.gt, comparisons.ge), "greater_equal")

exp = _unary_inexact(math_functions.exp)
log = _unary_inexact(math_functions.log)
log1p = _unary_inexact(math_functions.log1p)
expm1 = _unary_inexact(math_functions.expm1)
sin = _unary_inexact(math_functions.sin)
cos = _unary_inexact(math_functions.cos)
tan = _unary_inexact(math_functions.tan)
tanh = _unary_inexact(math_functions.tanh)
sinh = _unary_inexact(math_functions.sinh)
cosh = _unary_inexact(math_functions.cosh)
arcsin = _unary_inexact(math_functions.asin)
arccos = _unary_inexact(math_functions.acos)
arctan = _unary_inexact(math_functions.atan)
arcsinh = _unary_inexact(math_functions.asinh)
arccosh = _unary_inexact(math_functions.acosh)
arctanh = _unary_inexact(math_functions.atanh)
sqrt = _unary_inexact(math_functions.sqrt)
cbrt = _unary_inexact(math_functions.cbrt)
negative = as_ufunc(_unary_numeric(arithmetic.neg), "negative", 1)


def sign(x: Any, /) -> Any:
    (x,) = promote_dtypes(x)
    result = arithmetic.sign(x)
    dtype = get_aval(x).dtype
    if not dtypes.is_inexact(dtype):
        return result
    # XLA's sign keeps the sign of a zero (sign(-0.0) is -0.0, as JAX); NumPy and the array API
    # give +0 for both zeros.
    return selection.select_n(comparisons.eq(x, np.zeros((), dtype)), result, np.zeros((), dtype))


def _bitwise(lax_fn, name: str):
    def fn(x: Any, y: Any, /) -> Any:
        x, y = prepare(name, x, y)
        dtype = get_aval(x).dtype
        if dtype.kind not in "iub":
            raise TypeError(
                f"{name} is only defined for integer and boolean arrays, got "
                f"{dtypes.short_name(dtype)}{errors.where()}"
            )
        return lax_fn(x, y)

    fn.__name__ = name
    return fn


bitwise_and = as_ufunc(_bitwise(bitwise.bitwise_and, "bitwise_and"), "bitwise_and", 2)
bitwise_or = as_ufunc(_bitwise(bitwise.bitwise_or, "bitwise_or"), "bitwise_or", 2)
bitwise_xor = as_ufunc(_bitwise(bitwise.bitwise_xor, "bitwise_xor"), "bitwise_xor", 2)


def bitwise_not(x: Any, /) -> Any:
    (x,) = promote_dtypes(x)
    dtype = get_aval(x).dtype
    if dtype.kind not in "iub":
        raise TypeError(
            f"bitwise_not is only defined for integer and boolean arrays, got "
            f"{dtypes.short_name(dtype)}{errors.where()}"
        )
    return bitwise.bitwise_not(x)


invert = bitwise_not


def _logical(lax_fn, name: str):
    def fn(x: Any, y: Any, /) -> Any:
        x, y = broadcast_args(
            name, cast(as_operand(x), dtypes.bool_), cast(as_operand(y), dtypes.bool_)
        )
        return lax_fn(x, y)

    fn.__name__ = name
    return fn


logical_and = as_ufunc(_logical(bitwise.bitwise_and, "logical_and"), "logical_and", 2)
logical_or = as_ufunc(_logical(bitwise.bitwise_or, "logical_or"), "logical_or", 2)
logical_xor = as_ufunc(_logical(bitwise.bitwise_xor, "logical_xor"), "logical_xor", 2)


def logical_not(x: Any, /) -> Any:
    return bitwise.bitwise_not(cast(as_operand(x), dtypes.bool_))


def true_divide(x1: Any, x2: Any, /) -> Any:
    x, y = prepare_inexact("true_divide", x1, x2)
    return arithmetic.div(x, y)


divide = true_divide


def _prepare_numeric(name: str, *args: Any) -> list[Any]:
    """Promoted and broadcast operands, booleans made int32 (as JAX's arithmetic does)."""
    args = prepare(name, *args)
    if get_aval(args[0]).dtype != dtypes.bool_:
        return args
    return [cast(a, dtypes.int32) for a in args]


def floor_divide(x1: Any, x2: Any, /) -> Any:
    x, y = _prepare_numeric("floor_divide", x1, x2)
    dtype = get_aval(x).dtype
    if dtype.kind in "iu":
        # div truncates toward zero; NumPy floors. Step down where the signs differ and the
        # division was inexact (as JAX, which makes x // 0 one less than div's answer for
        # x != 0).
        quotient = arithmetic.div(x, y)
        if dtype.kind == "u":
            return quotient
        inexact = comparisons.ne(arithmetic.rem(x, y), np.zeros((), dtype))
        adjust = bitwise.bitwise_and(
            inexact, comparisons.ne(arithmetic.sign(x), arithmetic.sign(y))
        )
        return selection.select_n(adjust, quotient, arithmetic.sub(quotient, np.ones((), dtype)))
    if dtype.kind == "c":
        raise errors.EmberTypeError(
            f"floor_divide does not support complex-valued inputs{errors.where()}"
        )
    return _float_floor_divide(x, y)


def _float_floor_divide(x: Any, y: Any) -> Any:
    """(x - x mod y) / y, stepped down where the truncated remainder's sign differs from y's
    (CPython's float_divmod, as JAX): unlike floor(x / y) it gives -5 // inf = -1,
    inf // 3 = nan and +0 for -0 // 3."""
    dtype = get_aval(x).dtype
    zero, one = np.zeros((), dtype), np.ones((), dtype)
    mod = arithmetic.rem(x, y)
    corrected = selection.select_n(comparisons.eq(y, zero), arithmetic.sub(x, mod), x)
    quotient = arithmetic.div(corrected, y)
    step = bitwise.bitwise_and(
        comparisons.ne(mod, zero), comparisons.ne(arithmetic.sign(y), arithmetic.sign(mod))
    )
    quotient = selection.select_n(step, quotient, arithmetic.sub(quotient, one))
    quotient = arithmetic.round_(quotient)  # integral up to the division's rounding
    # A zero quotient takes the sign of x / y (NumPy's npy_floor_divide and the array API:
    # -0 // 3 is -0 and -0 // -3 is +0), where the subtraction above always left +0.
    return selection.select_n(comparisons.eq(quotient, zero), quotient, _zero_signed_as_ratio(x, y))


def _zero_signed_as_ratio(x: Any, y: Any) -> Any:
    """copysign(0, x / y) where the quotient rounds to zero: x / y is finite there, so
    multiplying it by zero keeps its sign (-0 // 3 is -0, -0 // -3 is +0)."""
    return arithmetic.mul(arithmetic.div(x, y), np.zeros((), get_aval(x).dtype))


def _nonzero_int_divisor(y: Any) -> Any:
    """An integer divisor with its zeros replaced by 1, so that x % 0 is 0 (as JAX; arithmetic.rem
    would give x)."""
    dtype = get_aval(y).dtype
    if dtype.kind not in "iu":
        return y
    return selection.select_n(comparisons.eq(y, np.zeros((), dtype)), y, np.ones((), dtype))


def remainder(x1: Any, x2: Any, /) -> Any:
    x, y = _prepare_numeric("remainder", x1, x2)
    dtype = get_aval(x).dtype
    y = _nonzero_int_divisor(y)
    # rem takes the sign of x (C fmod); NumPy's remainder takes the sign of y.
    r = arithmetic.rem(x, y)
    if dtype.kind == "u":
        return r
    zero = np.zeros((), dtype)
    needs_shift = bitwise.bitwise_and(
        comparisons.ne(r, zero), comparisons.ne(comparisons.lt(r, zero), comparisons.lt(y, zero))
    )
    r = selection.select_n(needs_shift, r, arithmetic.add(r, y))
    if not dtypes.is_float(dtype):
        return r
    # A zero remainder takes the sign of y too (NumPy and the array API: -0 % 3 is +0 and
    # 0 % -3 is -0), where rem left the sign of x (as JAX).
    # (r is NaN wherever y is zero or NaN, so y's sign is read only where it has one.)
    negative_zero = np.array(-0.0, dtype)
    return selection.select_n(
        comparisons.eq(r, zero),
        r,
        selection.select_n(comparisons.lt(y, zero), zero, negative_zero),
    )


mod = remainder


def fmod(x1: Any, x2: Any, /) -> Any:
    x, y = _prepare_numeric("fmod", x1, x2)
    return arithmetic.rem(x, _nonzero_int_divisor(y))


def power(x1: Any, x2: Any, /) -> Any:
    x, y = x1, x2
    if (
        isinstance(y, (int, np.integer))
        and not isinstance(y, bool)
        and not isinstance(x, (int, float))
    ):
        (x,) = promote_dtypes(as_operand(x))
        if get_aval(x).dtype == dtypes.bool_:
            x = cast(x, dtypes.int32)
        if get_aval(x).dtype.kind in "iu" and y < 0:
            raise ValueError(f"integers to negative integer powers are not allowed{errors.where()}")
        return math_functions.integer_pow(x, int(y))
    x, y = _prepare_numeric("power", x, y)
    dtype = get_aval(x).dtype
    if dtype.kind in "iub":
        return _integer_power(x, y)
    return math_functions.pow(x, y)


def _integer_power(x: Any, y: Any) -> Any:
    """x ** y for integer arrays, by repeated squaring over the bits of y (y >= 0)."""
    dtype = get_aval(x).dtype
    bits = dtype.itemsize * 8
    result = arithmetic.add(arithmetic.mul(x, np.zeros((), dtype)), np.ones((), dtype))
    base = x
    exponent = y
    one = np.ones((), dtype)
    for _ in range(bits):
        odd = comparisons.ne(bitwise.bitwise_and(exponent, one), np.zeros((), dtype))
        result = selection.select_n(odd, result, arithmetic.mul(result, base))
        base = arithmetic.mul(base, base)
        exponent = arithmetic.div(exponent, np.asarray(2, dtype)[()])
    return result


pow = power


def square(x: Any, /) -> Any:
    (x,) = promote_dtypes(as_operand(x))
    if get_aval(x).dtype == dtypes.bool_:
        x = cast(x, dtypes.int32)
    return math_functions.square(x)


def reciprocal(x: Any, /) -> Any:
    (x,) = prepare_inexact("reciprocal", x)
    return arithmetic.div(np.ones((), get_aval(x).dtype), x)


def absolute(x: Any, /) -> Any:
    (x,) = promote_dtypes(as_operand(x))
    if get_aval(x).dtype.kind in "bu":  # already non-negative
        return x
    return arithmetic.abs(x)


abs = absolute


def real(val: Any, /) -> Any:
    (x,) = promote_dtypes(as_operand(val))
    return arithmetic.real(x) if get_aval(x).dtype.kind == "c" else x


def imag(val: Any, /) -> Any:
    (x,) = promote_dtypes(as_operand(val))
    if get_aval(x).dtype.kind == "c":
        return arithmetic.imag(x)
    # +0.0 everywhere, as NumPy: x * 0 would give -0.0 for negative x (and nan for inf).
    aval = get_aval(x)
    return broadcast_in_dim(np.zeros((), aval.dtype), aval.shape, ())


def conjugate(x: Any, /) -> Any:
    (x,) = promote_dtypes(as_operand(x))
    return arithmetic.conj(x) if get_aval(x).dtype.kind == "c" else x


conj = conjugate


def positive(x: Any, /) -> Any:
    (x,) = promote_dtypes(as_operand(x))
    return x


def floor(x: Any, /) -> Any:
    (x,) = promote_dtypes(as_operand(x))
    return x if get_aval(x).dtype.kind in "iub" else arithmetic.floor(x)


def ceil(x: Any, /) -> Any:
    (x,) = promote_dtypes(as_operand(x))
    return x if get_aval(x).dtype.kind in "iub" else arithmetic.ceil(x)


def trunc(x: Any, /) -> Any:
    (x,) = promote_dtypes(as_operand(x))
    if get_aval(x).dtype.kind in "iub":
        return x
    return selection.select_n(
        comparisons.lt(x, np.zeros((), get_aval(x).dtype)), arithmetic.floor(x), arithmetic.ceil(x)
    )


def round(a: Any, decimals: int = 0, out: None = None) -> Any:
    if out is not None:
        raise NotImplementedError(
            f"The 'out' argument to jnp.round is not supported.{errors.where()}"
        )
    (x,) = promote_dtypes(as_operand(a))
    dtype = get_aval(x).dtype
    if dtype.kind in "iub":
        return x
    if dtype.kind == "c":  # each part rounded
        return arithmetic.complex(
            _round(arithmetic.real(x), decimals), _round(arithmetic.imag(x), decimals)
        )
    return _round(x, decimals)


def _round(x: Any, decimals: int) -> Any:
    if decimals == 0:
        return arithmetic.round_(x)
    factor = np.asarray(10.0**decimals, get_aval(x).dtype)[()]
    return arithmetic.div(arithmetic.round_(arithmetic.mul(x, factor)), factor)


around = round


def rint(x: Any, /) -> Any:
    x = as_operand(x)
    aval = get_aval(x)
    if not dtypes.is_inexact(aval.dtype):  # as JAX: integers become the default float
        x = cast(x, dtypes.default_float(), aval.weak_type)
    return round(x)


def isfinite(x: Any, /) -> Any:
    (x,) = promote_dtypes(as_operand(x))
    aval = get_aval(x)
    if not dtypes.is_inexact(aval.dtype):
        return comparisons.eq(x, x)
    if aval.dtype.kind == "c":  # finite when both parts are
        return bitwise.bitwise_and(
            comparisons.is_finite(arithmetic.real(x)), comparisons.is_finite(arithmetic.imag(x))
        )
    return comparisons.is_finite(x)


def isnan(x: Any, /) -> Any:
    (x,) = promote_dtypes(as_operand(x))
    return comparisons.ne(x, x)


def isinf(x: Any, /) -> Any:
    (x,) = promote_dtypes(as_operand(x))
    aval = get_aval(x)
    if not dtypes.is_inexact(aval.dtype):
        return comparisons.ne(x, x)
    if aval.dtype.kind == "c":  # infinite when either part is
        return bitwise.bitwise_or(isinf(arithmetic.real(x)), isinf(arithmetic.imag(x)))
    return comparisons.eq(arithmetic.abs(x), np.asarray(np.inf, aval.dtype)[()])


def log2(x: Any, /) -> Any:
    (x,) = prepare_inexact("log2", x)
    return _log_base(x, arithmetic.div, np.log(2))


def log10(x: Any, /) -> Any:
    (x,) = prepare_inexact("log10", x)
    # Multiplied by 1 / log(10) (not divided by log(10)), which rounds as JAX's does.
    return _log_base(x, arithmetic.mul, 1 / np.log(10))


def _log_base(x: Any, scale_by, factor: float) -> Any:
    dtype = get_aval(x).dtype
    if dtype.kind != "c":
        return scale_by(math_functions.log(x), np.asarray(factor, dtype)[()])
    # Scale the parts separately: a complex constant would turn log(0) = -inf + 0j into
    # -inf + nanj (inf * 0 in the complex arithmetic).
    r = math_functions.log(x)
    factor = np.asarray(factor, dtypes.real_dtype(dtype))[()]
    return arithmetic.complex(
        scale_by(arithmetic.real(r), factor), scale_by(arithmetic.imag(r), factor)
    )


def exp2(x: Any, /) -> Any:
    (x,) = prepare_inexact("exp2", x)
    return math_functions.exp(arithmetic.mul(x, np.asarray(np.log(2), get_aval(x).dtype)[()]))


def _logaddexp(x: Any, y: Any, /) -> Any:
    x, y = prepare_inexact("logaddexp", x, y)
    return log_add_exp(x, y)


logaddexp = as_ufunc(_logaddexp, "logaddexp", 2)


def clip(arr: Any = None, /, min: Any = None, max: Any = None) -> Any:
    if arr is None:
        raise ValueError(f"No input was provided to the clip function.{errors.where()}")
    return _clip(arr, min, max)


@functools.partial(jit, inline=True)  # one program when called eagerly
def _clip(x: Any, min: Any, max: Any) -> Any:
    if min is not None:
        x = maximum(x, min)
    if max is not None:
        x = minimum(x, max)
    return x


def where(condition: Any, x: Any = None, y: Any = None, /) -> Any:
    """``x`` where ``condition`` holds, else ``y`` (the three-argument form)."""
    if x is None or y is None:
        raise ValueError(
            "where with one argument returns indices whose number depends on the data; use "
            f"ember.numpy.nonzero with a static size=, or pass both x and y{errors.where()}"
        )
    return _where(condition, x, y)


@functools.partial(jit, inline=True)
def _where(condition: Any, x: Any, y: Any) -> Any:
    condition = cast(as_operand(condition), dtypes.bool_)
    x, y = promote_dtypes(x, y)
    condition, x, y = broadcast_args("where", condition, x, y)
    return selection.select_n(condition, y, x)


def sigmoid(x: Any) -> Any:
    (x,) = prepare_inexact("sigmoid", x)
    return math_functions.logistic(x)
