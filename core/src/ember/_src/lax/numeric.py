"""lax's numeric conveniences built from the primitive library.

``reduce`` recognises the monoids that have their own reduction primitive (add, mul, max,
min, and boolean and/or) and otherwise reduces by halving: the reduced axes are flattened into
one, whose two halves are combined with ``computation`` until one entry remains. That needs
``computation`` to be associative and commutative, as XLA's reduce does, and to act
elementwise on arrays (as functions written with lax or ember.numpy operations do); it stays
differentiable and batchable because it is made of ordinary operations.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.primitives.arithmetic import (
    abs as abs_,
    add,
    ceil,
    floor,
    max as max_,
    min as min_,
    mul,
    round_,
    sign,
    sub,
)
from ember._src.primitives.bits import (
    bitcast_convert_type,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    population_count,
    shift_right_arithmetic,
    shift_right_logical,
)
from ember._src.primitives.comparisons import ge, lt
from ember._src.primitives.control_flow.associative_scan import associative_scan
from ember._src.primitives.elementwise import coerce_scalars
from ember._src.primitives.linalg import dot_general
from ember._src.primitives.math_functions import exp, integer_pow, square as square_
from ember._src.primitives.reduce import (
    extreme_value,
    reduce_and,
    reduce_max,
    reduce_min,
    reduce_or,
    reduce_prod,
)
from ember._src.primitives.selection import select_n
from ember._src.primitives.shape import (
    broadcast_in_dim,
    convert_element_type,
    reduce_sum,
    reshape,
    transpose,
)
from ember._src.primitives.slicing import concatenate, slice_along
from ember._src.tree.util import tree_flatten, tree_unflatten


class Precision(enum.Enum):
    """Precision hints for dot products and convolutions (XLA may ignore them on CPU)."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value: Any) -> Precision | None:
        aliases = {
            "default": cls.DEFAULT, "bfloat16": cls.DEFAULT, "fastest": cls.DEFAULT,
            "high": cls.HIGH, "bfloat16_3x": cls.HIGH, "tensorfloat32": cls.HIGH,
            "highest": cls.HIGHEST, "float32": cls.HIGHEST,
        }  # fmt: skip
        return aliases.get(value.lower()) if isinstance(value, str) else None

    def __str__(self) -> str:
        return self.name


PrecisionLike = Any


