"""Indexing with traced positions: ``dynamic_slice`` and ``dynamic_update_slice``.

Start indices are clamped so the slice stays in bounds, as in XLA (and JAX).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import ShapedArray, Zero, get_aval, tangent_aval
from ember._src.interpreters.ad import is_undefined
from ember._src.interpreters.ad_util import instantiate, zeros
from ember._src.interpreters.batching import not_mapped
from ember._src.primitives import sharding_rules
from ember._src.primitives.arithmetic import max as max_, min as min_
from ember._src.primitives.gather_scatter import (
    GatherDimensionNumbers,
    ScatterDimensionNumbers,
    gather,
    scatter_p,
)
from ember._src.primitives.shape import (
    batch_size,
    bdim_to_front,
    convert_element_type,
    expand_dims,
    typed_like,
)
from ember._src.primitives.slicing import concatenate


def _index_operands(indices: Sequence[Any]) -> list[Any]:
    result = []
    for index in indices:
        aval = get_aval(index)
        if aval.shape != () or aval.dtype.kind not in "iu":
            raise errors.EmberTypeError(
                f"slice start indices must be integer scalars, got {aval.str_short()}"
                f"{errors.where()}"
            )
        if aval.dtype != dtypes.int32 and dtypes.is_python_scalar(index):
            index = np.int32(index)
        result.append(index)
    return result


def _check_indices(name: str, operand: ShapedArray, indices: Sequence[ShapedArray]) -> None:
    if len(indices) != operand.ndim:
        raise errors.EmberTypeError(
            f"{name}: need {operand.ndim} start indices for shape {operand.shape}, got "
            f"{len(indices)}{errors.where()}"
        )
    if len({i.dtype for i in indices}) > 1:
        raise errors.EmberTypeError(f"{name}: start indices must share one dtype{errors.where()}")


# --------------------------------------------------------------------------------------------
# dynamic_slice


def _dynamic_slice_abstract_eval(operand, *indices, slice_sizes):
    _check_indices("dynamic_slice", operand, indices)
    if len(slice_sizes) != operand.ndim or any(
        not 0 <= s <= d for s, d in zip(slice_sizes, operand.shape)
    ):
        raise errors.EmberTypeError(
            f"dynamic_slice: slice sizes {slice_sizes} don't fit in shape {operand.shape}"
            f"{errors.where()}"
        )
    return ShapedArray(slice_sizes, operand.dtype, operand.weak_type)


def _dynamic_slice_jvp(primals, tangents, *, slice_sizes):
    operand, *indices = primals
    out = dynamic_slice_p.bind(operand, *indices, slice_sizes=slice_sizes)
    if type(tangents[0]) is Zero:
        return out, Zero(tangent_aval(get_aval(out)))
    return out, dynamic_slice_p.bind(tangents[0], *indices, slice_sizes=slice_sizes)


def _dynamic_slice_transpose(ct, operand, *indices, slice_sizes):
    if type(ct) is Zero:
        return [Zero(operand.aval)] + [None] * len(indices)
    base = zeros(operand.aval)
    ct_operand = typed_like(dynamic_update_slice_p.bind(base, ct, *indices), operand.aval)
    return [ct_operand] + [None] * len(indices)


def _dynamic_slice_batch(vals, dims, *, slice_sizes):
    operand, *indices = vals
    operand_dim, *index_dims = dims
    if any(d is not not_mapped for d in index_dims):
        return _dynamic_slice_as_gather(operand, operand_dim, indices, index_dims, slice_sizes)
    index_dtype = get_aval(indices[0]).dtype if indices else dtypes.int32
    indices = list(indices)
    indices.insert(operand_dim, np.zeros((), index_dtype))
    sizes = list(slice_sizes)
    sizes.insert(operand_dim, get_aval(operand).shape[operand_dim])
    return dynamic_slice_p.bind(operand, *indices, slice_sizes=tuple(sizes)), operand_dim


def _dynamic_slice_lowering(ctx, operand, *indices, slice_sizes):
    sizes = ", ".join(str(s) for s in slice_sizes)
    attr = f"array<i64: {sizes}>" if slice_sizes else "array<i64>"
    return ctx.op(
        "stablehlo.dynamic_slice", [operand, *indices], ctx.avals_out[0], {"slice_sizes": attr}
    )


def _clamped_starts(shape, sizes, indices) -> list[int]:
    return [int(np.clip(int(i), 0, d - s)) for i, d, s in zip(indices, shape, sizes)]


def _dynamic_slice_reference(operand, *indices, slice_sizes):
    starts = _clamped_starts(operand.shape, slice_sizes, indices)
    return operand[tuple(slice(s, s + n) for s, n in zip(starts, slice_sizes))]


def _partial_dims(operand, *indices, slice_sizes):
    return [d for d, (n, k) in enumerate(zip(operand.shape, slice_sizes)) if n != k]


dynamic_slice_p = rules.define_primitive(
    "dynamic_slice",
    sharding=sharding_rules.with_unsplit(
        "dynamic_slice", _partial_dims, "a slice takes part of it (slice whole dimensions only)"
    ),
    abstract_eval=_dynamic_slice_abstract_eval,
    jvp=_dynamic_slice_jvp,
    transpose=_dynamic_slice_transpose,
    batch=_dynamic_slice_batch,
    lowering=_dynamic_slice_lowering,
    reference=_dynamic_slice_reference,
)


def dynamic_slice_op(operand: Any, start_indices: Sequence[Any], slice_sizes: Sequence[int]) -> Any:
    return dynamic_slice_p.bind(
        operand, *_index_operands(start_indices), slice_sizes=tuple(int(s) for s in slice_sizes)
    )


# --------------------------------------------------------------------------------------------
# dynamic_update_slice


def _dynamic_update_slice_abstract_eval(operand, update, *indices):
    _check_indices("dynamic_update_slice", operand, indices)
    if update.dtype != operand.dtype:
        raise errors.EmberTypeError(
            f"dynamic_update_slice: update dtype {update.dtype} differs from operand dtype "
            f"{operand.dtype}{errors.where()}"
        )
    if update.ndim != operand.ndim or any(u > d for u, d in zip(update.shape, operand.shape)):
        raise errors.EmberTypeError(
            f"dynamic_update_slice: update of shape {update.shape} doesn't fit in operand of "
            f"shape {operand.shape}{errors.where()}"
        )
    return operand


def _dynamic_update_slice_jvp(primals, tangents):
    operand, update, *indices = primals
    t_operand, t_update = tangents[0], tangents[1]
    out = dynamic_update_slice_p.bind(operand, update, *indices)
    if type(t_operand) is Zero and type(t_update) is Zero:
        return out, Zero(tangent_aval(get_aval(out)))
    t_operand, t_update = instantiate(t_operand), instantiate(t_update)
    return out, dynamic_update_slice_p.bind(t_operand, t_update, *indices)


def _dynamic_update_slice_transpose(ct, operand, update, *indices):
    update_aval = update.aval if is_undefined(update) else get_aval(update)
    if type(ct) is Zero:
        return [None, None] + [None] * len(indices)
    ct_update = (
        typed_like(dynamic_slice_p.bind(ct, *indices, slice_sizes=update_aval.shape), update_aval)
        if is_undefined(update)
        else None
    )
    ct_operand = (
        typed_like(dynamic_update_slice_p.bind(ct, zeros(update_aval), *indices), operand.aval)
        if is_undefined(operand)
        else None
    )
    return [ct_operand, ct_update] + [None] * len(indices)


def _dynamic_update_slice_batch(vals, dims):
    operand, update, *indices = vals
    operand_dim, update_dim, *index_dims = dims
    if any(d is not not_mapped for d in index_dims):
        return _dynamic_update_slice_as_scatter(vals, dims)
    size = batch_size([operand, update], [operand_dim, update_dim])
    operand = bdim_to_front(operand, operand_dim, size)
    update = bdim_to_front(update, update_dim, size)
    index_dtype = get_aval(indices[0]).dtype if indices else dtypes.int32
    zero = np.zeros((), index_dtype)
    return dynamic_update_slice_p.bind(operand, update, zero, *indices), 0


def _dynamic_update_slice_lowering(ctx, operand, update, *indices):
    return ctx.op("stablehlo.dynamic_update_slice", [operand, update, *indices], ctx.avals_out[0])


def _dynamic_update_slice_reference(operand, update, *indices):
    starts = _clamped_starts(operand.shape, update.shape, indices)
    result = np.array(operand, copy=True)
    result[tuple(slice(s, s + n) for s, n in zip(starts, update.shape))] = update
    return result


def _update_sharding(operand, update, *indices):
    what = "dynamic_update_slice"
    avals = (operand, update)
    partial = [d for d, (n, k) in enumerate(zip(operand.shape, update.shape)) if n != k]
    for aval in avals:
        sharding_rules.require_unsplit(what, avals, aval, partial, "the update covers part of it")
    mesh = sharding_rules.common_mesh(what, avals)
    columns = zip(sharding_rules.entries(operand), sharding_rules.entries(update))
    out = [sharding_rules.consensus(what, avals, c) for c in columns]
    return sharding_rules.build(what, avals, mesh, out)


dynamic_update_slice_p = rules.define_primitive(
    "dynamic_update_slice",
    sharding=_update_sharding,
    abstract_eval=_dynamic_update_slice_abstract_eval,
    jvp=_dynamic_update_slice_jvp,
    transpose=_dynamic_update_slice_transpose,
    batch=_dynamic_update_slice_batch,
    lowering=_dynamic_update_slice_lowering,
    reference=_dynamic_update_slice_reference,
)


def dynamic_update_slice_op(operand: Any, update: Any, start_indices: Sequence[Any]) -> Any:
    return dynamic_update_slice_p.bind(operand, update, *_index_operands(start_indices))


# --------------------------------------------------------------------------------------------
# Batched start indices: one gather/scatter with a batching dimension


def _stacked_starts(indices, index_dims, size) -> Any:
    """The per-example start vectors, as int32[size, n]."""
    columns = [
        expand_dims(bdim_to_front(convert_element_type(i, dtypes.int32), d, size), (1,))
        for i, d in zip(indices, index_dims)
    ]
    return concatenate(columns, 1)


def _dynamic_slice_as_gather(operand, operand_dim, indices, index_dims, slice_sizes):
    size = batch_size([operand, *indices], [operand_dim, *index_dims])
    starts = _stacked_starts(indices, index_dims, size)
    n = len(slice_sizes)
    if operand_dim is not_mapped:
        dn = GatherDimensionNumbers(
            offset_dims=tuple(range(1, n + 1)),
            collapsed_slice_dims=(),
            start_index_map=tuple(range(n)),
        )
        return gather(operand, starts, dn, slice_sizes), 0
    operand = bdim_to_front(operand, operand_dim, size)
    dn = GatherDimensionNumbers(
        offset_dims=tuple(range(1, n + 1)),
        collapsed_slice_dims=(),
        start_index_map=tuple(range(1, n + 1)),
        operand_batching_dims=(0,),
        start_indices_batching_dims=(0,),
    )
    return gather(operand, starts, dn, (1, *slice_sizes)), 0


def _dynamic_update_slice_as_scatter(vals, dims):
    operand, update, *indices = vals
    operand_dim, update_dim, *index_dims = dims
    size = batch_size(vals, dims)
    operand = bdim_to_front(operand, operand_dim, size)
    update = bdim_to_front(update, update_dim, size)
    shape, window = get_aval(operand).shape[1:], get_aval(update).shape[1:]
    starts = _stacked_starts(indices, index_dims, size)
    # XLA clamps a dynamic_update_slice's start so the update fits; scatter would drop it.
    limits = np.asarray([[d - w for d, w in zip(shape, window)]], np.int32)
    starts = max_(min_(starts, np.broadcast_to(limits, (size, len(shape)))), np.int32(0))
    n = len(shape)
    dn = ScatterDimensionNumbers(
        update_window_dims=tuple(range(1, n + 1)),
        inserted_window_dims=(),
        scatter_dims_to_operand_dims=tuple(range(1, n + 1)),
        operand_batching_dims=(0,),
        scatter_indices_batching_dims=(0,),
    )
    out = scatter_p.bind(
        operand,
        starts,
        update,
        dimension_numbers=dn,
        indices_are_sorted=False,
        unique_indices=True,
    )
    return out, 0


def index_to_int32(index: Any) -> Any:
    aval = get_aval(index)
    return index if aval.dtype == dtypes.int32 else convert_element_type(index, dtypes.int32)
