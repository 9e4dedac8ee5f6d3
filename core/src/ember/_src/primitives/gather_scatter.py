"""``gather`` and the ``scatter`` family, with XLA's (and JAX's) dimension numbers.

The index vector is always the last axis of ``indices``. Both primitives support batching
dimensions (``operand_batching_dims`` / ``*_indices_batching_dims``), which is how ``vmap``
batches them without materialising iotas. ``gather`` clamps out-of-range starts (XLA's
semantics); out-of-range ``scatter`` updates are dropped (also XLA's). The NumPy-level
wrappers normalise negative indices first, as NumPy does.

Differentiation: ``gather`` and ``scatter_add`` are linear (each transposes to the other);
``scatter`` (replace) differentiates through the update that wins each position (JAX's rule);
``scatter_min``/``scatter_max`` average the derivative over ties; ``scatter_mul`` with respect to
its updates needs unique indices (JAX's restriction).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import Primitive, ShapedArray, Zero, get_aval
from ember._src.interpreters.ad import is_undefined
from ember._src.interpreters.ad_util import zeros
from ember._src.interpreters.batching import not_mapped
from ember._src.lowering.mlir import i64_array
from ember._src.primitives.arithmetic import add, div, mul
from ember._src.primitives.comparisons import eq
from ember._src.primitives.selection import select_n
from ember._src.primitives.shape import (
    bdim_to_front,
    broadcast_in_dim,
    iota_along,
    move_axis,
    reshape,
)


@dataclass(frozen=True)
class GatherDimensionNumbers:
    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


@dataclass(frozen=True)
class ScatterDimensionNumbers:
    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


# --------------------------------------------------------------------------------------------
# gather


def _gather_shape(operand: ShapedArray, indices: ShapedArray, dn, slice_sizes) -> tuple:
    if len(slice_sizes) != operand.ndim:
        raise errors.EmberTypeError(
            f"gather: slice_sizes {slice_sizes} must have one entry per operand dimension "
            f"({operand.ndim}){errors.where()}"
        )
    for d, size in enumerate(slice_sizes):
        if not 0 <= size <= operand.shape[d]:
            raise errors.EmberTypeError(
                f"gather: slice size {size} exceeds operand dimension {d} of size "
                f"{operand.shape[d]}{errors.where()}"
            )
    if not indices.ndim or indices.shape[-1] != len(dn.start_index_map):
        raise errors.EmberTypeError(
            f"gather: the last axis of indices {indices.shape} must hold "
            f"{len(dn.start_index_map)} start indices{errors.where()}"
        )
    batch_shape = indices.shape[:-1]
    dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    offsets = [s for d, s in enumerate(slice_sizes) if d not in dropped]
    rank = len(batch_shape) + len(offsets)
    shape, batch_it, offset_it = [], iter(batch_shape), iter(offsets)
    for position in range(rank):
        shape.append(next(offset_it) if position in dn.offset_dims else next(batch_it))
    return tuple(shape)


def _gather_abstract_eval(operand, indices, *, dimension_numbers, slice_sizes, **_):
    if not dtypes.is_integer(indices.dtype):
        raise errors.EmberTypeError(f"gather: indices must be integers, got {indices.str_short()}")
    shape = _gather_shape(operand, indices, dimension_numbers, slice_sizes)
    return ShapedArray(shape, operand.dtype, operand.weak_type)


def _window_starts(operand_shape, sizes, dn_start_map, start_vector, batching, batch_index):
    """The full start of one window: clamped starts on mapped dims, batch positions on
    batching dims, 0 elsewhere."""
    start = [0] * len(operand_shape)
    for d, value in zip(dn_start_map, start_vector):
        start[d] = int(np.clip(int(value), 0, operand_shape[d] - sizes[d]))
    for operand_dim, index_dim in batching:
        start[operand_dim] = batch_index[index_dim]
    return start


def _gather_reference(operand, indices, *, dimension_numbers, slice_sizes, **_):
    dn = dimension_numbers
    out_shape = _gather_shape(
        ShapedArray(operand.shape, operand.dtype),
        ShapedArray(indices.shape, indices.dtype),
        dn,
        slice_sizes,
    )
    batch_positions = [p for p in range(len(out_shape)) if p not in dn.offset_dims]
    dropped = tuple(sorted(set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)))
    batching = list(zip(dn.operand_batching_dims, dn.start_indices_batching_dims))
    if operand.ndim and indices.ndim:
        return _gather_vectorised(operand, indices, dn, slice_sizes, dropped, batch_positions)
    out = np.zeros(out_shape, operand.dtype)
    for b in itertools.product(*[range(n) for n in indices.shape[:-1]]):
        start = _window_starts(
            operand.shape, slice_sizes, dn.start_index_map, indices[b], batching, b
        )
        window = operand[tuple(slice(s, s + n) for s, n in zip(start, slice_sizes))]
        window = window.reshape([n for d, n in enumerate(slice_sizes) if d not in dropped])
        target: list[Any] = [slice(None)] * len(out_shape)
        for position, value in zip(batch_positions, b):
            target[position] = value
        out[tuple(target)] = window
    return out


def _gather_vectorised(operand, indices, dn, slice_sizes, dropped, batch_positions):
    """The gather as one NumPy fancy index: per operand dim, every window's start (clamped,
    as XLA) plus the offsets within the window (a per-window loop is slow on big inputs)."""
    batch_shape = indices.shape[:-1]
    nb, rank = len(batch_shape), operand.ndim
    batching = dict(zip(dn.operand_batching_dims, dn.start_indices_batching_dims))
    picks = []
    for d in range(rank):
        if d in dn.start_index_map:
            column = indices[..., dn.start_index_map.index(d)].astype(np.int64)
            start = np.clip(column, 0, operand.shape[d] - slice_sizes[d])
        elif d in batching:
            axis = batching[d]
            start = np.arange(batch_shape[axis]).reshape(
                [n if a == axis else 1 for a, n in enumerate(batch_shape)]
            )
        else:
            start = np.zeros((1,) * nb, np.int64)
        offsets = np.arange(slice_sizes[d]).reshape([-1 if e == d else 1 for e in range(rank)])
        picks.append(np.reshape(start, np.shape(start) + (1,) * rank) + offsets)
    windows = operand[tuple(picks)]  # batch_shape + slice_sizes
    kept = [n for d, n in enumerate(slice_sizes) if d not in dropped]
    windows = windows.reshape(tuple(batch_shape) + tuple(kept))
    order = [
        nb + dn.offset_dims.index(p) if p in dn.offset_dims else batch_positions.index(p)
        for p in range(windows.ndim)
    ]
    return np.ascontiguousarray(np.transpose(windows, order))


def _dims(name: str, values) -> str:
    return f"{name} = [{', '.join(str(v) for v in values)}]"


def _gather_lowering(ctx, operand, indices, *, dimension_numbers, slice_sizes, **params):
    dn = dimension_numbers
    index_vector_dim = ctx.avals_in[1].ndim - 1
    fields = [
        _dims("offset_dims", dn.offset_dims),
        _dims("collapsed_slice_dims", dn.collapsed_slice_dims),
        _dims("operand_batching_dims", dn.operand_batching_dims),
        _dims("start_indices_batching_dims", dn.start_indices_batching_dims),
        _dims("start_index_map", dn.start_index_map),
        f"index_vector_dim = {index_vector_dim}",
    ]
    attrs = {
        "dimension_numbers": "#stablehlo.gather<" + ", ".join(fields) + ">",
        "indices_are_sorted": "true" if params["indices_are_sorted"] else "false",
        "slice_sizes": i64_array(slice_sizes),
    }
    return ctx.op("stablehlo.gather", [operand, indices], ctx.avals_out[0], attrs)


def _gather_jvp(primals, tangents, **params):
    operand, indices = primals
    out = gather_p.bind(operand, indices, **params)
    t = tangents[0]
    if type(t) is Zero:
        return out, Zero(get_aval(out).update(weak_type=False))
    return out, gather_p.bind(t, indices, **params)


def _gather_transpose(ct, operand, indices, *, dimension_numbers, slice_sizes, **params):
    if is_undefined(indices):
        raise AssertionError("internal error: gather indices cannot be linear")
    if type(ct) is Zero:
        return [Zero(operand.aval), None]
    dn = dimension_numbers
    scatter_dn = ScatterDimensionNumbers(
        update_window_dims=dn.offset_dims,
        inserted_window_dims=dn.collapsed_slice_dims,
        scatter_dims_to_operand_dims=dn.start_index_map,
        operand_batching_dims=dn.operand_batching_dims,
        scatter_indices_batching_dims=dn.start_indices_batching_dims,
    )
    base = zeros(operand.aval)
    out = scatter_add_p.bind(
        base,
        indices,
        ct,
        dimension_numbers=scatter_dn,
        indices_are_sorted=params["indices_are_sorted"],
        unique_indices=params["unique_indices"],
    )
    return [out, None]


def _gather_batch(vals, dims, *, dimension_numbers, slice_sizes, **params):
    operand, indices = vals
    operand_dim, indices_dim = dims
    dn = dimension_numbers
    shift = lambda ds: tuple(d + 1 for d in ds)
    if operand_dim is not not_mapped and indices_dim is not not_mapped:
        operand = move_axis(operand, operand_dim, 0)
        indices = move_axis(indices, indices_dim, 0)
        new_dn = GatherDimensionNumbers(
            offset_dims=shift(dn.offset_dims),
            collapsed_slice_dims=shift(dn.collapsed_slice_dims),
            start_index_map=shift(dn.start_index_map),
            operand_batching_dims=(0, *shift(dn.operand_batching_dims)),
            start_indices_batching_dims=(0, *shift(dn.start_indices_batching_dims)),
        )
        sizes = (1, *slice_sizes)
    elif operand_dim is not not_mapped:
        operand = move_axis(operand, operand_dim, 0)
        new_dn = GatherDimensionNumbers(
            offset_dims=(0, *shift(dn.offset_dims)),
            collapsed_slice_dims=shift(dn.collapsed_slice_dims),
            start_index_map=shift(dn.start_index_map),
            operand_batching_dims=shift(dn.operand_batching_dims),
            start_indices_batching_dims=dn.start_indices_batching_dims,
        )
        sizes = (get_aval(operand).shape[0], *slice_sizes)
    else:
        indices = move_axis(indices, indices_dim, 0)
        new_dn = GatherDimensionNumbers(
            offset_dims=shift(dn.offset_dims),
            collapsed_slice_dims=dn.collapsed_slice_dims,
            start_index_map=dn.start_index_map,
            operand_batching_dims=dn.operand_batching_dims,
            start_indices_batching_dims=shift(dn.start_indices_batching_dims),
        )
        sizes = tuple(slice_sizes)
    out = gather_p.bind(operand, indices, dimension_numbers=new_dn, slice_sizes=sizes, **params)
    return out, 0


gather_p = rules.define_primitive(
    "gather",
    sharding=rules.NOT_SHARDABLE,
    abstract_eval=_gather_abstract_eval,
    jvp=_gather_jvp,
    transpose=_gather_transpose,
    batch=_gather_batch,
    lowering=_gather_lowering,
    reference=_gather_reference,
)


def gather(
    operand: Any,
    indices: Any,
    dimension_numbers: GatherDimensionNumbers,
    slice_sizes: tuple[int, ...],
    *,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
) -> Any:
    """XLA's gather (clamping starts into range). ``indices`` end with the index vector."""
    return gather_p.bind(
        operand,
        indices,
        dimension_numbers=dimension_numbers,
        slice_sizes=tuple(int(s) for s in slice_sizes),
        indices_are_sorted=bool(indices_are_sorted),
        unique_indices=bool(unique_indices),
    )


