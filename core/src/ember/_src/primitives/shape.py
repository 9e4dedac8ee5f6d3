"""Shape and layout primitives: broadcast, reshape, transpose, slice, pad, concatenate, ...

``reduce_sum`` lives here too, because it is the transpose of ``broadcast_in_dim`` (and vice
versa); ``convert_element_type`` and ``iota`` because every other op family needs them. The
batching helpers at the end (moving and materialising batch axes) are used by all op families.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import Primitive, ShapedArray, Zero, get_aval, tangent_aval
from ember._src.interpreters.ad import is_undefined
from ember._src.interpreters.ad_util import zeros
from ember._src.interpreters.batching import not_mapped
from ember._src.lowering.mlir import i64_array
from ember._src.primitives.sharding_constraint import laid_out


def _shape_error(message: str) -> errors.EmberTypeError:
    return errors.EmberTypeError(message + errors.where())


def _linear_jvp(primitive: Primitive):
    """JVP rule of a primitive linear in its (single) operand: apply it to the tangent."""

    def jvp(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        out = primitive.bind(x, **params)
        if type(t) is Zero:
            return out, Zero(tangent_aval(get_aval(out)))
        return out, primitive.bind(t, **params)

    return jvp


# --------------------------------------------------------------------------------------------
# broadcast_in_dim

broadcast_in_dim_p = Primitive("broadcast_in_dim")


def broadcast_in_dim(
    operand: Any,
    shape: Sequence[int],
    broadcast_dimensions: Sequence[int],
    *,
    out_sharding: Any = None,
) -> Any:
    """``operand`` broadcast to ``shape``; its axis i becomes ``broadcast_dimensions[i]``."""
    shape, dims = tuple(shape), tuple(broadcast_dimensions)
    aval = get_aval(operand)
    if aval.shape == shape and dims == tuple(range(len(shape))):
        out = operand
    else:
        out = broadcast_in_dim_p.bind(operand, shape=shape, broadcast_dimensions=dims)
    return out if out_sharding is None else laid_out(out, out_sharding)


def broadcast_to_shape(x: Any, shape: Sequence[int]) -> Any:
    """NumPy-style broadcast of ``x`` to ``shape`` (trailing dimensions aligned)."""
    aval = get_aval(x)
    shape = tuple(shape)
    if aval.shape == shape:
        return x
    offset = len(shape) - aval.ndim
    if offset < 0 or any(d != 1 and d != s for d, s in zip(aval.shape, shape[offset:])):
        raise _shape_error(f"cannot broadcast shape {aval.shape} to {shape}")
    keep = [i for i, d in enumerate(aval.shape) if d == shape[offset + i]]
    if len(keep) != aval.ndim:
        x = reshape(x, tuple(aval.shape[i] for i in keep))
    return broadcast_in_dim(x, shape, tuple(offset + i for i in keep))


@rules.def_abstract_eval(broadcast_in_dim_p)
def _broadcast_in_dim_abstract_eval(x, *, shape, broadcast_dimensions):
    if len(broadcast_dimensions) != x.ndim:
        raise _shape_error(
            f"broadcast_in_dim: operand of rank {x.ndim} needs {x.ndim} broadcast_dimensions, "
            f"got {broadcast_dimensions}"
        )
    for operand_dim, out_dim in enumerate(broadcast_dimensions):
        if not 0 <= out_dim < len(shape) or x.shape[operand_dim] not in (1, shape[out_dim]):
            raise _shape_error(
                f"broadcast_in_dim: cannot broadcast operand shape {x.shape} to {shape} with "
                f"broadcast_dimensions={broadcast_dimensions}"
            )
    return ShapedArray(shape, x.dtype, x.weak_type)


rules.def_jvp(broadcast_in_dim_p)(_linear_jvp(broadcast_in_dim_p))


@rules.def_transpose(broadcast_in_dim_p)
def _broadcast_in_dim_transpose(ct, x, *, shape, broadcast_dimensions):
    in_shape = x.aval.shape
    summed = tuple(i for i in range(len(shape)) if i not in broadcast_dimensions)
    # Dimensions of size 1 in the operand that were expanded are summed too, keeping rank.
    expanded = tuple(
        out_dim
        for operand_dim, out_dim in enumerate(broadcast_dimensions)
        if in_shape[operand_dim] == 1 and shape[out_dim] != 1
    )
    total = reduce_sum(ct, tuple(sorted(summed + expanded)))
    return [reshape(total, in_shape)]


@rules.def_batch(broadcast_in_dim_p)
def _broadcast_in_dim_batch(vals, dims, *, shape, broadcast_dimensions):
    (x,), (d,) = vals, dims
    x = move_axis(x, d, 0)
    size = get_aval(x).shape[0]
    new_dims = (0,) + tuple(b + 1 for b in broadcast_dimensions)
    return broadcast_in_dim(x, (size,) + tuple(shape), new_dims), 0


@rules.def_lowering(broadcast_in_dim_p)
def _broadcast_in_dim_lowering(ctx, x, *, shape, broadcast_dimensions):
    return ctx.broadcast_in_dim(x, ctx.avals_out[0], broadcast_dimensions)


@rules.def_reference(broadcast_in_dim_p)
def _broadcast_in_dim_reference(x, *, shape, broadcast_dimensions):
    expanded_shape = [1] * len(shape)
    for operand_dim, out_dim in enumerate(broadcast_dimensions):
        expanded_shape[out_dim] = x.shape[operand_dim]
    return np.broadcast_to(np.reshape(x, expanded_shape), shape)


# --------------------------------------------------------------------------------------------
# reduce_sum

reduce_sum_p = Primitive("reduce_sum")


def reduce_sum(operand: Any, axes: Sequence[int], *, out_sharding: Any = None) -> Any:
    """The sum of ``operand`` over ``axes``."""
    axes = tuple(axes)
    out = reduce_sum_p.bind(operand, axes=axes) if axes else operand
    return out if out_sharding is None else laid_out(out, out_sharding)


def reduced_shape(shape: tuple[int, ...], axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def check_axes(name: str, aval: ShapedArray, axes: Sequence[int]) -> None:
    for axis in axes:
        if not 0 <= axis < aval.ndim:
            raise _shape_error(f"{name}: axis {axis} is out of range for shape {aval.shape}")
    if len(set(axes)) != len(axes):
        raise _shape_error(f"{name}: repeated axis in {tuple(axes)}")


@rules.def_abstract_eval(reduce_sum_p)
def _reduce_sum_abstract_eval(x, *, axes):
    check_axes("reduce_sum", x, axes)
    return ShapedArray(reduced_shape(x.shape, axes), x.dtype, x.weak_type)


rules.def_jvp(reduce_sum_p)(_linear_jvp(reduce_sum_p))


@rules.def_transpose(reduce_sum_p)
def _reduce_sum_transpose(ct, x, *, axes):
    shape = x.aval.shape
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    return [broadcast_in_dim(ct, shape, kept)]


@rules.def_batch(reduce_sum_p)
def _reduce_sum_batch(vals, dims, *, axes):
    (x,), (d,) = vals, dims
    new_axes = tuple(a + (a >= d) for a in axes)
    out_dim = d - sum(a < d for a in new_axes)
    return reduce_sum(x, new_axes), out_dim


def lower_reduction(ctx, x, axes, hlo_op: str, init: Any) -> str:
    """Lower a reduction over ``axes`` with the binary StableHLO op ``hlo_op``."""
    in_aval, out_aval = ctx.avals_in[0], ctx.avals_out[0]
    scalar = ShapedArray((), in_aval.dtype)
    init_value = ctx.constant(init, scalar)
    body = ctx.region([scalar, scalar], lambda c, a, b: [c.op(hlo_op, [a, b], scalar)])
    return ctx.op(
        "stablehlo.reduce",
        [x, init_value],
        out_aval,
        {"dimensions": i64_array(axes)},
        regions=[body],
    )


@rules.def_lowering(reduce_sum_p)
def _reduce_sum_lowering(ctx, x, *, axes):
    return lower_reduction(ctx, x, axes, "stablehlo.add", 0)


@rules.def_reference(reduce_sum_p)
def _reduce_sum_reference(x, *, axes):
    return np.sum(x, axis=axes, dtype=x.dtype)


# --------------------------------------------------------------------------------------------
# reshape

reshape_p = Primitive("reshape")


def reshape(
    operand: Any,
    new_sizes: Sequence[int],
    dimensions: Sequence[int] | None = None,
    *,
    out_sharding: Any = None,
) -> Any:
    """Reshape ``operand`` (read in row-major order) to ``new_sizes``; with ``dimensions``,
    transpose it by that permutation first."""
    if dimensions is not None:
        operand = transpose(operand, dimensions)
    new_sizes = tuple(int(d) for d in new_sizes)
    if get_aval(operand).shape == new_sizes:
        out = operand
    else:
        out = reshape_p.bind(operand, new_sizes=new_sizes)
    return out if out_sharding is None else laid_out(out, out_sharding)


@rules.def_abstract_eval(reshape_p)
def _reshape_abstract_eval(x, *, new_sizes):
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        raise _shape_error(
            f"cannot reshape an array of shape {x.shape} ({x.size} elements) into shape {new_sizes}"
        )
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


rules.def_jvp(reshape_p)(_linear_jvp(reshape_p))


@rules.def_transpose(reshape_p)
def _reshape_transpose(ct, x, *, new_sizes):
    return [reshape(ct, x.aval.shape)]


@rules.def_batch(reshape_p)
def _reshape_batch(vals, dims, *, new_sizes):
    (x,), (d,) = vals, dims
    x = move_axis(x, d, 0)
    return reshape(x, (get_aval(x).shape[0],) + new_sizes), 0


@rules.def_lowering(reshape_p)
def _reshape_lowering(ctx, x, *, new_sizes):
    return ctx.op("stablehlo.reshape", [x], ctx.avals_out[0])


@rules.def_reference(reshape_p)
def _reshape_reference(x, *, new_sizes):
    return np.reshape(x, new_sizes)


# --------------------------------------------------------------------------------------------
# transpose

transpose_p = Primitive("transpose")


def transpose(operand: Any, permutation: Sequence[int]) -> Any:
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(len(permutation))):
        return operand
    return transpose_p.bind(operand, permutation=permutation)


@rules.def_abstract_eval(transpose_p)
def _transpose_abstract_eval(x, *, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise _shape_error(
            f"transpose: permutation {permutation} is not a permutation of the axes of a "
            f"rank-{x.ndim} array"
        )
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


rules.def_jvp(transpose_p)(_linear_jvp(transpose_p))


@rules.def_transpose(transpose_p)
def _transpose_transpose(ct, x, *, permutation):
    return [transpose(ct, tuple(np.argsort(permutation)))]


@rules.def_batch(transpose_p)
def _transpose_batch(vals, dims, *, permutation):
    (x,), (d,) = vals, dims
    # Keep the batch axis where it is; permute the others around it.
    logical = [p + (p >= d) for p in permutation]
    perm = logical[:d] + [d] + logical[d:]
    return transpose(x, perm), d


@rules.def_lowering(transpose_p)
def _transpose_lowering(ctx, x, *, permutation):
    return ctx.op(
        "stablehlo.transpose", [x], ctx.avals_out[0], {"permutation": i64_array(permutation)}
    )


@rules.def_reference(transpose_p)
def _transpose_reference(x, *, permutation):
    return np.transpose(x, permutation)


# --------------------------------------------------------------------------------------------
# squeeze and expand_dims (both reshapes; squeeze keeps its own name for readable jaxprs)

squeeze_p = Primitive("squeeze")


def squeeze(array: Any, dimensions: Sequence[int]) -> Any:
    dimensions = tuple(sorted(int(d) for d in dimensions))
    if not dimensions:
        return array
    return squeeze_p.bind(array, dimensions=dimensions)


@rules.def_abstract_eval(squeeze_p)
def _squeeze_abstract_eval(x, *, dimensions):
    check_axes("squeeze", x, dimensions)
    for d in dimensions:
        if x.shape[d] != 1:
            raise _shape_error(
                f"cannot squeeze axis {d} of shape {x.shape}: its size is {x.shape[d]}, not 1"
            )
    return ShapedArray(reduced_shape(x.shape, dimensions), x.dtype, x.weak_type)


rules.def_jvp(squeeze_p)(_linear_jvp(squeeze_p))


@rules.def_transpose(squeeze_p)
def _squeeze_transpose(ct, x, *, dimensions):
    return [reshape(ct, x.aval.shape)]


@rules.def_batch(squeeze_p)
def _squeeze_batch(vals, dims, *, dimensions):
    (x,), (d,) = vals, dims
    x = move_axis(x, d, 0)
    return squeeze(x, tuple(a + 1 for a in dimensions)), 0


@rules.def_lowering(squeeze_p)
def _squeeze_lowering(ctx, x, *, dimensions):
    return ctx.op("stablehlo.reshape", [x], ctx.avals_out[0])


@rules.def_reference(squeeze_p)
def _squeeze_reference(x, *, dimensions):
    return np.squeeze(x, axis=dimensions)


def expand_dims(array: Any, dimensions: Sequence[int]) -> Any:
    aval = get_aval(array)
    out_ndim = aval.ndim + len(dimensions)
    dims = sorted(d % out_ndim for d in dimensions)
    shape = list(aval.shape)
    for d in dims:
        shape.insert(d, 1)
    return reshape(array, shape)


# --------------------------------------------------------------------------------------------
# concatenate

concatenate_p = Primitive("concatenate")


def concatenate(operands: Sequence[Any], dimension: int) -> Any:
    if len(operands) == 1:
        return operands[0]
    return concatenate_p.bind(*operands, dimension=dimension)


@rules.def_abstract_eval(concatenate_p)
def _concatenate_abstract_eval(*xs, dimension):
    first = xs[0]
    if not 0 <= dimension < first.ndim:
        raise _shape_error(f"concatenate: axis {dimension} is out of range for {first.shape}")
    for x in xs[1:]:
        if x.dtype != first.dtype:
            raise _shape_error(
                f"concatenate: operands must share a dtype, got {first.dtype} and {x.dtype}"
            )
        if x.ndim != first.ndim or any(
            a != b for i, (a, b) in enumerate(zip(x.shape, first.shape)) if i != dimension
        ):
            raise _shape_error(
                f"concatenate: shapes {first.shape} and {x.shape} differ outside axis {dimension}"
            )
    shape = list(first.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(shape, first.dtype, all(x.weak_type for x in xs))


@rules.def_jvp(concatenate_p)
def _concatenate_jvp(primals, tangents, *, dimension):
    out = concatenate(primals, dimension)
    if all(type(t) is Zero for t in tangents):
        return out, Zero(tangent_aval(get_aval(out)))
    from_zero = [zeros_like_tangent(t) if type(t) is Zero else t for t in tangents]
    return out, concatenate(from_zero, dimension)


@rules.def_transpose(concatenate_p)
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
            result.append(slice_op(ct, start, limit))
        else:
            result.append(None)
        offset += size
    return result


@rules.def_batch(concatenate_p)
def _concatenate_batch(vals, dims, *, dimension):
    size = batch_size(vals, dims)
    moved = [bdim_to_front(x, d, size) for x, d in zip(vals, dims)]
    return concatenate(moved, dimension + 1), 0


@rules.def_lowering(concatenate_p)
def _concatenate_lowering(ctx, *xs, dimension):
    return ctx.op(
        "stablehlo.concatenate", list(xs), ctx.avals_out[0], {"dimension": f"{dimension} : i64"}
    )


@rules.def_reference(concatenate_p)
def _concatenate_reference(*xs, dimension):
    return np.concatenate(xs, axis=dimension)


# --------------------------------------------------------------------------------------------
# slice and pad (each the other's transpose)

slice_p = Primitive("slice")


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


@rules.def_abstract_eval(slice_p)
def _slice_abstract_eval(x, *, start_indices, limit_indices, strides):
    if not len(start_indices) == len(limit_indices) == len(strides) == x.ndim:
        raise _shape_error(f"slice: need {x.ndim} start/limit/stride values for {x.shape}")
    shape = []
    for dim, lo, hi, st in zip(x.shape, start_indices, limit_indices, strides):
        if not 0 <= lo <= hi <= dim or st < 1:
            raise _shape_error(
                f"slice: start {start_indices}, limit {limit_indices}, strides {strides} are "
                f"out of bounds for shape {x.shape}"
            )
        shape.append(0 if hi == lo else (hi - lo + st - 1) // st)
    return ShapedArray(shape, x.dtype, x.weak_type)


rules.def_jvp(slice_p)(_linear_jvp(slice_p))


@rules.def_transpose(slice_p)
def _slice_transpose(ct, x, *, start_indices, limit_indices, strides):
    shape = x.aval.shape
    out_shape = get_aval(ct).shape
    config = []
    for dim, lo, st, out in zip(shape, start_indices, strides, out_shape):
        covered = lo + (out - 1) * st + 1 if out else lo
        config.append((lo, dim - covered, st - 1 if out else 0))
    zero = np.zeros((), get_aval(ct).dtype)
    return [pad(ct, zero, config)]


@rules.def_batch(slice_p)
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


@rules.def_lowering(slice_p)
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


@rules.def_reference(slice_p)
def _slice_reference(x, *, start_indices, limit_indices, strides):
    return x[tuple(slice(lo, hi, st) for lo, hi, st in zip(start_indices, limit_indices, strides))]


pad_p = Primitive("pad")


def pad(operand: Any, padding_value: Any, padding_config: Sequence[tuple[int, int, int]]) -> Any:
    config = tuple((int(lo), int(hi), int(interior)) for lo, hi, interior in padding_config)
    return pad_p.bind(operand, padding_value, padding_config=config)


@rules.def_abstract_eval(pad_p)
def _pad_abstract_eval(x, value, *, padding_config):
    if value.shape != ():
        raise _shape_error(f"pad: padding value must be a scalar, got shape {value.shape}")
    if value.dtype != x.dtype:
        raise _shape_error(f"pad: padding value dtype {value.dtype} differs from {x.dtype}")
    if len(padding_config) != x.ndim:
        raise _shape_error(f"pad: need {x.ndim} (low, high, interior) triples for {x.shape}")
    shape = []
    for dim, (lo, hi, interior) in zip(x.shape, padding_config):
        if interior < 0:
            raise _shape_error(f"pad: interior padding must be non-negative, got {interior}")
        size = lo + hi + dim + max(dim - 1, 0) * interior
        if size < 0:
            raise _shape_error(f"pad: negative padding {(lo, hi)} removes more than {dim} items")
        shape.append(size)
    return ShapedArray(shape, x.dtype, x.weak_type)


@rules.def_jvp(pad_p)
def _pad_jvp(primals, tangents, *, padding_config):
    x, value = primals
    tx, tv = tangents
    out = pad(x, value, padding_config)
    if type(tx) is Zero and type(tv) is Zero:
        return out, Zero(tangent_aval(get_aval(out)))
    tx = zeros_like_tangent(tx) if type(tx) is Zero else tx
    tv = zeros_like_tangent(tv) if type(tv) is Zero else tv
    return out, pad(tx, tv, padding_config)


@rules.def_transpose(pad_p)
def _pad_transpose(ct, x, value, *, padding_config):
    ct_aval = get_aval(ct)
    # Undo negative low/high padding by padding back with zeros, then slice out the operand.
    unneg = [(max(-lo, 0), max(-hi, 0), 0) for lo, hi, _ in padding_config]
    full = pad(ct, np.zeros((), ct_aval.dtype), unneg) if any(any(u) for u in unneg) else ct
    full_shape = get_aval(full).shape
    start = [max(lo, 0) for lo, _, _ in padding_config]
    limit = [s - max(hi, 0) for s, (_, hi, _) in zip(full_shape, padding_config)]
    strides = [interior + 1 for _, _, interior in padding_config]
    ct_x = slice_op(full, start, limit, strides) if is_undefined(x) else None
    if is_undefined(value):
        # The padding value's cotangent is the sum over padded positions; it needs arithmetic
        # this module sits below, and never arises from grad of a constant padding value.
        raise NotImplementedError(
            "ember cannot yet differentiate pad with respect to a traced padding value"
            f"{errors.where()}"
        )
    return [ct_x, None]


@rules.def_batch(pad_p)
def _pad_batch(vals, dims, *, padding_config):
    (x, value), (dx, dv) = vals, dims
    if dv is not not_mapped:
        raise NotImplementedError(
            f"ember cannot yet vmap pad over a batched padding value{errors.where()}"
        )
    config = list(padding_config)
    config.insert(dx, (0, 0, 0))
    return pad(x, value, config), dx


@rules.def_lowering(pad_p)
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


@rules.def_reference(pad_p)
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


# --------------------------------------------------------------------------------------------
# rev

rev_p = Primitive("rev")


def rev(operand: Any, dimensions: Sequence[int]) -> Any:
    dimensions = tuple(int(d) for d in dimensions)
    if not dimensions:
        return operand
    return rev_p.bind(operand, dimensions=dimensions)


@rules.def_abstract_eval(rev_p)
def _rev_abstract_eval(x, *, dimensions):
    check_axes("rev", x, dimensions)
    return x


rules.def_jvp(rev_p)(_linear_jvp(rev_p))


@rules.def_transpose(rev_p)
def _rev_transpose(ct, x, *, dimensions):
    return [rev(ct, dimensions)]


@rules.def_batch(rev_p)
def _rev_batch(vals, dims, *, dimensions):
    (x,), (d,) = vals, dims
    return rev(x, tuple(a + (a >= d) for a in dimensions)), d


@rules.def_lowering(rev_p)
def _rev_lowering(ctx, x, *, dimensions):
    return ctx.op("stablehlo.reverse", [x], ctx.avals_out[0], {"dimensions": i64_array(dimensions)})


@rules.def_reference(rev_p)
def _rev_reference(x, *, dimensions):
    return np.flip(x, axis=dimensions)


# --------------------------------------------------------------------------------------------
# convert_element_type

convert_element_type_p = Primitive("convert_element_type")


def convert_element_type(x: Any, new_dtype: Any, weak_type: bool = False) -> Any:
    new_dtype = dtypes.canonicalize(new_dtype)
    aval = get_aval(x)
    if aval.dtype == new_dtype and aval.weak_type == weak_type:
        return x
    return convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=bool(weak_type))


@rules.def_abstract_eval(convert_element_type_p)
def _convert_abstract_eval(x, *, new_dtype, weak_type):
    dtypes.check_supported(new_dtype, "converting to {dtype}: arrays of dtype {dtype}")
    return ShapedArray(x.shape, new_dtype, weak_type)


@rules.def_jvp(convert_element_type_p)
def _convert_jvp(primals, tangents, *, new_dtype, weak_type):
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    out_tangent_aval = tangent_aval(get_aval(out))
    if type(t) is Zero or not dtypes.is_inexact(new_dtype):
        return out, Zero(out_tangent_aval)
    if dtypes.is_inexact(get_aval(x).dtype):
        return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=False)
    return out, Zero(out_tangent_aval)


@rules.def_transpose(convert_element_type_p)
def _convert_transpose(ct, x, *, new_dtype, weak_type):
    if type(ct) is Zero:
        return [Zero(x.aval)]
    return [convert_element_type_p.bind(ct, new_dtype=x.aval.dtype, weak_type=x.aval.weak_type)]


@rules.def_batch(convert_element_type_p)
def _convert_batch(vals, dims, **params):
    return convert_element_type_p.bind(vals[0], **params), dims[0]


@rules.def_lowering(convert_element_type_p)
def _convert_lowering(ctx, x, *, new_dtype, weak_type):
    in_aval, out_aval = ctx.avals_in[0], ctx.avals_out[0]
    if in_aval.dtype == out_aval.dtype:
        return x
    if out_aval.dtype == dtypes.bool_ and in_aval.dtype != dtypes.bool_:
        # XLA's convert to i1 truncates; NumPy's bool() means "nonzero".
        zero = ctx.full(0, in_aval)
        return ctx.op(
            "stablehlo.compare",
            [x, zero],
            out_aval,
            {
                "comparison_direction": "#stablehlo<comparison_direction NE>",
                "compare_type": _compare_type(in_aval.dtype),
            },
        )
    if (
        dtypes.is_inexact(in_aval.dtype)
        and in_aval.dtype.kind == "c"
        and out_aval.dtype.kind != "c"
    ):
        x = ctx.op("stablehlo.real", [x], ShapedArray(in_aval.shape, _real_dtype(in_aval.dtype)))
    return ctx.convert(x, out_aval)


def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype == np.complex64 else np.dtype(np.float64)


def _compare_type(dtype: np.dtype) -> str:
    if dtypes.is_float(dtype) or dtype.kind == "c":
        return "#stablehlo<comparison_type FLOAT>"
    if dtype.kind == "u" or dtype == dtypes.bool_:
        return "#stablehlo<comparison_type UNSIGNED>"
    return "#stablehlo<comparison_type SIGNED>"


compare_type = _compare_type


@rules.def_reference(convert_element_type_p)
def _convert_reference(x, *, new_dtype, weak_type):
    if x.dtype.kind == "c" and new_dtype.kind != "c":
        x = np.real(x)
    return np.asarray(x).astype(new_dtype)


# --------------------------------------------------------------------------------------------
# iota

iota_p = Primitive("iota")


def iota_along(dtype: Any, shape: Sequence[int], dimension: int = 0) -> Any:
    return iota_p.bind(dtype=dtypes.canonicalize(dtype), shape=tuple(shape), dimension=dimension)


@rules.def_abstract_eval(iota_p)
def _iota_abstract_eval(*, dtype, shape, dimension):
    if not 0 <= dimension < max(len(shape), 1):
        raise _shape_error(f"iota: dimension {dimension} out of range for shape {shape}")
    return ShapedArray(shape, dtype)


@rules.def_jvp(iota_p)
def _iota_jvp(primals, tangents, **params):
    out = iota_p.bind(**params)
    return out, Zero(tangent_aval(get_aval(out)))


@rules.def_lowering(iota_p)
def _iota_lowering(ctx, *, dtype, shape, dimension):
    return ctx.op("stablehlo.iota", [], ctx.avals_out[0], {"iota_dimension": f"{dimension} : i64"})


@rules.def_reference(iota_p)
def _iota_reference(*, dtype, shape, dimension):
    index = [1] * len(shape)
    index[dimension] = shape[dimension]
    return np.broadcast_to(np.arange(shape[dimension], dtype=dtype).reshape(index), shape)


# --------------------------------------------------------------------------------------------
# Helpers shared by every op family


def zeros_like_tangent(zero: Zero) -> Any:
    return zeros(zero.aval)


def move_axis(x: Any, src: int | None, dst: int) -> Any:
    """Move axis ``src`` of ``x`` to position ``dst`` (a no-op when they match)."""
    if src == dst:
        return x
    ndim = get_aval(x).ndim
    perm = [i for i in range(ndim) if i != src]
    perm.insert(dst, src)
    return transpose(x, perm)


def batch_size(vals: Sequence[Any], dims: Sequence[int | None]) -> int:
    for x, d in zip(vals, dims):
        if d is not not_mapped:
            return get_aval(x).shape[d]
    raise ValueError("internal error: no batched operand")


def bdim_to_front(x: Any, d: int | None, size: int) -> Any:
    """``x`` with its batch axis first; an unbatched ``x`` is broadcast along a new one."""
    if d is not_mapped:
        aval = get_aval(x)
        return broadcast_in_dim(x, (size,) + aval.shape, tuple(range(1, aval.ndim + 1)))
    return move_axis(x, d, 0)
