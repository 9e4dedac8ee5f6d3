"""Static slicing and the primitives it transposes to and from: slice, pad, concatenate, rev.

``slice`` and ``pad`` are each the other's transpose; ``concatenate`` transposes to slices of
its cotangent; ``rev`` is its own transpose. All positions are static (known when tracing);
slicing at traced positions is ``dynamic_slice`` (``indexing.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import errors, rules
from ember._src.core import ShapedArray, Zero, get_aval, tangent_aval
from ember._src.interpreters.ad import is_undefined
from ember._src.interpreters.batching import not_mapped
from ember._src.lowering.mlir import i64_array
from ember._src.primitives import sharding_rules
from ember._src.primitives.shape import (
    batch_size,
    bdim_to_front,
    check_axes,
    linear_jvp,
    shape_error,
    typed_like,
    zeros_like_tangent,
)

# --------------------------------------------------------------------------------------------
# concatenate


def _concatenate_abstract_eval(*xs, dimension):
    first = xs[0]
    if not 0 <= dimension < first.ndim:
        raise shape_error(f"concatenate: axis {dimension} is out of range for {first.shape}")
    for x in xs[1:]:
        if x.dtype != first.dtype:
            raise shape_error(
                f"concatenate: operands must share a dtype, got {first.dtype} and {x.dtype}"
            )
        if x.ndim != first.ndim or any(
            a != b for i, (a, b) in enumerate(zip(x.shape, first.shape)) if i != dimension
        ):
            raise shape_error(
                f"concatenate: shapes {first.shape} and {x.shape} differ outside axis {dimension}"
            )
    shape = list(first.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(shape, first.dtype, all(x.weak_type for x in xs))


def _concatenate_jvp(primals, tangents, *, dimension):
    out = concatenate(primals, dimension)
    if all(type(t) is Zero for t in tangents):
        return out, Zero(tangent_aval(get_aval(out)))
    from_zero = [zeros_like_tangent(t) if type(t) is Zero else t for t in tangents]
    return out, concatenate(from_zero, dimension)


def _concatenate_transpose(ct, *xs, dimension):
    result = []
    offset = 0
    ct_shape = get_aval(ct).shape
    for x in xs:
        size = (x.aval if is_undefined(x) else get_aval(x)).shape[dimension]
        if is_undefined(x):
            start = [0] * len(ct_shape)
            limit = list(ct_shape)
            start[dimension], limit[dimension] = offset, offset + size
            result.append(typed_like(slice_op(ct, start, limit), x.aval))
        else:
            result.append(None)
        offset += size
    return result


def _concatenate_batch(vals, dims, *, dimension):
    size = batch_size(vals, dims)
    moved = [bdim_to_front(x, d, size) for x, d in zip(vals, dims)]
    return concatenate(moved, dimension + 1), 0


def _concatenate_lowering(ctx, *xs, dimension):
    return ctx.op(
        "stablehlo.concatenate", list(xs), ctx.avals_out[0], {"dimension": f"{dimension} : i64"}
    )


def _concatenate_reference(*xs, dimension):
    return np.concatenate(xs, axis=dimension)


def _concatenate_sharding(*xs, dimension):
    what = "concatenate"
    mesh = sharding_rules.common_mesh(what, xs)
    for x in xs:
        sharding_rules.require_unsplit(what, xs, x, [dimension], "concatenate joins along it")
    columns = zip(*(sharding_rules.entries(x) for x in xs))
    out = [sharding_rules.consensus(what, xs, column) for column in columns]
    return sharding_rules.build(what, xs, mesh, out)


concatenate_p = rules.define_primitive(
    "concatenate",
    sharding=_concatenate_sharding,
    abstract_eval=_concatenate_abstract_eval,
    jvp=_concatenate_jvp,
    transpose=_concatenate_transpose,
    batch=_concatenate_batch,
    lowering=_concatenate_lowering,
    reference=_concatenate_reference,
)


def concatenate(operands: Sequence[Any], dimension: int) -> Any:
    if len(operands) == 1:
        return operands[0]
    return concatenate_p.bind(*operands, dimension=dimension)


# --------------------------------------------------------------------------------------------
# slice and pad (each the other's transpose)


def _slice_abstract_eval(x, *, start_indices, limit_indices, strides):
    if not len(start_indices) == len(limit_indices) == len(strides) == x.ndim:
        raise shape_error(f"slice: need {x.ndim} start/limit/stride values for {x.shape}")
    shape = []
    for dim, lo, hi, st in zip(x.shape, start_indices, limit_indices, strides):
        if not 0 <= lo <= hi <= dim or st < 1:
            raise shape_error(
                f"slice: start {start_indices}, limit {limit_indices}, strides {strides} are "
                f"out of bounds for shape {x.shape}"
            )
        shape.append(0 if hi == lo else (hi - lo + st - 1) // st)
    return ShapedArray(shape, x.dtype, x.weak_type)


def _slice_transpose(ct, x, *, start_indices, limit_indices, strides):
    shape = x.aval.shape
    out_shape = get_aval(ct).shape
    config = []
    for dim, lo, st, out in zip(shape, start_indices, strides, out_shape):
        covered = lo + (out - 1) * st + 1 if out else lo
        config.append((lo, dim - covered, st - 1 if out else 0))
    zero = np.zeros((), get_aval(ct).dtype)
    return [typed_like(pad(ct, zero, config), x.aval)]


def _slice_batch(vals, dims, *, start_indices, limit_indices, strides):
    (x,), (d,) = vals, dims
    size = get_aval(x).shape[d]
    start = list(start_indices)
    limit = list(limit_indices)
    st = list(strides)
    start.insert(d, 0)
    limit.insert(d, size)
    st.insert(d, 1)
    return slice_op(x, start, limit, st), d


def _slice_lowering(ctx, x, *, start_indices, limit_indices, strides):
    return ctx.op(
        "stablehlo.slice",
        [x],
        ctx.avals_out[0],
        {
            "start_indices": i64_array(start_indices),
            "limit_indices": i64_array(limit_indices),
            "strides": i64_array(strides),
        },
    )


def _slice_reference(x, *, start_indices, limit_indices, strides):
    return x[tuple(slice(lo, hi, st) for lo, hi, st in zip(start_indices, limit_indices, strides))]


def _sliced_dims(x, *, start_indices, limit_indices, strides):
    return [
        d
        for d, (size, lo, hi, st) in enumerate(zip(x.shape, start_indices, limit_indices, strides))
        if (lo, hi, st or 1) != (0, size, 1)
    ]


slice_p = rules.define_primitive(
    "slice",
    sharding=sharding_rules.with_unsplit(
        "slice", _sliced_dims, "a slice takes part of it (slice whole dimensions only)"
    ),
    abstract_eval=_slice_abstract_eval,
    jvp=rules.per_primitive(linear_jvp),
    transpose=_slice_transpose,
    batch=_slice_batch,
    lowering=_slice_lowering,
    reference=_slice_reference,
)


def slice_op(
    operand: Any,
    start_indices: Sequence[int],
    limit_indices: Sequence[int],
    strides: Sequence[int] | None = None,
) -> Any:
    start, limit = tuple(int(i) for i in start_indices), tuple(int(i) for i in limit_indices)
    strides = tuple(int(s) for s in strides) if strides is not None else (1,) * len(start)
    if start == (0,) * len(start) and limit == get_aval(operand).shape and set(strides) <= {1}:
        return operand
    return slice_p.bind(operand, start_indices=start, limit_indices=limit, strides=strides)


def slice_along(x: Any, axis: int, start: int, stop: int) -> Any:
    """``x[start:stop]`` along ``axis`` (static, non-negative bounds; other axes whole)."""
    shape = get_aval(x).shape
    starts = [0] * len(shape)
    limits = list(shape)
    starts[axis], limits[axis] = start, stop
    return slice_op(x, starts, limits)


def _pad_abstract_eval(x, value, *, padding_config):
    if value.shape != ():
        raise shape_error(f"pad: padding value must be a scalar, got shape {value.shape}")
    if value.dtype != x.dtype:
        raise shape_error(f"pad: padding value dtype {value.dtype} differs from {x.dtype}")
    if len(padding_config) != x.ndim:
        raise shape_error(f"pad: need {x.ndim} (low, high, interior) triples for {x.shape}")
    shape = []
    for dim, (lo, hi, interior) in zip(x.shape, padding_config):
        if interior < 0:
            raise shape_error(f"pad: interior padding must be non-negative, got {interior}")
        size = lo + hi + dim + max(dim - 1, 0) * interior
        if size < 0:
            raise shape_error(f"pad: negative padding {(lo, hi)} removes more than {dim} items")
        shape.append(size)
    return ShapedArray(shape, x.dtype, x.weak_type)


def _pad_jvp(primals, tangents, *, padding_config):
    x, value = primals
    tx, tv = tangents
    out = pad(x, value, padding_config)
    if type(tx) is Zero and type(tv) is Zero:
        return out, Zero(tangent_aval(get_aval(out)))
    tx = zeros_like_tangent(tx) if type(tx) is Zero else tx
    tv = zeros_like_tangent(tv) if type(tv) is Zero else tv
    return out, pad(tx, tv, padding_config)


def _pad_transpose(ct, x, value, *, padding_config):
    ct_aval = get_aval(ct)
    # Undo negative low/high padding by padding back with zeros, then slice out the operand.
    unneg = [(max(-lo, 0), max(-hi, 0), 0) for lo, hi, _ in padding_config]
    full = pad(ct, np.zeros((), ct_aval.dtype), unneg) if any(any(u) for u in unneg) else ct
    full_shape = get_aval(full).shape
    start = [max(lo, 0) for lo, _, _ in padding_config]
    limit = [s - max(hi, 0) for s, (_, hi, _) in zip(full_shape, padding_config)]
    strides = [interior + 1 for _, _, interior in padding_config]
    ct_x = typed_like(slice_op(full, start, limit, strides), x.aval) if is_undefined(x) else None
    if is_undefined(value):
        # The padding value's cotangent is the sum over padded positions; it needs arithmetic
        # this module sits below, and never arises from grad of a constant padding value.
        raise NotImplementedError(
            "ember cannot yet differentiate pad with respect to a traced padding value"
            f"{errors.where()}"
        )
    return [ct_x, None]


def _pad_batch(vals, dims, *, padding_config):
    (x, value), (dx, dv) = vals, dims
    if dv is not not_mapped:
        raise NotImplementedError(
            f"ember cannot yet vmap pad over a batched padding value{errors.where()}"
        )
    config = list(padding_config)
    config.insert(dx, (0, 0, 0))
    return pad(x, value, config), dx


def _pad_lowering(ctx, x, value, *, padding_config):
    lows, highs, interiors = zip(*padding_config) if padding_config else ((), (), ())
    return ctx.op(
        "stablehlo.pad",
        [x, value],
        ctx.avals_out[0],
        {
            "edge_padding_low": i64_array(lows),
            "edge_padding_high": i64_array(highs),
            "interior_padding": i64_array(interiors),
        },
    )


def _pad_reference(x, value, *, padding_config):
    for axis, (lo, hi, interior) in enumerate(padding_config):
        if interior:
            n = x.shape[axis]
            shape = list(x.shape)
            shape[axis] = n + max(n - 1, 0) * interior
            spread = np.full(shape, value, x.dtype)
            index = [slice(None)] * x.ndim
            index[axis] = slice(None, None, interior + 1)
            spread[tuple(index)] = x
            x = spread
        pad_width = [(0, 0)] * x.ndim
        pad_width[axis] = (max(lo, 0), max(hi, 0))
        x = np.pad(x, pad_width, constant_values=value)
        index = [slice(None)] * x.ndim
        index[axis] = slice(max(-lo, 0), x.shape[axis] - max(-hi, 0))
        x = x[tuple(index)]
    return x


def _padded_dims(x, value, *, padding_config):
    return [d for d, config in enumerate(padding_config) if tuple(config) != (0, 0, 0)]


pad_p = rules.define_primitive(
    "pad",
    sharding=sharding_rules.with_unsplit("pad", _padded_dims, "padding changes its size"),
    abstract_eval=_pad_abstract_eval,
    jvp=_pad_jvp,
    transpose=_pad_transpose,
    batch=_pad_batch,
    lowering=_pad_lowering,
    reference=_pad_reference,
)


def pad(operand: Any, padding_value: Any, padding_config: Sequence[tuple[int, int, int]]) -> Any:
    config = tuple((int(lo), int(hi), int(interior)) for lo, hi, interior in padding_config)
    return pad_p.bind(operand, padding_value, padding_config=config)


# --------------------------------------------------------------------------------------------
# rev


def _rev_abstract_eval(x, *, dimensions):
    check_axes("rev", x, dimensions)
    return x


def _rev_transpose(ct, x, *, dimensions):
    return [rev(ct, dimensions)]


def _rev_batch(vals, dims, *, dimensions):
    (x,), (d,) = vals, dims
    return rev(x, tuple(a + (a >= d) for a in dimensions)), d


def _rev_lowering(ctx, x, *, dimensions):
    return ctx.op("stablehlo.reverse", [x], ctx.avals_out[0], {"dimensions": i64_array(dimensions)})


def _rev_reference(x, *, dimensions):
    return np.flip(x, axis=dimensions)


rev_p = rules.define_primitive(
    "rev",
    sharding=sharding_rules.same_as_operand,
    abstract_eval=_rev_abstract_eval,
    jvp=rules.per_primitive(linear_jvp),
    transpose=_rev_transpose,
    batch=_rev_batch,
    lowering=_rev_lowering,
    reference=_rev_reference,
)


def rev(operand: Any, dimensions: Sequence[int]) -> Any:
    dimensions = tuple(int(d) for d in dimensions)
    if not dimensions:
        return operand
    return rev_p.bind(operand, dimensions=dimensions)