def gather_fill_value(dtype: np.dtype) -> Any:
    """JAX's default for out-of-bounds gathers in ``mode="fill"``: NaN for inexact types,
    True for booleans, the minimum of signed and the maximum of unsigned integers."""
    if dtypes.is_inexact(dtype):
        return np.nan
    if dtype == dtypes.bool_:
        return True
    info = np.iinfo(dtype)
    return info.min if dtype.kind == "i" else info.max


# --------------------------------------------------------------------------------------------
# The scatter family: rules its members share


def _scatter_abstract_eval_rule(primitive: Primitive):
    def abstract_eval(operand, indices, updates, *, dimension_numbers, **_):
        if updates.dtype != operand.dtype:
            raise errors.EmberTypeError(
                f"{primitive.name}: updates {updates.str_short()} must have the operand's dtype "
                f"{dtypes.short_name(operand.dtype)}{errors.where()}"
            )
        _check_scatter(primitive.name, operand, indices, updates, dimension_numbers)
        return operand.update(weak_type=False)

    return abstract_eval


def _check_scatter(name, operand, indices, updates, dn) -> None:
    if not dtypes.is_integer(indices.dtype) or not indices.ndim:
        raise errors.EmberTypeError(f"{name}: indices must be an integer array{errors.where()}")
    scatter_dims = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
    if [updates.shape[d] for d in scatter_dims] != list(indices.shape[:-1]):
        raise errors.EmberTypeError(
            f"{name}: updates {updates.shape} do not match indices {indices.shape} "
            f"(scatter dims {scatter_dims}){errors.where()}"
        )