class RoundingMethod(enum.IntEnum):
    """How ``round`` breaks ties: away from zero (JAX's default) or to the even neighbour."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


DotDimensionNumbers = tuple[
    tuple[Sequence[int], Sequence[int]], tuple[Sequence[int], Sequence[int]]
]


def canonical_precision(precision: Any) -> Precision | None:
    """One ``Precision`` from None, a name, a ``Precision`` or a pair (the higher one wins:
    XLA takes a single hint for both operands)."""
    if precision is None:
        return None
    if isinstance(precision, (tuple, list)):
        if len(precision) != 2:
            raise ValueError(f"precision must be one value or a pair, got {precision!r}")
        pair = [canonical_precision(p) for p in precision]
        known = [p for p in pair if p is not None]
        return max(known, key=lambda p: p.value) if known else None
    try:
        return Precision(precision)
    except ValueError:
        raise ValueError(
            f"precision must be None, a Precision or one of 'default', 'high', 'highest', "
            f"got {precision!r}{errors.where()}"
        ) from None


def round(x: Any, rounding_method: Any = RoundingMethod.AWAY_FROM_ZERO) -> Any:
    """Round to the nearest integer; ties go away from zero unless ``rounding_method`` is
    ``TO_NEAREST_EVEN``."""
    method = RoundingMethod(rounding_method)
    if method is RoundingMethod.TO_NEAREST_EVEN:
        return round_(x)
    aval = get_aval(x)
    zero = np.zeros(aval.shape, aval.dtype)
    half = np.full(aval.shape, 0.5, aval.dtype)
    # Truncate towards zero (keeping the sign of -0.0); x - truncated is exact.
    truncated = select_n(lt(x, zero), floor(x), ceil(x))
    away = ge(abs_(sub(x, truncated)), half)
    return select_n(away, truncated, add(truncated, sign(x)))


# --------------------------------------------------------------------------------------------
# Products


def dot(
    lhs: Any,
    rhs: Any,
    *,
    dimension_numbers: Any = None,
    precision: Any = None,
    preferred_element_type: Any = None,
    out_sharding: Any = None,
) -> Any:
    """Vector/matrix products (contracting the last axis of ``lhs`` with the first of ``rhs``),
    or ``dot_general`` when ``dimension_numbers`` are given."""
    if dimension_numbers is None:
        lhs_shape, rhs_shape = get_aval(lhs).shape, get_aval(rhs).shape
        simple = 1 <= len(lhs_shape) <= 2 and 1 <= len(rhs_shape) <= 2
        if not simple or lhs_shape[-1] != rhs_shape[0]:
            raise ValueError(
                "dot: dimension_numbers must be specified when not performing simple "
                f"un-batched matrix-matrix, matrix-vector, or vector-vector products; got "
                f"lhs_shape={lhs_shape} rhs_shape={rhs_shape}{errors.where()}"
            )
        dimension_numbers = (((len(lhs_shape) - 1,), (0,)), ((), ()))
    return dot_general(
        lhs,
        rhs,
        dimension_numbers,
        precision=canonical_precision(precision),
        preferred_element_type=preferred_element_type,
        out_sharding=out_sharding,
    )


def batch_matmul(lhs: Any, rhs: Any, precision: Any = None) -> Any:
    """Matrix products over matching leading (batch) axes."""
    lhs_ndim, rhs_ndim = get_aval(lhs).ndim, get_aval(rhs).ndim
    if min(lhs_ndim, rhs_ndim) < 2:
        raise ValueError(
            f"Arguments to batch_matmul must be at least 2D, got {lhs_ndim}, {rhs_ndim}"
            f"{errors.where()}"
        )
    if lhs_ndim != rhs_ndim:
        raise ValueError(
            f"Arguments to batch_matmul must have same ndim, got {lhs_ndim}, {rhs_ndim}"
            f"{errors.where()}"
        )
    batch = tuple(range(lhs_ndim - 2))
    numbers = (((lhs_ndim - 1,), (rhs_ndim - 2,)), (batch, batch))
    return dot_general(lhs, rhs, numbers, precision=canonical_precision(precision))


def ragged_dot(
    lhs: Any,
    rhs: Any,
    group_sizes: Any,
    precision: Any = None,
    preferred_element_type: Any = None,
    group_offset: Any = None,
    out_sharding: Any = None,
) -> Any:
    """``lhs`` (m, k) times ``rhs`` (g, k, n) where consecutive row groups of ``lhs``, of
    sizes ``group_sizes`` (g,), use their own matrix ``rhs[i]``; rows past the last group
    give zeros. (Every group's product is formed and masked: simple rather than fast.)"""
    if group_offset is not None:
        raise NotImplementedError(f"ragged_dot: group_offset is not supported{errors.where()}")
    lhs_aval, rhs_aval, sizes_aval = get_aval(lhs), get_aval(rhs), get_aval(group_sizes)
    if lhs_aval.ndim != 2 or rhs_aval.ndim != 3 or rhs_aval.shape[1] != lhs_aval.shape[1]:
        raise TypeError(
            f"ragged_dot needs lhs (m, k) and rhs (g, k, n), got {lhs_aval.shape} and "
            f"{rhs_aval.shape}{errors.where()}"
        )
    groups = rhs_aval.shape[0]
    if sizes_aval.shape != (groups,) or not dtypes.is_integer(sizes_aval.dtype):
        raise TypeError(
            f"ragged_dot: group_sizes must be {groups} integers, got {sizes_aval.str_short()}"
            f"{errors.where()}"
        )
    m = lhs_aval.shape[0]
    sizes = convert_element_type(group_sizes, np.int32)
    ends = associative_scan(add, sizes)
    starts = sub(ends, sizes)
    rows = broadcast_in_dim(np.arange(m, dtype=np.int32), (groups, m), (1,))
    inside = bitwise_and(
        ge(rows, broadcast_in_dim(starts, (groups, m), (0,))),
        lt(rows, broadcast_in_dim(ends, (groups, m), (0,))),
    )
    # (m, g, n): every row through every group's matrix, then keep its own group's.
    products = dot_general(
        lhs,
        rhs,
        (((1,), (1,)), ((), ())),
        precision=canonical_precision(precision),
        preferred_element_type=preferred_element_type,
    )
    out_dtype = get_aval(products).dtype
    mask = convert_element_type(transpose(inside, (1, 0)), out_dtype)
    n = rhs_aval.shape[2]
    mask = broadcast_in_dim(mask, (m, groups, n), (0, 1))
    return reduce_sum(mul(products, mask), (1,))


# --------------------------------------------------------------------------------------------
# Elementwise


def _check_inexact(name: str, x: Any) -> None:
    if not dtypes.is_inexact(get_aval(x).dtype):
        raise TypeError(
            f"{name} needs a floating-point or complex operand, got "
            f"{get_aval(x).str_short()}{errors.where()}"
        )


def reciprocal(x: Any) -> Any:
    """``1 / x`` elementwise."""
    _check_inexact("reciprocal", x)
    return integer_pow(x, -1)


def square(x: Any) -> Any:
    """``x * x`` elementwise."""
    return square_(x)


def exp2(x: Any, *, accuracy: Any = None) -> Any:
    """``2 ** x`` elementwise, as ``exp(x * log(2))`` (how XLA lowers it)."""
    _check_inexact("exp2", x)
    aval = get_aval(x)
    real = dtypes.real_dtype(aval.dtype)
    ln2 = np.asarray(np.log(2), real).astype(aval.dtype)
    return exp(mul(x, np.full(aval.shape, ln2, aval.dtype)))


def clz(x: Any) -> Any:
    """The number of leading zero bits of each integer (its width for 0)."""
    aval = get_aval(x)
    if not dtypes.is_integer(aval.dtype):
        raise errors.EmberTypeError(
            f"clz needs an integer operand, got {aval.str_short()}{errors.where()}"
        )
    bits = aval.dtype.itemsize * 8
    # Copy the highest set bit into every lower position; the ones then count its position.
    smeared, shift = x, 1
    while shift < bits:
        amount = np.full(aval.shape, shift, aval.dtype)
        smeared = bitwise_or(smeared, shift_right_logical(smeared, amount))
        shift *= 2
    width = np.full(aval.shape, bits, aval.dtype)
    return sub(width, population_count(smeared))


def mulhi(x: Any, y: Any, /) -> Any:
    """The high half of the double-width product of two integers of one type."""
    x, y = coerce_scalars(x, y)
    aval = get_aval(x)
    if not dtypes.is_integer(aval.dtype) or get_aval(y).dtype != aval.dtype:
        raise TypeError(
            f"mulhi needs two integer operands of one dtype, got {aval.str_short()} and "
            f"{get_aval(y).str_short()}{errors.where()}"
        )
    bits = aval.dtype.itemsize * 8
    if bits > 32:
        raise NotImplementedError(f"mulhi of 64-bit integers{errors.where()}")
    if bits < 32:  # the full product fits in 32 bits
        wide = np.dtype(np.int32 if aval.dtype.kind == "i" else np.uint32)
        product = mul(convert_element_type(x, wide), convert_element_type(y, wide))
        shift = np.full(aval.shape, bits, wide)
        high = shift_right_arithmetic(product, shift) if wide.kind == "i" else (
            shift_right_logical(product, shift))  # fmt: skip
        return convert_element_type(high, aval.dtype)
    unsigned = np.dtype(np.uint32)
    ux, uy = (bitcast_convert_type(v, unsigned) if aval.dtype.kind == "i" else v for v in (x, y))
    high = _mulhi_u32(ux, uy)
    if aval.dtype.kind == "u":
        return high
    # Signed: x_s = x_u - 2^32 [x < 0], so the high word loses y_u where x < 0 and x_u where
    # y < 0 (modulo 2^32).
    zero = np.zeros(aval.shape, unsigned)
    high = sub(high, select_n(lt(x, np.zeros(aval.shape, aval.dtype)), zero, uy))
    high = sub(high, select_n(lt(y, np.zeros(aval.shape, aval.dtype)), zero, ux))
    return bitcast_convert_type(high, aval.dtype)


def _mulhi_u32(x: Any, y: Any) -> Any:
    """High 32 bits of a uint32 product, from 16-bit halves (no 64-bit arithmetic)."""
    shape = get_aval(x).shape
    mask = np.full(shape, 0xFFFF, np.uint32)
    sixteen = np.full(shape, 16, np.uint32)
    x_lo, x_hi = bitwise_and(x, mask), shift_right_logical(x, sixteen)
    y_lo, y_hi = bitwise_and(y, mask), shift_right_logical(y, sixteen)
    lo_lo = mul(x_lo, y_lo)
    hi_lo = mul(x_hi, y_lo)
    lo_hi = mul(x_lo, y_hi)
    hi_hi = mul(x_hi, y_hi)
    # The middle column, with the carry out of the low word.
    middle = add(add(shift_right_logical(lo_lo, sixteen), bitwise_and(hi_lo, mask)),
                    bitwise_and(lo_hi, mask))  # fmt: skip
    high = add(hi_hi, shift_right_logical(hi_lo, sixteen))
    high = add(high, shift_right_logical(lo_hi, sixteen))
    return add(high, shift_right_logical(middle, sixteen))


# --------------------------------------------------------------------------------------------
# Reductions


def reduce_xor(operand: Any, axes: Sequence[int]) -> Any:
    """Bitwise (or logical, for booleans) exclusive or over ``axes``."""
    aval = get_aval(operand)
    if aval.dtype != dtypes.bool_ and not dtypes.is_integer(aval.dtype):
        raise TypeError(
            f"reduce_xor needs integer or boolean operands, got {aval.str_short()}{errors.where()}"
        )
    return reduce(operand, np.zeros((), aval.dtype), bitwise_xor, axes)


def _monoid(computation: Callable, dtype: np.dtype) -> tuple[Callable, Any] | None:
    """The reduction primitive and identity for a recognised ``computation``."""
    if computation is add:
        return reduce_sum, 0
    if computation is mul:
        return reduce_prod, 1
    if computation is max_:
        return reduce_max, extreme_value(dtype, largest=False)
    if computation is min_:
        return reduce_min, extreme_value(dtype, largest=True)
    if dtype == dtypes.bool_ and computation is bitwise_and:
        return reduce_and, True
    if dtype == dtypes.bool_ and computation is bitwise_or:
        return reduce_or, False
    return None


def _is_identity(init: Any, identity: Any, dtype: np.dtype) -> bool:
    if hasattr(init, "aval") and not hasattr(init, "__array__"):
        return False
    try:
        value = np.asarray(init)
    except Exception:  # a tracer: not known now
        return False
    return value.shape == () and bool(np.asarray(identity, dtype) == value.astype(dtype))


def reduce(
    operands: Any,
    init_values: Any,
    computation: Callable[[Any, Any], Any],
    dimensions: Sequence[int],
    out_sharding: Any = None,
) -> Any:
    """Reduce ``operands`` (an array or a pytree of arrays of one shape) over ``dimensions``
    with ``computation``, starting from ``init_values`` (of the operands' structure)."""
    flat, tree = tree_flatten(operands)
    flat_init, init_tree = tree_flatten(init_values)
    if tree != init_tree:
        raise ValueError(
            f"reduce: operands {tree} and init_values {init_tree} must have the same "
            f"structure{errors.where()}"
        )
    if not flat:
        raise ValueError(f"reduce needs at least one operand{errors.where()}")
    shape = get_aval(flat[0]).shape
    dims = _reduced_dims(dimensions, len(shape))
    for x in flat:
        if get_aval(x).shape != shape:
            raise ValueError(
                f"reduce: operands must share a shape, got "
                f"{[get_aval(y).shape for y in flat]}{errors.where()}"
            )
    if len(flat) == 1:
        monoid = _monoid(computation, get_aval(flat[0]).dtype)
        if monoid is not None:
            reducer, identity = monoid
            out = reducer(flat[0], dims)
            if not _is_identity(flat_init[0], identity, get_aval(flat[0]).dtype):
                out = computation(out, flat_init[0])
            return tree_unflatten(tree, [out])
    outs = _reduce_by_halving(flat, flat_init, tree, computation, dims, shape)
    return tree_unflatten(tree, outs)


def _reduced_dims(dimensions: Sequence[int], ndim: int) -> tuple[int, ...]:
    dims = tuple(int(d) for d in dimensions)
    if len(set(dims)) != len(dims) or any(not 0 <= d < ndim for d in dims):
        raise ValueError(
            f"reduce: dimensions {dims} must be distinct axes of a rank-{ndim} operand"
            f"{errors.where()}"
        )
    return dims


def _reduce_by_halving(flat, flat_init, tree, computation, dims, shape) -> list[Any]:
    kept = [d for d in range(len(shape)) if d not in dims]
    kept_shape = tuple(shape[d] for d in kept)
    size = int(np.prod([shape[d] for d in dims], dtype=np.int64))
    # Move the reduced axes last and merge them into one.
    flat = [reshape(transpose(x, (*kept, *dims)), (*kept_shape, size)) for x in flat]
    inits = [broadcast_in_dim(i, kept_shape, ()) for i in flat_init]
    if size == 0:
        return [convert_element_type(i, get_aval(x).dtype) for i, x in zip(inits, flat)]
    combine = _flat_combiner(computation, tree)
    axis = len(kept_shape)
    while size > 1:
        half = size // 2
        low = [slice_along(x, axis, 0, half) for x in flat]
        high = [slice_along(x, axis, half, 2 * half) for x in flat]
        merged = combine(low, high)
        if size % 2:  # the odd one out joins the first entry
            last = [slice_along(x, axis, size - 1, size) for x in flat]
            first = combine([slice_along(m, axis, 0, 1) for m in merged], last)
            merged = [
                concatenate([f, slice_along(m, axis, 1, half)], axis) if half > 1 else f
                for f, m in zip(first, merged)
            ]
        flat, size = merged, half
    flat = [reshape(x, kept_shape) for x in flat]
    return combine(inits, flat)


def _flat_combiner(computation: Callable, tree) -> Callable[[list, list], list]:
    def combine(a: list[Any], b: list[Any]) -> list[Any]:
        out = computation(tree_unflatten(tree, a), tree_unflatten(tree, b))
        leaves, out_tree = tree_flatten(out)
        if out_tree != tree:
            raise TypeError(
                f"reduce: computation returned {out_tree}, expected the operands' structure "
                f"{tree}{errors.where()}"
            )
        return leaves

    return combine
