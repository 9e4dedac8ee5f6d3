"""Floating-point representation: ``nextafter`` and ``reduce_precision``.

``reduce_precision(x, exponent_bits, mantissa_bits)`` rounds ``x`` to the nearest value of
a narrower floating-point format (round half to even), keeping its dtype: values beyond the
format's range become infinities, values below its smallest normal become (signed) zeros,
and NaNs stay NaNs, as XLA's ReducePrecision does. ``reduce_precision(x, 5, 10)`` is a
float16 round trip for values in float16's normal range.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import ShapedArray, Zero
from ember._src.primitives import sharding_rules
from ember._src.primitives.elementwise import (
    _FLOAT,
    coerce_scalars,
    elementwise_batch,
    hlo_lowering,
    nary_abstract_eval,
    numpy_reference,
)


def _real_float_abstract_eval(name: str, arity: int):
    generic = nary_abstract_eval(name, _FLOAT)

    def abstract_eval(*avals: ShapedArray, **params) -> ShapedArray:
        out = generic(*avals[:arity])
        if not dtypes.is_inexact(out.dtype) or out.dtype.kind == "c":  # (bfloat16's kind is V)
            raise errors.EmberTypeError(
                f"{name} needs real floating-point operands, got {dtypes.short_name(out.dtype)}"
                f"{errors.where()}"
            )
        return out

    return abstract_eval


nextafter_p = rules.define_primitive(
    "nextafter",
    sharding=rules.per_primitive(sharding_rules.elementwise),
    abstract_eval=_real_float_abstract_eval("nextafter", 2),
    batch=rules.per_primitive(elementwise_batch),
    lowering=hlo_lowering("chlo.next_after"),
    reference=numpy_reference(np.nextafter),
)


def nextafter(x1: Any, x2: Any) -> Any:
    """The next representable value after ``x1`` in the direction of ``x2``. (Whether
    subnormal results survive later arithmetic depends on the backend.)"""
    return nextafter_p.bind(*coerce_scalars(x1, x2))


# --------------------------------------------------------------------------------------------
# reduce_precision


def _reduce_precision_lowering(ctx, x, *, exponent_bits, mantissa_bits):
    attrs = {"exponent_bits": f"{exponent_bits} : i32", "mantissa_bits": f"{mantissa_bits} : i32"}
    return ctx.op("stablehlo.reduce_precision", [x], ctx.avals_out[0], attrs)


def _reduce_precision_reference(x, *, exponent_bits, mantissa_bits):
    """XLA's algorithm on the bit pattern: round the mantissa, then clamp the exponent."""
    info = np.finfo(x.dtype)
    nbits, src_mantissa = info.bits, info.nmant
    src_exponent = nbits - src_mantissa - 1
    uint = np.dtype(f"u{x.dtype.itemsize}")
    bits = np.ascontiguousarray(x).view(uint).copy()

    def u(value: int) -> Any:
        return np.asarray(value, uint)

    if mantissa_bits < src_mantissa:
        shift = src_mantissa - mantissa_bits
        last_bit_mask = 1 << shift
        last_bit = (bits & u(last_bit_mask)) >> u(shift)
        bias = last_bit + u((last_bit_mask >> 1) - 1)  # ties go to the even neighbour
        bits = (bits + bias) & u(~(last_bit_mask - 1) & ((1 << nbits) - 1))
    if exponent_bits < src_exponent:
        sign = bits & u(1 << (nbits - 1))
        exponent_mask = ((1 << src_exponent) - 1) << src_mantissa
        exponent = bits & u(exponent_mask)
        bias = (1 << (src_exponent - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        overflow = exponent > u((bias + reduced_bias) << src_mantissa)
        underflow = exponent <= u((bias - reduced_bias) << src_mantissa)
        bits = np.where(overflow, sign | u(exponent_mask), np.where(underflow, sign, bits))
    result = np.asarray(bits, uint).view(x.dtype)
    return np.where(np.isnan(x), x, result)


def _reduce_precision_jvp(primals, tangents, **params):
    (x,), (t,) = primals, tangents
    out = reduce_precision_p.bind(x, **params)
    return out, t if type(t) is Zero else reduce_precision_p.bind(t, **params)


def _reduce_precision_transpose(ct, x, **params):
    return [Zero(x.aval) if type(ct) is Zero else reduce_precision_p.bind(ct, **params)]


reduce_precision_p = rules.define_primitive(
    "reduce_precision",
    sharding=sharding_rules.same_as_operand,
    abstract_eval=_real_float_abstract_eval("reduce_precision", 1),
    jvp=_reduce_precision_jvp,
    transpose=_reduce_precision_transpose,
    batch=rules.per_primitive(elementwise_batch),
    lowering=_reduce_precision_lowering,
    reference=_reduce_precision_reference,
)


def reduce_precision(operand: Any, exponent_bits: int, mantissa_bits: int) -> Any:
    exponent_bits = operator.index(exponent_bits)
    mantissa_bits = operator.index(mantissa_bits)
    if exponent_bits < 1:
        raise ValueError(f"reduce_precision: exponent_bits must be positive; got {exponent_bits}")
    if mantissa_bits < 0:
        raise ValueError(
            f"reduce_precision: mantissa_bits must be non-negative; got {mantissa_bits}"
        )
    return reduce_precision_p.bind(
        *coerce_scalars(operand), exponent_bits=exponent_bits, mantissa_bits=mantissa_bits
    )