def _scatter_reference_rule(combine):
    """The reference rule of the member that combines an update into the operand by
    ``combine(current, update)``."""

    def reference(operand, indices, updates, *, dimension_numbers, **_):
        return _scatter_reference(operand, indices, updates, dimension_numbers, combine)

    return reference


def _scatter_reference(operand, indices, updates, dn, combine):
    out = np.array(operand, copy=True)
    window_operand_dims = [
        d
        for d in range(operand.ndim)
        if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims
    ]
    scatter_dims = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
    window_shape = [updates.shape[d] for d in dn.update_window_dims]
    batching = list(zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims))
    for b in itertools.product(*[range(n) for n in indices.shape[:-1]]):
        start = [0] * operand.ndim
        for d, value in zip(dn.scatter_dims_to_operand_dims, indices[b]):
            start[d] = int(value)
        for operand_dim, index_dim in batching:
            start[operand_dim] = b[index_dim]
        sizes = [1] * operand.ndim
        for d, n in zip(window_operand_dims, window_shape):
            sizes[d] = n
        if any(s < 0 or s + n > dim for s, n, dim in zip(start, sizes, operand.shape)):
            continue  # XLA drops out-of-range updates
        source: list[Any] = [slice(None)] * updates.ndim
        for d, value in zip(scatter_dims, b):
            source[d] = value
        window = updates[tuple(source)].reshape(sizes)
        region = tuple(slice(s, s + n) for s, n in zip(start, sizes))
        out[region] = combine(out[region], window)
    return out


