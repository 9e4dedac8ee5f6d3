"""NumPy's floating-point toolbox: splitting floats into mantissa and exponent (``frexp``,
``ldexp``, ``modf``, ``spacing``), NaN-aware extrema (``fmax``, ``fmin``), ``nan_to_num``,
infinity and complex tests, ``gcd``/``lcm``, ``bitwise_count`` the Bessel function ``i0``; sign
and angle helpers (``copysign``, ``signbit``, ``hypot``, ``heaviside``, ``sinc``, ``deg2rad``,
``rad2deg``) and ``logaddexp2``.

``frexp`` and ``ldexp`` work on the bits of the number, so subnormals, zeros of either sign,
infinities and NaN come out as in NumPy; ``ldexp`` rounds once, even into the subnormal range.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.lax.log_add_exp import complex_log_add
from ember._src.lax.numeric import exp2 as lax_exp2
from ember._src.numpy import (
    creation,
    elementwise as enp,
    manipulation,
)
from ember._src.numpy.operands import (
    as_operand,
    broadcast_args,
    dtype_of,
    prepare,
    promote_dtypes,
    promote_to_inexact,
    scalar_like,
)
from ember._src.primitives import bits
from ember._src.primitives.bits import bitcast_convert_type
from ember._src.primitives.control_flow.loops import while_loop
from ember._src.primitives.reduce import reduce_or
from ember._src.primitives.shape import convert_element_type
from ember._src.transforms.custom_derivatives import custom_jvp
from ember._src.transforms.jit import jit


def _real_float(name: str, x: Any) -> Any:
    """``x`` as a real floating array (integers become the default float); complex refused."""
    (x,) = promote_to_inexact(as_operand(x))
    if dtype_of(x).kind == "c":
        raise errors.EmberTypeError(f"{name} does not support complex input{errors.where()}")
    return x


# --------------------------------------------------------------------------------------------
# Simple wrappers


def angle(z: Any, deg: bool = False) -> Any:
    """The complex argument of ``z`` (radians, or degrees with ``deg=True``)."""
    z = as_operand(z)
    if not dtypes.is_inexact(dtype_of(z)):  # as JAX: the default float, whatever the width
        z = convert_element_type(z, dtypes.default_float(), get_aval(z).weak_type)
    # The imaginary part of a real number is +0.0 (so that angle(-1) is +pi, not -pi).
    imag = enp.imag(z) if dtype_of(z).kind == "c" else creation.zeros_like(z)
    result = enp.arctan2(imag, enp.real(z))
    if deg:
        result = enp.multiply(result, scalar_like(180 / np.pi, result))
    return result


def divmod(x1: Any, x2: Any, /) -> tuple[Any, Any]:
    return enp.floor_divide(x1, x2), enp.remainder(x1, x2)


def fabs(x: Any, /) -> Any:
    return enp.abs(_real_float("fabs", x))


def float_power(x: Any, y: Any, /) -> Any:
    """``x ** y`` computed in floating point (integers are promoted first)."""
    x, y = promote_to_inexact(as_operand(x), as_operand(y))
    return enp.power(x, y)


def fmax(x1: Any, x2: Any) -> Any:
    """The larger of ``x1`` and ``x2``, ignoring a NaN unless both are NaN."""
    x1, x2 = prepare("fmax", x1, x2)
    return enp.where(enp.logical_or(enp.greater(x1, x2), enp.isnan(x2)), x1, x2)


def fmin(x1: Any, x2: Any) -> Any:
    """The smaller of ``x1`` and ``x2``, ignoring a NaN unless both are NaN."""
    x1, x2 = prepare("fmin", x1, x2)
    return enp.where(enp.logical_or(enp.less(x1, x2), enp.isnan(x2)), x1, x2)


def isposinf(x: Any, /, out: None = None) -> Any:
    return _is_signed_inf("isposinf", x, np.inf)


def isneginf(x: Any, /, out: None = None) -> Any:
    return _is_signed_inf("isneginf", x, -np.inf)


def _is_signed_inf(name: str, x: Any, infinity: float) -> Any:
    (x,) = promote_dtypes(as_operand(x))
    dtype = dtype_of(x)
    if dtype.kind == "c":
        raise ValueError(f"{name} is not well defined for complex input{errors.where()}")
    if not dtypes.is_inexact(dtype):
        return enp.not_equal(x, x)  # all False, in x's shape
    return enp.equal(x, scalar_like(infinity, x))


def iscomplexobj(x: Any) -> bool:
    """Whether ``x`` has a complex dtype (its values are not looked at)."""
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        dtype = np.asarray(x).dtype
    return np.dtype(dtype).kind == "c"


def isrealobj(x: Any) -> bool:
    return not iscomplexobj(x)


def iscomplex(x: Any) -> Any:
    """Elementwise: a nonzero imaginary part."""
    return enp.not_equal(enp.imag(as_operand(x)), 0)


def isreal(x: Any) -> Any:
    """Elementwise: a zero imaginary part."""
    return enp.equal(enp.imag(as_operand(x)), 0)


def nan_to_num(
    x: Any, copy: bool = True, nan: Any = 0.0, posinf: Any = None, neginf: Any = None
) -> Any:
    """NaN becomes ``nan``, infinities become ``posinf``/``neginf`` (default: the largest
    finite values); complex numbers are cleaned part by part."""
    (x,) = promote_dtypes(as_operand(x))
    dtype = dtype_of(x)
    if not dtypes.is_inexact(dtype):
        return x
    if dtype.kind == "c":
        real = nan_to_num(enp.real(x), nan=nan, posinf=posinf, neginf=neginf)
        imag = nan_to_num(enp.imag(x), nan=nan, posinf=posinf, neginf=neginf)
        return enp.add(real, enp.multiply(imag, scalar_like(1j, x)))
    info = dtypes.finfo(dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    x = enp.where(enp.isnan(x), _cast_like(nan, x), x)
    x = enp.where(enp.equal(x, scalar_like(np.inf, x)), _cast_like(posinf, x), x)
    return enp.where(enp.equal(x, scalar_like(-np.inf, x)), _cast_like(neginf, x), x)


def _cast_like(value: Any, like: Any) -> Any:
    value = as_operand(value)
    if isinstance(value, (int, float, np.ndarray, np.generic)):
        return np.asarray(value, dtype_of(like))
    return convert_element_type(value, dtype_of(like))


def bitwise_count(x: Any, /) -> Any:
    """The number of set bits in ``|x|`` as uint8 (NumPy counts the magnitude's bits)."""
    (x,) = promote_dtypes(as_operand(x))
    dtype = dtype_of(x)
    if dtype.kind not in "iub":
        raise TypeError(
            f"bitwise_count needs integer or boolean input, got {dtypes.short_name(dtype)}"
            f"{errors.where()}"
        )
    if dtype == dtypes.bool_:
        x = convert_element_type(x, dtypes.uint8)
    elif dtype.kind == "i":
        x = enp.abs(x)
    return convert_element_type(bits.population_count(x), dtypes.uint8)


# --------------------------------------------------------------------------------------------
# Mantissa and exponent


class _Layout:
    """Where a floating dtype keeps its exponent and mantissa."""

    def __init__(self, dtype: np.dtype):
        info = dtypes.finfo(dtype)
        self.dtype = np.dtype(dtype)
        self.int_dtype = np.dtype(f"int{self.dtype.itemsize * 8}")
        self.mantissa_bits = int(info.nmant)
        self.min_exponent = int(info.minexp)  # smallest normal is 2**min_exponent
        self.max_exponent = int(info.maxexp)  # 2**max_exponent overflows
        self.bias = 1 - self.min_exponent
        exponent_width = self.dtype.itemsize * 8 - 1 - self.mantissa_bits
        self.field_max = (1 << exponent_width) - 1
        self.exponent_mask = self.field_max << self.mantissa_bits
        self.fraction_mask = (1 << self.mantissa_bits) - 1
        # The sign bit as a value of the signed integer type of the same width.
        self.sign_mask = -(1 << (self.dtype.itemsize * 8 - 1))

    def int_const(self, value: int) -> Any:
        return np.asarray(value, self.int_dtype)[()]

    def exponent_field(self, raw: Any) -> Any:
        masked = enp.bitwise_and(raw, self.int_const(self.exponent_mask))
        return bits.shift_right_logical(masked, self.int_const(self.mantissa_bits))

    def power_of_two(self, k: Any) -> Any:
        """``2.0 ** k`` exactly, for integer ``k`` in the normal range."""
        biased = enp.add(convert_element_type(k, self.int_dtype), self.int_const(self.bias))
        shifted = bits.shift_left(biased, self.int_const(self.mantissa_bits))
        return bits.bitcast_convert_type(shifted, self.dtype)


def frexp(x: Any, /) -> tuple[Any, Any]:
    """``x = mantissa * 2**exponent`` with ``|mantissa|`` in [0.5, 1) and an int32 exponent;
    zeros, infinities and NaN come back unchanged with exponent 0.

    Everything is read from the bits (XLA on CPU treats subnormal operands as zero in
    arithmetic and comparisons, so they are recognised by their exponent field instead)."""
    return _frexp(_real_float("frexp", x))


@functools.partial(jit, inline=True)  # one executable when called eagerly
def _frexp(x: Any) -> tuple[Any, Any]:
    layout = _Layout(dtype_of(x))
    raw = bits.bitcast_convert_type(x, layout.int_dtype)
    field = layout.exponent_field(raw)
    fraction = enp.bitwise_and(raw, layout.int_const(layout.fraction_mask))
    subnormal = enp.logical_and(enp.equal(field, 0), enp.not_equal(fraction, 0))
    # A subnormal is fraction * 2**(min_exponent - mantissa_bits): the fraction as a float
    # is a normal number, whose own exponent is then shifted.
    as_normal = convert_element_type(fraction, layout.dtype)
    normal_raw = enp.where(subnormal, bits.bitcast_convert_type(as_normal, layout.int_dtype), raw)
    exponent = enp.subtract(layout.exponent_field(normal_raw), layout.int_const(layout.bias - 1))
    shift = layout.int_const(layout.min_exponent - layout.mantissa_bits)
    exponent = enp.where(subnormal, enp.add(exponent, shift), exponent)
    # The sign of x, the fraction bits of the normalised number, the exponent of [0.5, 1).
    sign = enp.bitwise_and(raw, layout.int_const(layout.sign_mask))
    half_exponent = layout.int_const((layout.bias - 1) << layout.mantissa_bits)
    fraction = enp.bitwise_and(normal_raw, layout.int_const(layout.fraction_mask))
    mantissa = bits.bitcast_convert_type(
        enp.bitwise_or(enp.bitwise_or(sign, fraction), half_exponent), layout.dtype
    )
    zero = enp.logical_and(enp.equal(field, 0), enp.logical_not(subnormal))
    special = enp.logical_or(zero, enp.equal(field, layout.int_const(layout.field_max)))
    mantissa = enp.where(special, x, mantissa)
    exponent = enp.where(special, layout.int_const(0), exponent)
    return mantissa, convert_element_type(exponent, dtypes.int32)


def ldexp(x1: Any, x2: Any, /) -> Any:
    """``x1 * 2**x2`` for integer ``x2``, rounded once (also into the subnormal range, which
    is built from integer bits so that XLA on CPU does not flush it to zero)."""
    x1 = _real_float("ldexp", x1)
    (x2,) = promote_dtypes(as_operand(x2))
    if dtype_of(x2).kind not in "iub":
        raise TypeError(
            f"ldexp needs an integer exponent x2, got {dtypes.short_name(dtype_of(x2))}"
            f"{errors.where()}"
        )
    x1, x2 = manipulation.broadcast_arrays(x1, convert_element_type(x2, dtypes.int32))
    return _ldexp(x1, x2)


@custom_jvp
@functools.partial(jit, inline=True)
def _ldexp(x1: Any, x2: Any) -> Any:
    layout = _Layout(dtype_of(x1))
    mantissa, exponent = _frexp(x1)
    total = enp.add(exponent, x2)
    # Two exact powers of two: the first keeps mantissa * 2**first normal (or overflowing),
    # so only the second multiplication can round, once.
    first = enp.clip(total, np.int32(layout.min_exponent + 1), np.int32(layout.max_exponent - 1))
    second = enp.clip(
        enp.subtract(total, first), np.int32(-(layout.mantissa_bits + 3)), np.int32(2)
    )
    scaled = enp.multiply(
        enp.multiply(mantissa, layout.power_of_two(first)), layout.power_of_two(second)
    )
    # Below 2**min_exponent the result is subnormal: shift the integer mantissa instead.
    raw = bits.bitcast_convert_type(mantissa, layout.int_dtype)
    finite_nonzero = enp.equal(layout.exponent_field(raw), layout.int_const(layout.bias - 1))
    tiny = enp.logical_and(finite_nonzero, enp.less_equal(total, np.int32(layout.min_exponent)))
    return enp.where(tiny, _subnormal(layout, raw, total), scaled)


def _subnormal(layout: _Layout, raw: Any, total: Any) -> Any:
    """The subnormal (or zero, or smallest normal) nearest to ``m * 2**total``, where ``raw``
    holds the bits of ``m`` in [0.5, 1) and ``total <= min_exponent``; ties round to even."""
    significand = enp.bitwise_or(
        enp.bitwise_and(raw, layout.int_const(layout.fraction_mask)),
        layout.int_const(1 << layout.mantissa_bits),
    )
    # Shifting past the significand's width leaves 0 with a remainder below half.
    shift = enp.clip(
        enp.subtract(np.int32(layout.min_exponent + 1), total),
        np.int32(1),
        np.int32(layout.mantissa_bits + 2),
    )
    shift = convert_element_type(shift, layout.int_dtype)
    one = layout.int_const(1)
    kept = bits.shift_right_logical(significand, shift)
    dropped = enp.bitwise_and(
        significand, enp.subtract(bits.shift_left(creation.ones_like(shift), shift), one)
    )
    half = bits.shift_left(creation.ones_like(shift), enp.subtract(shift, one))
    odd = enp.equal(enp.bitwise_and(kept, one), one)
    round_up = enp.logical_or(
        enp.greater(dropped, half), enp.logical_and(enp.equal(dropped, half), odd)
    )
    # A carry out of the fraction bits lands in the exponent field: the smallest normal.
    magnitude = enp.add(kept, convert_element_type(round_up, layout.int_dtype))
    sign = enp.bitwise_and(raw, layout.int_const(layout.sign_mask))
    return bits.bitcast_convert_type(enp.bitwise_or(sign, magnitude), layout.dtype)


@_ldexp.defjvp
def _ldexp_jvp(primals, tangents):
    (x1, x2), (dx1, _) = primals, tangents
    return _ldexp(x1, x2), enp.multiply(dx1, _ldexp(creation.ones_like(x1), x2))


def modf(x: Any, /, out: None = None) -> tuple[Any, Any]:
    """Fractional and integral parts, both with the sign of ``x``; ``modf(±inf)`` is
    ``(±0.0, ±inf)`` as in NumPy."""
    x = _real_float("modf", x)
    whole = enp.trunc(x)
    fraction = enp.where(enp.isinf(x), scalar_like(0, x), enp.subtract(x, whole))
    # x - trunc(x) is +0.0 for negative integers; NumPy keeps the sign of x.
    negative = enp.less(bits.bitcast_convert_type(x, _Layout(dtype_of(x)).int_dtype), 0)
    fraction = enp.where(negative, enp.negative(enp.abs(fraction)), enp.abs(fraction))
    return fraction, whole


def spacing(x: Any, /) -> Any:
    """The distance from ``x`` to the next float away from zero (negative for negative x).

    Built from bits as a power of two: subtracting neighbours would lose subnormal spacings
    where XLA on CPU flushes subnormal results to zero."""
    return _spacing(_real_float("spacing", x))


@functools.partial(jit, inline=True)
def _spacing(x: Any) -> Any:
    layout = _Layout(dtype_of(x))
    _, exponent = _frexp(x)
    unit = enp.subtract(
        convert_element_type(exponent, layout.int_dtype), layout.int_const(layout.mantissa_bits + 1)
    )
    # Below the normal range every float is spaced by the smallest subnormal.
    smallest = layout.min_exponent - layout.mantissa_bits
    unit = enp.maximum(unit, layout.int_const(smallest))
    subnormal_bits = bits.shift_left(
        layout.int_const(1), enp.subtract(unit, layout.int_const(smallest))
    )
    normal_bits = bits.shift_left(
        enp.add(unit, layout.int_const(layout.bias)), layout.int_const(layout.mantissa_bits)
    )
    is_normal = enp.greater_equal(unit, layout.int_const(layout.min_exponent))
    magnitude = bits.bitcast_convert_type(
        enp.where(is_normal, normal_bits, subnormal_bits), layout.dtype
    )
    raw = bits.bitcast_convert_type(x, layout.int_dtype)
    zero_or_tiny = enp.equal(layout.exponent_field(raw), 0)
    magnitude = enp.where(
        zero_or_tiny, bits.bitcast_convert_type(layout.int_const(1), layout.dtype), magnitude
    )
    # Negative values get a negative spacing; -0.0 (the bare sign bit) counts as zero.
    negative = enp.logical_and(
        enp.less(raw, layout.int_const(0)), enp.not_equal(raw, layout.int_const(layout.sign_mask))
    )
    result = enp.where(negative, enp.negative(magnitude), magnitude)
    return enp.where(enp.isfinite(x), result, scalar_like(np.nan, x))


# --------------------------------------------------------------------------------------------
# Greatest common divisor, least common multiple


def _integer_pair(name: str, x1: Any, x2: Any) -> tuple[Any, Any]:
    x1, x2 = manipulation.broadcast_arrays(*prepare(name, x1, x2))
    if dtype_of(x1).kind not in "iu":
        raise ValueError(
            f"{name} needs integer arguments, got {dtypes.short_name(dtype_of(x1))}{errors.where()}"
        )
    return x1, x2


def gcd(x1: Any, x2: Any) -> Any:
    """Greatest common divisor of ``|x1|`` and ``|x2|`` by Euclid's algorithm."""
    x1, x2 = _integer_pair("gcd", x1, x2)
    return _gcd(enp.abs(x1), enp.abs(x2))


def _gcd(a: Any, b: Any) -> Any:
    zero = scalar_like(0, a)

    def unfinished(state):
        _, b = state
        return reduce_or(enp.not_equal(b, zero), tuple(range(get_aval(b).ndim)))

    def step(state):
        a, b = state
        done = enp.equal(b, zero)
        safe_b = enp.where(done, scalar_like(1, b), b)
        return enp.where(done, a, b), enp.where(done, zero, enp.remainder(a, safe_b))

    return while_loop(unfinished, step, (a, b))[0]


def lcm(x1: Any, x2: Any) -> Any:
    """Least common multiple of ``|x1|`` and ``|x2|`` (0 if either is 0)."""
    x1, x2 = _integer_pair("lcm", x1, x2)
    a, b = enp.abs(x1), enp.abs(x2)
    divisor = _gcd(a, b)
    zero = enp.equal(divisor, 0)
    quotient = enp.floor_divide(a, enp.where(zero, scalar_like(1, divisor), divisor))
    return enp.where(zero, scalar_like(0, a), enp.multiply(quotient, b))


# --------------------------------------------------------------------------------------------
# Modified Bessel function of the first kind, order 0

# Below this |x| the power series converges quickly; above it the asymptotic series does.
_BESSEL_SWITCH = 20.0
_SERIES_TERMS = 36
_ASYMPTOTIC_TERMS = 24


def i0(x: Any) -> Any:
    """The modified Bessel function I0 (differentiable: I0' = I1)."""
    x = _real_float("i0", x)
    return _i0(enp.abs(x))


def _bessel_series(x: Any, order: int) -> Any:
    """sum_k (x/2)**(2k + order) / (k! (k + order)!), summed from the smallest term up."""
    quarter_square = enp.multiply(enp.square(x), scalar_like(0.25, x))
    total = creation.ones_like(x)
    for k in range(_SERIES_TERMS, 0, -1):
        total = enp.add(scalar_like(1, x), enp.multiply(total, quarter_square / (k * (k + order))))
    if order == 0:
        return total
    return enp.multiply(total, enp.multiply(x, scalar_like(0.5, x)))


def _bessel_asymptotic(x: Any, order: int) -> Any:
    """exp(x) / sqrt(2 pi x) * sum_k (-1)**k prod_j (4 n**2 - (2j - 1)**2) / (k! (8x)**k)."""
    inverse = enp.divide(scalar_like(1, x), enp.multiply(x, scalar_like(8, x)))
    mu = 4 * order * order
    total = creation.ones_like(x)
    for k in range(_ASYMPTOTIC_TERMS, 0, -1):
        ratio = ((2 * k - 1) ** 2 - mu) / k  # term k over term k - 1, times 8x
        total = enp.add(scalar_like(1, x), enp.multiply(total, enp.multiply(inverse, ratio)))
    # exp(x) in two halves: each is accurate to an ulp and finite wherever the result is.
    half_growth = enp.exp(enp.multiply(x, scalar_like(0.5, x)))
    prefactor = enp.divide(total, enp.sqrt(enp.multiply(x, scalar_like(2 * np.pi, x))))
    return enp.multiply(enp.multiply(half_growth, prefactor), half_growth)


@functools.partial(jit, inline=True, static_argnames="order")
def _bessel(x: Any, order: int) -> Any:
    """I_order(x) for x >= 0, choosing the series by size (each fed safe inputs, so the
    unused branch never makes a NaN gradient)."""
    large = enp.greater(x, scalar_like(_BESSEL_SWITCH, x))
    small_x = enp.where(large, scalar_like(0, x), x)
    large_x = enp.where(large, x, scalar_like(_BESSEL_SWITCH * 2, x))
    return enp.where(large, _bessel_asymptotic(large_x, order), _bessel_series(small_x, order))


@custom_jvp
def _i0(x: Any) -> Any:
    return _bessel(x, 0)


@_i0.defjvp
def _i0_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    # i0 sees |x|; d|x|/dx = sign(x), and i1 is odd, so i0'(x) = i1(|x|) sign(x) = i1(x).
    return _i0(x), enp.multiply(_i1(x), dx)


def _i1(x: Any) -> Any:
    """I1, odd: sign(x) * I1(|x|)."""
    return enp.multiply(enp.sign(x), _bessel(enp.abs(x), 1))


def _inexact(x: Any) -> Any:
    return promote_to_inexact(x)[0]


def _real_only(name: str, *xs: Any) -> None:
    for x in xs:
        if get_aval(x).dtype.kind == "c":
            raise errors.EmberTypeError(
                f"{name} does not accept complex operands, got {get_aval(x).dtype}{errors.where()}"
            )


def copysign(x1: Any, x2: Any, /) -> Any:
    x1, x2 = promote_to_inexact(x1, x2)
    _real_only("copysign", x1, x2)
    negative = signbit(x2)
    magnitude = enp.abs(x1)
    return enp.where(negative, enp.negative(magnitude), magnitude)


def signbit(x: Any, /) -> Any:
    x = creation.asarray(x)
    dtype = get_aval(x).dtype
    if dtype.kind in "uib":
        return enp.less(x, 0)
    if dtype.kind == "c":
        raise ValueError(f"signbit is not well defined for {dtype}{errors.where()}")
    # the sign bit itself, so that -0.0 and -nan count as negative
    return enp.less(bitcast_convert_type(x, np.dtype(f"i{dtype.itemsize}")), 0)


def hypot(x1: Any, x2: Any, /) -> Any:
    x1, x2 = promote_to_inexact(x1, x2)
    if get_aval(x1).dtype.kind == "c":
        raise ValueError(
            "jnp.hypot is not well defined for complex-valued inputs. Please convert to real "
            f"values first, such as by using jnp.real or jnp.imag to take the real or imaginary "
            f"components respectively.{errors.where()}"
        )
    a, b = enp.abs(x1), enp.abs(x2)
    big, small = enp.maximum(a, b), enp.minimum(a, b)
    safe = enp.where(enp.equal(big, 0), np.ones((), get_aval(big).dtype), big)
    ratio = small / safe
    # An infinite side makes the hypotenuse infinite, even beside nan (inf/inf would be nan).
    return enp.where(enp.isinf(a) | enp.isinf(b), np.inf, big * enp.sqrt(1 + ratio * ratio))


def heaviside(x1: Any, x2: Any, /) -> Any:
    x1, x2 = promote_to_inexact(x1, x2)
    _real_only("heaviside", x1, x2)
    zero = np.zeros((), get_aval(x1).dtype)
    one = np.ones((), get_aval(x1).dtype)
    return enp.where(enp.less(x1, 0), zero, enp.where(enp.greater(x1, 0), one, x2))


def sinc(x: Any, /) -> Any:
    x = _inexact(x)
    pi_x = x * np.asarray(np.pi, get_aval(x).dtype)
    safe = enp.where(enp.equal(x, 0), np.ones((), get_aval(x).dtype), pi_x)
    return enp.where(enp.equal(x, 0), np.ones((), get_aval(x).dtype), enp.sin(safe) / safe)


def deg2rad(x: Any, /) -> Any:
    x = _inexact(x)
    return x * np.asarray(np.pi / 180, get_aval(x).dtype)


def rad2deg(x: Any, /) -> Any:
    x = _inexact(x)
    return x * np.asarray(180 / np.pi, get_aval(x).dtype)


radians, degrees = deg2rad, rad2deg


def _logaddexp2(x1: Any, x2: Any, /) -> Any:
    x1, x2 = promote_to_inexact(x1, x2)
    if get_aval(x1).dtype.kind == "c":
        x1, x2 = broadcast_args("logaddexp2", x1, x2)
        amax = enp.maximum(x1, x2)
        return complex_log_add(x1, x2, amax, lax_exp2, 1 / np.log(2), np.pi / np.log(2))
    ln2 = np.asarray(np.log(2), get_aval(x1).dtype)
    return enp.logaddexp(x1 * ln2, x2 * ln2) / ln2


logaddexp2 = enp.as_ufunc(_logaddexp2, "logaddexp2", 2)
