"""Bit-level operations: and, or, xor, not (logical ones on bools), shifts, population count,
and reinterpreting bits as another dtype.

Shifts follow XLA's semantics, which differ from C's: shifting by the bit width or more gives
0 (or the sign, for an arithmetic right shift) instead of undefined behaviour. The NumPy
reference rules reproduce that.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import ShapedArray
from ember._src.primitives import sharding_rules
from ember._src.primitives.elementwise import _INT, coerce_scalars, elementwise_rules, zero_jvp

and_p = rules.define_primitive(
    "and", **elementwise_rules(np.bitwise_and, "stablehlo.and", _INT), jvp=zero_jvp
)


def bitwise_and(x: Any, y: Any) -> Any:
    return and_p.bind(*coerce_scalars(x, y))


or_p = rules.define_primitive(
    "or", **elementwise_rules(np.bitwise_or, "stablehlo.or", _INT), jvp=zero_jvp
)


def bitwise_or(x: Any, y: Any) -> Any:
    return or_p.bind(*coerce_scalars(x, y))


xor_p = rules.define_primitive(
    "xor", **elementwise_rules(np.bitwise_xor, "stablehlo.xor", _INT), jvp=zero_jvp
)


def bitwise_xor(x: Any, y: Any) -> Any:
    return xor_p.bind(*coerce_scalars(x, y))


not_p = rules.define_primitive(
    "not", **elementwise_rules(np.invert, "stablehlo.not", _INT), jvp=zero_jvp
)


def bitwise_not(x: Any) -> Any:
    return not_p.bind(x)


# --------------------------------------------------------------------------------------------
# Shifts and population count


def _shift_amounts(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    bits = x.dtype.itemsize * 8
    y = y.astype(np.int64)
    return (y < 0) | (y >= bits), np.clip(y, 0, bits - 1).astype(x.dtype)


def _shift_left(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out_of_range, amount = _shift_amounts(x, y)
    return np.where(out_of_range, np.zeros_like(x), np.left_shift(x, amount))


shift_left_p = rules.define_primitive(
    "shift_left",
    **elementwise_rules(_shift_left, "stablehlo.shift_left", _INT),
    jvp=zero_jvp,
)


def shift_left(x: Any, y: Any) -> Any:
    return shift_left_p.bind(*coerce_scalars(x, y))


def _shift_right_logical(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    unsigned = x.view(np.dtype(f"u{x.dtype.itemsize}"))
    out_of_range, amount = _shift_amounts(unsigned, y)
    shifted = np.right_shift(unsigned, amount)
    return np.where(out_of_range, np.zeros_like(unsigned), shifted).view(x.dtype)


shift_right_logical_p = rules.define_primitive(
    "shift_right_logical",
    **elementwise_rules(_shift_right_logical, "stablehlo.shift_right_logical", _INT),
    jvp=zero_jvp,
)


def shift_right_logical(x: Any, y: Any) -> Any:
    return shift_right_logical_p.bind(*coerce_scalars(x, y))


def _shift_right_arithmetic(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    signed = x.view(np.dtype(f"i{x.dtype.itemsize}"))
    out_of_range, amount = _shift_amounts(signed, y)
    fill = np.where(signed < 0, -1, 0).astype(signed.dtype)
    return np.where(out_of_range, fill, np.right_shift(signed, amount)).view(x.dtype)


shift_right_arithmetic_p = rules.define_primitive(
    "shift_right_arithmetic",
    **elementwise_rules(_shift_right_arithmetic, "stablehlo.shift_right_arithmetic", _INT),
    jvp=zero_jvp,
)


def shift_right_arithmetic(x: Any, y: Any) -> Any:
    return shift_right_arithmetic_p.bind(*coerce_scalars(x, y))


def _population_count(x: np.ndarray) -> np.ndarray:
    unsigned = x.view(np.dtype(f"u{x.dtype.itemsize}"))
    counts = np.zeros(unsigned.shape, np.int64)
    for byte in range(x.dtype.itemsize):
        chunk = (unsigned >> np.asarray(8 * byte, unsigned.dtype)) & np.asarray(
            0xFF, unsigned.dtype
        )
        counts += np.unpackbits(chunk.astype(np.uint8)[..., None], axis=-1).sum(-1, dtype=np.int64)
    return counts.astype(x.dtype)


population_count_p = rules.define_primitive(
    "population_count",
    **elementwise_rules(_population_count, "stablehlo.popcnt", _INT),
    jvp=zero_jvp,
)


def population_count(x: Any) -> Any:
    return population_count_p.bind(x)


# --------------------------------------------------------------------------------------------
# bitcast_convert_type: the same bits, read as another dtype of the same width


def _bitcast_abstract_eval(x: ShapedArray, *, new_dtype: np.dtype) -> ShapedArray:
    if (
        x.dtype.itemsize != new_dtype.itemsize
        or x.dtype == dtypes.bool_
        or new_dtype == dtypes.bool_
    ):
        raise errors.EmberTypeError(
            f"bitcast_convert_type needs dtypes of one width (and not bool): "
            f"{dtypes.short_name(x.dtype)} -> {dtypes.short_name(new_dtype)}{errors.where()}"
        )
    return ShapedArray(x.shape, new_dtype)


def _bitcast_reference(x, *, new_dtype):
    return np.ascontiguousarray(x).view(new_dtype)


def _bitcast_lowering(ctx, x, *, new_dtype):
    return ctx.op("stablehlo.bitcast_convert", [x], ctx.avals_out[0])


def _bitcast_batch(vals, dims, *, new_dtype):
    return bitcast_convert_type_p.bind(vals[0], new_dtype=new_dtype), dims[0]


bitcast_convert_type_p = rules.define_primitive(
    "bitcast_convert_type",
    sharding=sharding_rules.same_as_operand,
    abstract_eval=_bitcast_abstract_eval,
    jvp=zero_jvp,
    batch=_bitcast_batch,
    lowering=_bitcast_lowering,
    reference=_bitcast_reference,
)


def bitcast_convert_type(operand: Any, new_dtype: Any) -> Any:
    return bitcast_convert_type_p.bind(operand, new_dtype=np.dtype(new_dtype))