def _scatter_lowering_rule(hlo_combiner: str | None):
    """The lowering of the member whose update region applies ``hlo_combiner`` (None:
    the update replaces the operand's entry)."""

    def lowering(ctx, operand, indices, updates, *, dimension_numbers, **params):
        return _scatter_lowering(
            ctx, operand, indices, updates, dimension_numbers, hlo_combiner, params
        )

    return lowering


def _scatter_lowering(ctx, operand, indices, updates, dn, hlo_combiner, params):
    fields = [
        _dims("update_window_dims", dn.update_window_dims),
        _dims("inserted_window_dims", dn.inserted_window_dims),
        _dims("input_batching_dims", dn.operand_batching_dims),
        _dims("scatter_indices_batching_dims", dn.scatter_indices_batching_dims),
        _dims("scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims),
        f"index_vector_dim = {ctx.avals_in[1].ndim - 1}",
    ]
    attrs = {
        "scatter_dimension_numbers": "#stablehlo.scatter<" + ", ".join(fields) + ">",
        "indices_are_sorted": "true" if params["indices_are_sorted"] else "false",
        "unique_indices": "true" if params["unique_indices"] else "false",
    }
    scalar = ShapedArray((), ctx.avals_in[0].dtype)

    def combiner(c, current, update):
        if hlo_combiner is None:
            return [update]
        return [c.op(hlo_combiner, [current, update], scalar)]

    region = ctx.region([scalar, scalar], combiner)
    return ctx.op(
        "stablehlo.scatter", [operand, indices, updates], ctx.avals_out[0], attrs, regions=[region]
    )


def _scatter_batch_rule(primitive: Primitive):
    def batch(vals, dims, *, dimension_numbers, **params):
        return _scatter_batch(primitive, vals, dims, dimension_numbers, params)

    return batch


def _scatter_batch(primitive, vals, dims, dn, params):
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    operand, indices, updates = (bdim_to_front(v, d, size) for v, d in zip(vals, dims))
    shift = lambda ds: tuple(d + 1 for d in ds)
    new_dn = ScatterDimensionNumbers(
        update_window_dims=shift(dn.update_window_dims),
        inserted_window_dims=shift(dn.inserted_window_dims),
        scatter_dims_to_operand_dims=shift(dn.scatter_dims_to_operand_dims),
        operand_batching_dims=(0, *shift(dn.operand_batching_dims)),
        scatter_indices_batching_dims=(0, *shift(dn.scatter_indices_batching_dims)),
    )
    out = primitive.bind(operand, indices, updates, dimension_numbers=new_dn, **params)
    return out, 0


def _gather_numbers(dn: ScatterDimensionNumbers) -> GatherDimensionNumbers:
    return GatherDimensionNumbers(
        offset_dims=dn.update_window_dims,
        collapsed_slice_dims=dn.inserted_window_dims,
        start_index_map=dn.scatter_dims_to_operand_dims,
        operand_batching_dims=dn.operand_batching_dims,
        start_indices_batching_dims=dn.scatter_indices_batching_dims,
    )


def _window_sizes(operand: ShapedArray, updates: ShapedArray, dn) -> tuple[int, ...]:
    sizes = []
    window = iter(updates.shape[d] for d in dn.update_window_dims)
    for d in range(operand.ndim):
        dropped = d in dn.inserted_window_dims or d in dn.operand_batching_dims
        sizes.append(1 if dropped else next(window))
    return tuple(sizes)


def _gather_updates(ct, indices, updates_aval, operand_aval, dn, params):
    return gather_p.bind(
        ct,
        indices,
        dimension_numbers=_gather_numbers(dn),
        slice_sizes=_window_sizes(operand_aval, updates_aval, dn),
        indices_are_sorted=params["indices_are_sorted"],
        unique_indices=params["unique_indices"],
    )


def _instantiate(tangent: Any, like: Any) -> Any:
    return zeros(get_aval(like)) if type(tangent) is Zero else tangent


def _aval(x: Any) -> ShapedArray:
    return x.aval if is_undefined(x) else get_aval(x)


# --------------------------------------------------------------------------------------------
# scatter (replace)


def _scatter_jvp(primals, tangents, **params):
    """With unique indices, the tangent is the same scatter of the tangents. Otherwise the
    update that wins each position must win for the tangent (and the cotangent) too: as JAX
    does, scatter each update's id, gather back which id won where each update points, and
    mask the losers (and the overwritten operand entries) out. What remains is a scatter_add
    of masked values: the same primal, and linear, so reverse mode agrees with forward mode."""
    operand, indices, updates = primals
    t_op, _, t_up = tangents
    if params["unique_indices"]:
        out = scatter_p.bind(operand, indices, updates, **params)
        if type(t_op) is Zero and type(t_up) is Zero:
            return out, Zero(get_aval(out))
        t_op = zeros(get_aval(operand)) if type(t_op) is Zero else t_op
        t_up = zeros(get_aval(updates)) if type(t_up) is Zero else t_up
        return out, scatter_p.bind(t_op, indices, t_up, **params)
    keep_operand, keep_update = _winners(operand, indices, updates, params)
    add_params = {**params, "unique_indices": False}

    def masked_scatter(op, up):
        op = select_n(keep_operand, zeros(get_aval(op)), op)
        up = select_n(keep_update, zeros(get_aval(up)), up)
        return scatter_add_p.bind(op, indices, up, **add_params)

    out = masked_scatter(operand, updates)
    if type(t_op) is Zero and type(t_up) is Zero:
        return out, Zero(get_aval(out))
    t_op = zeros(get_aval(operand)) if type(t_op) is Zero else t_op
    t_up = zeros(get_aval(updates)) if type(t_up) is Zero else t_up
    return out, masked_scatter(t_op, t_up)


def _winners(operand, indices, updates, params):
    """Boolean masks: operand entries no update overwrites, and updates that win their
    position (ids start at 1, so 0 marks "nobody wrote here")."""
    dn = params["dimension_numbers"]
    up_aval, op_aval = get_aval(updates), get_aval(operand)
    scatter_dims = [d for d in range(up_aval.ndim) if d not in dn.update_window_dims]
    count = int(np.prod([up_aval.shape[d] for d in scatter_dims], dtype=np.int64))
    ids = reshape(iota_along(dtypes.int32, (count,), 0), [up_aval.shape[d] for d in scatter_dims])
    ids = add(ids, np.int32(1))
    update_ids = broadcast_in_dim(ids, up_aval.shape, scatter_dims)
    blank = broadcast_in_dim(np.zeros((), np.int32), op_aval.shape, ())
    written = scatter_p.bind(blank, indices, update_ids, **params)
    winning = _gather_updates(written, indices, up_aval, op_aval, dn, params)
    return eq(written, np.int32(0)), eq(winning, update_ids)


def _scatter_transpose(ct, operand, indices, updates, *, dimension_numbers, **params):
    if type(ct) is Zero:
        return [Zero(_aval(operand)), None, Zero(_aval(updates))]
    ct_operand = ct_updates = None
    if is_undefined(operand):  # the overwritten positions get no cotangent
        blank = zeros(_aval(updates))
        ct_operand = scatter_p.bind(
            ct, indices, blank, dimension_numbers=dimension_numbers, **params
        )
    if is_undefined(updates):
        ct_updates = _gather_updates(
            ct, indices, updates.aval, _aval(operand), dimension_numbers, params
        )
    return [ct_operand, None, ct_updates]


scatter_p = rules.define_primitive(
    "scatter",
    sharding=rules.NOT_SHARDABLE,
    abstract_eval=rules.per_primitive(_scatter_abstract_eval_rule),
    jvp=_scatter_jvp,
    transpose=_scatter_transpose,
    batch=rules.per_primitive(_scatter_batch_rule),
    lowering=_scatter_lowering_rule(None),
    reference=_scatter_reference_rule(lambda current, update: update),
)


# --------------------------------------------------------------------------------------------
# scatter_add


def _scatter_add_jvp(primals, tangents, **params):
    """scatter_add is linear: the tangent is the same scatter of the tangents."""
    operand, indices, updates = primals
    out = scatter_add_p.bind(operand, indices, updates, **params)
    t_op, _, t_up = tangents
    if type(t_op) is Zero and type(t_up) is Zero:
        return out, Zero(get_aval(out))
    t_op = zeros(get_aval(operand)) if type(t_op) is Zero else t_op
    t_up = zeros(get_aval(updates)) if type(t_up) is Zero else t_up
    return out, scatter_add_p.bind(t_op, indices, t_up, **params)


def _scatter_add_transpose(ct, operand, indices, updates, *, dimension_numbers, **params):
    if type(ct) is Zero:
        return [Zero(_aval(operand)), None, Zero(_aval(updates))]
    ct_updates = None
    if is_undefined(updates):
        ct_updates = _gather_updates(
            ct, indices, updates.aval, _aval(operand), dimension_numbers, params
        )
    return [ct if is_undefined(operand) else None, None, ct_updates]


scatter_add_p = rules.define_primitive(
    "scatter_add",
    sharding=rules.NOT_SHARDABLE,
    abstract_eval=rules.per_primitive(_scatter_abstract_eval_rule),
    jvp=_scatter_add_jvp,
    transpose=_scatter_add_transpose,
    batch=rules.per_primitive(_scatter_batch_rule),
    lowering=_scatter_lowering_rule("stablehlo.add"),
    reference=_scatter_reference_rule(np.add),
)


# --------------------------------------------------------------------------------------------
# scatter_mul


def _scatter_mul_jvp(primals, tangents, **params):
    """out = operand * (product of its updates). With unique indices each position has at
    most one update, so d out = d operand * u + operand * d u there (JAX's restriction)."""
    operand, indices, updates = primals
    t_op, _, t_up = tangents
    out = scatter_mul_p.bind(operand, indices, updates, **params)
    if type(t_up) is not Zero and not params["unique_indices"]:
        raise NotImplementedError(
            "the derivative of scatter_mul (x.at[...].multiply) with respect to the updates "
            "needs unique_indices=True, as in JAX"
        )
    tangent = scatter_mul_p.bind(_instantiate(t_op, operand), indices, updates, **params)
    if type(t_up) is not Zero:
        spread = scatter_add_p.bind(zeros(get_aval(operand)), indices, t_up, **params)
        tangent = add(tangent, mul(operand, spread))
    return out, tangent


def _scatter_mul_transpose(ct, operand, indices, updates, **params):
    """Linear in the operand alone (the jvp keeps the updates' part as a scatter_add)."""
    if is_undefined(updates):
        raise NotImplementedError("scatter_mul is not linear in its updates")
    if type(ct) is Zero:
        return [Zero(_aval(operand)), None, None]
    return [scatter_mul_p.bind(ct, indices, updates, **params), None, None]


scatter_mul_p = rules.define_primitive(
    "scatter_mul",
    sharding=rules.NOT_SHARDABLE,
    abstract_eval=rules.per_primitive(_scatter_abstract_eval_rule),
    jvp=_scatter_mul_jvp,
    transpose=_scatter_mul_transpose,
    batch=rules.per_primitive(_scatter_batch_rule),
    lowering=_scatter_lowering_rule("stablehlo.multiply"),
    reference=_scatter_reference_rule(np.multiply),
)


# --------------------------------------------------------------------------------------------
# scatter_min and scatter_max


def _extremal_scatter_jvp(primitive: Primitive):
    """min/max scatters: the derivative flows from every value equal to the result, averaged
    over ties (the operand entry and the updates that reach it), as JAX does."""

    def jvp(primals, tangents, **params):
        operand, indices, updates = primals
        t_op, _, t_up = tangents
        out = primitive.bind(operand, indices, updates, **params)
        if type(t_op) is Zero and type(t_up) is Zero:
            return out, Zero(get_aval(out))
        dn = params["dimension_numbers"]
        op_aval, up_aval = get_aval(operand), get_aval(updates)
        reached = _gather_updates(out, indices, up_aval, op_aval, dn, params)
        update_ties = eq(updates, reached)
        operand_ties = eq(operand, out)
        one, zero = np.ones((), op_aval.dtype), np.zeros((), op_aval.dtype)
        up_ones = select_n(update_ties, zeros(up_aval), broadcast_in_dim(one, up_aval.shape, ()))
        op_ones = select_n(operand_ties, zeros(op_aval), broadcast_in_dim(one, op_aval.shape, ()))
        add_params = {**params, "unique_indices": False}
        count = scatter_add_p.bind(op_ones, indices, up_ones, **add_params)
        t_op = select_n(operand_ties, zeros(op_aval), _instantiate(t_op, operand))
        t_up = select_n(update_ties, zeros(up_aval), _instantiate(t_up, updates))
        total = scatter_add_p.bind(t_op, indices, t_up, **add_params)
        # every position has at least one tie (the value it holds); guard the division anyway
        safe = select_n(eq(count, zero), count, broadcast_in_dim(one, op_aval.shape, ()))
        return out, div(total, safe)

    return jvp


scatter_min_p = rules.define_primitive(
    "scatter_min",
    sharding=rules.NOT_SHARDABLE,
    abstract_eval=rules.per_primitive(_scatter_abstract_eval_rule),
    jvp=rules.per_primitive(_extremal_scatter_jvp),
    batch=rules.per_primitive(_scatter_batch_rule),
    lowering=_scatter_lowering_rule("stablehlo.minimum"),
    reference=_scatter_reference_rule(np.minimum),
)
scatter_max_p = rules.define_primitive(
    "scatter_max",
    sharding=rules.NOT_SHARDABLE,
    abstract_eval=rules.per_primitive(_scatter_abstract_eval_rule),
    jvp=rules.per_primitive(_extremal_scatter_jvp),
    batch=rules.per_primitive(_scatter_batch_rule),
    lowering=_scatter_lowering_rule("stablehlo.maximum"),
    reference=_scatter_reference_rule(np.maximum),
)
