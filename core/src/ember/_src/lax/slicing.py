"""lax's gather/scatter wrappers with JAX's index modes, and the slicing conveniences.

The gather and scatter primitives follow XLA: gather clamps each window into range, scatter
drops windows that do not fit. JAX's ``mode`` argument is implemented here, above them, by
rewriting indices and masking values:

- ``CLIP`` clamps the starts so that each window lies in range (for scatter too);
- ``FILL_OR_DROP`` gathers clamped windows and replaces those whose start was out of range by
  ``fill_value``; scatter neutralises out-of-range updates, so their gradient is zero as well;
- ``PROMISE_IN_BOUNDS`` passes indices through (XLA's behaviour, with no checks).

As in JAX, gather defaults to ``PROMISE_IN_BOUNDS`` and scatter to ``FILL_OR_DROP``.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.primitives.arithmetic import add, max as max_, min as min_, neg
from ember._src.primitives.bits import bitwise_and
from ember._src.primitives.collectives import vary_like
from ember._src.primitives.comparisons import ge, gt, le, lt
from ember._src.primitives.control_flow.loops import fori_loop
from ember._src.primitives.gather_scatter import (
    GatherDimensionNumbers,
    ScatterDimensionNumbers,
    gather_fill_value,
    gather_p,
    scatter_add_p,
    scatter_max_p,
    scatter_min_p,
    scatter_mul_p,
    scatter_p,
)
from ember._src.primitives.indexing import (
    dynamic_slice_op,
    dynamic_update_slice_op,
)
from ember._src.primitives.reduce import extreme_value, reduce_and, reduce_max
from ember._src.primitives.selection import select_n
from ember._src.primitives.shape import (
    broadcast_in_dim,
    convert_element_type,
    expand_dims,
    iota_along,
    reshape,
    squeeze,
)
from ember._src.primitives.sharding_constraint import laid_out, retype
from ember._src.primitives.slicing import concatenate, slice_op


class GatherScatterMode(enum.Enum):
    """How gather and scatter treat indices whose window is not entirely in range."""

    CLIP = enum.auto()
    FILL_OR_DROP = enum.auto()
    PROMISE_IN_BOUNDS = enum.auto()
    ONE_HOT = enum.auto()

    @staticmethod
    def from_any(mode: Any) -> GatherScatterMode:
        if isinstance(mode, GatherScatterMode):
            return mode
        if mode == "clip":
            return GatherScatterMode.CLIP
        if mode is None or mode in ("fill", "drop"):
            return GatherScatterMode.FILL_OR_DROP
        if mode == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        if mode == "one_hot":
            return GatherScatterMode.ONE_HOT
        raise ValueError(f"Unknown gather mode {mode!r}{errors.where()}")


def _parse_mode(mode: Any, default: GatherScatterMode) -> GatherScatterMode:
    parsed = default if mode is None else GatherScatterMode.from_any(mode)
    if parsed is GatherScatterMode.ONE_HOT:
        raise NotImplementedError(f"mode=ONE_HOT is not supported by ember{errors.where()}")
    return parsed


def _tuples(numbers: Any, cls: type) -> Any:
    """The dimension numbers with every field a tuple of ints (hashable primitive params)."""
    if not isinstance(numbers, cls):
        raise TypeError(
            f"dimension_numbers must be a {cls.__name__}, got {numbers!r}{errors.where()}"
        )
    fields = {
        f.name: tuple(int(d) for d in getattr(numbers, f.name)) for f in dataclasses.fields(cls)
    }
    return cls(**fields)


def _as_index_array(indices: Any) -> Any:
    if isinstance(indices, (list, tuple)) or dtypes.is_python_scalar(indices):
        indices = np.asarray(indices)
    aval = get_aval(indices)
    if not dtypes.is_integer(aval.dtype):
        raise errors.EmberTypeError(
            f"indices must be integers, got {aval.str_short()}{errors.where()}"
        )
    if aval.dtype.itemsize < 4:  # so that bounds such as dim - size are representable
        indices = convert_element_type(indices, np.int32)
    return indices


def _window_in_range(indices: Any, dims: Sequence[int], sizes: Sequence[int], shape) -> Any:
    """Boolean over the batch of ``indices``: every start ``s`` of the index vector satisfies
    ``0 <= s <= shape[d] - sizes[d]`` for its operand dimension ``d``."""
    aval = get_aval(indices)
    bounds = np.asarray([shape[d] - sizes[d] for d in dims], np.int64)
    limit = broadcast_in_dim(bounds.astype(aval.dtype), aval.shape, (aval.ndim - 1,))
    ok = le(indices, limit)
    if bounds.min(initial=0) < 0:  # a window larger than its dimension never fits
        ok = bitwise_and(ok, broadcast_in_dim(bounds >= 0, aval.shape, (aval.ndim - 1,)))
    if aval.dtype.kind == "i":
        ok = bitwise_and(ok, ge(indices, np.zeros(aval.shape, aval.dtype)))
    return reduce_and(ok, (aval.ndim - 1,))


def _clip_indices(indices: Any, dims: Sequence[int], sizes: Sequence[int], shape) -> Any:
    aval = get_aval(indices)
    upper = np.asarray([max(shape[d] - sizes[d], 0) for d in dims], np.int64)
    upper = upper.astype(aval.dtype)
    hi = broadcast_in_dim(upper, aval.shape, (aval.ndim - 1,))
    return max_(min_(indices, hi), np.zeros(aval.shape, aval.dtype))


def gather(
    operand: Any,
    start_indices: Any,
    dimension_numbers: GatherDimensionNumbers,
    slice_sizes: Sequence[int],
    *,
    unique_indices: bool = False,
    indices_are_sorted: bool = False,
    mode: Any = None,
    fill_value: Any = None,
) -> Any:
    """XLA's gather with JAX's ``mode`` (default ``PROMISE_IN_BOUNDS``) and ``fill_value``."""
    dn = _tuples(dimension_numbers, GatherDimensionNumbers)
    parsed = _parse_mode(mode, GatherScatterMode.PROMISE_IN_BOUNDS)
    indices = _as_index_array(start_indices)
    sizes = tuple(int(s) for s in slice_sizes)
    shape = get_aval(operand).shape
    if parsed is GatherScatterMode.CLIP:
        indices = _clip_indices(indices, dn.start_index_map, sizes, shape)
    out = gather_p.bind(
        operand,
        indices,
        dimension_numbers=dn,
        slice_sizes=sizes,
        indices_are_sorted=bool(indices_are_sorted),
        unique_indices=bool(unique_indices),
    )
    if parsed is not GatherScatterMode.FILL_OR_DROP:
        return out
    ok = _window_in_range(indices, dn.start_index_map, sizes, shape)
    out_aval = get_aval(out)
    batch_positions = tuple(p for p in range(out_aval.ndim) if p not in dn.offset_dims)
    ok = broadcast_in_dim(ok, out_aval.shape, batch_positions)
    dtype = out_aval.dtype
    fill = gather_fill_value(dtype) if fill_value is None else fill_value
    if hasattr(fill, "aval") or isinstance(fill, np.ndarray) and fill.shape:
        fill = broadcast_in_dim(convert_element_type(fill, dtype), out_aval.shape, ())
    else:
        fill = np.full(out_aval.shape, fill, dtype)
    return select_n(ok, fill, out)


# --------------------------------------------------------------------------------------------
# Scatter


def _scatter_sizes(operand_shape, updates_shape, dn: ScatterDimensionNumbers) -> list[int]:
    """The window extent along each operand dimension (1 where the window is inserted)."""
    window = iter(updates_shape[d] for d in dn.update_window_dims)
    skipped = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
    return [1 if d in skipped else next(window, 1) for d in range(len(operand_shape))]


def _prepare_scatter(name, operand, scatter_indices, updates, dimension_numbers, mode):
    dn = _tuples(dimension_numbers, ScatterDimensionNumbers)
    parsed = _parse_mode(mode, GatherScatterMode.FILL_OR_DROP)
    indices = _as_index_array(scatter_indices)
    operand_aval = get_aval(operand)
    updates = _coerce_updates(name, updates, operand_aval.dtype)
    sizes = _scatter_sizes(operand_aval.shape, get_aval(updates).shape, dn)
    dims = dn.scatter_dims_to_operand_dims
    ok = None
    if parsed is GatherScatterMode.CLIP:
        indices = _clip_indices(indices, dims, sizes, operand_aval.shape)
    elif parsed is GatherScatterMode.FILL_OR_DROP:
        ok = _window_in_range(indices, dims, sizes, operand_aval.shape)
        updates_aval = get_aval(updates)
        scatter_dims = tuple(d for d in range(updates_aval.ndim) if d not in dn.update_window_dims)
        if len(scatter_dims) == get_aval(ok).ndim:
            ok = broadcast_in_dim(ok, updates_aval.shape, scatter_dims)
        else:
            ok = None  # mismatched shapes: the primitive reports them
    return dn, indices, updates, ok


def _coerce_updates(name: str, updates: Any, dtype: np.dtype) -> Any:
    if dtypes.is_python_scalar(updates) or isinstance(updates, (list, tuple)):
        return np.asarray(updates, dtype)
    aval = get_aval(updates)
    if aval.dtype != dtype and aval.weak_type:
        return convert_element_type(updates, dtype)
    return updates


def _neutral_updates(updates: Any, ok: Any, neutral: Any) -> Any:
    """Out-of-range updates replaced by the combiner's neutral element (``None`` keeps
    them: the primitive drops them, and only their gradient must be silenced)."""
    if ok is None:
        return updates
    aval = get_aval(updates)
    if neutral is None:
        neutral = np.zeros(aval.shape, aval.dtype)
    else:
        neutral = np.full(aval.shape, neutral, aval.dtype)
    return select_n(ok, neutral, updates)


def _make_scatter(name: str, primitive, neutral: Callable[[np.dtype], Any] | None, negate=False):
    def scatter_fn(
        operand: Any,
        scatter_indices: Any,
        updates: Any,
        dimension_numbers: ScatterDimensionNumbers,
        *,
        indices_are_sorted: bool = False,
        unique_indices: bool = False,
        mode: Any = None,
    ) -> Any:
        dn, indices, updates, ok = _prepare_scatter(
            name, operand, scatter_indices, updates, dimension_numbers, mode
        )
        if negate:
            updates = neg(updates)
        value = None if neutral is None else neutral(get_aval(operand).dtype)
        updates = _neutral_updates(updates, ok, value)
        return primitive.bind(
            operand,
            indices,
            updates,
            dimension_numbers=dn,
            indices_are_sorted=bool(indices_are_sorted),
            unique_indices=bool(unique_indices),
        )

    scatter_fn.__name__ = scatter_fn.__qualname__ = name
    scatter_fn.__doc__ = f"XLA's ``{name}`` with JAX's ``mode`` (default ``FILL_OR_DROP``)."
    return scatter_fn


# Dropped updates of replacing scatters are masked to zero only to silence their gradient.
scatter = _make_scatter("scatter", scatter_p, None)
scatter_add = _make_scatter("scatter_add", scatter_add_p, lambda dt: 0)
scatter_sub = _make_scatter("scatter_sub", scatter_add_p, lambda dt: 0, negate=True)
# The primitives differentiate themselves: scatter_mul for unique indices (as JAX),
# scatter_min/max sharing each output's derivative between ties.
scatter_mul = _make_scatter("scatter_mul", scatter_mul_p, lambda dt: 1)
scatter_min = _make_scatter("scatter_min", scatter_min_p, lambda dt: extreme_value(dt, True))
scatter_max = _make_scatter("scatter_max", scatter_max_p, lambda dt: extreme_value(dt, False))


def scatter_apply(
    operand: Any,
    scatter_indices: Any,
    func: Callable[[Any], Any],
    dimension_numbers: ScatterDimensionNumbers,
    *,
    update_shape: Sequence[int] = (),
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode: Any = None,
) -> Any:
    """Apply the elementwise ``func`` at each scattered position, once per hit (an index that
    appears twice gets ``func(func(x))``, as XLA's scatter with this combiner does)."""
    aval = get_aval(operand)
    hits = scatter_add(
        np.zeros(aval.shape, np.int32),
        scatter_indices,
        np.ones(tuple(update_shape), np.int32),
        dimension_numbers,
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
        mode=mode,
    )
    if unique_indices:
        return select_n(gt(hits, np.zeros(aval.shape, np.int32)), operand, func(operand))
    rounds = reduce_max(hits, tuple(range(aval.ndim))) if aval.ndim else hits

    def apply_once(i: Any, x: Any) -> Any:
        due = gt(hits, broadcast_in_dim(i, aval.shape, ()))
        return select_n(due, x, func(x))

    return fori_loop(np.int32(0), rounds, apply_once, operand)


# --------------------------------------------------------------------------------------------
# Slicing conveniences


def _axis(axis: int, ndim: int, name: str = "axis") -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}={axis} is out of bounds for rank {ndim}{errors.where()}")
    return axis % ndim


def _wrap_negative(index: Any, size: int) -> Any:
    """``index + size`` where ``index`` is negative (JAX's ``allow_negative_indices``)."""
    if dtypes.is_python_scalar(index):
        index = int(index)
        return index + size if index < 0 else index
    aval = get_aval(index)
    if aval.dtype.kind == "u":
        return index
    zero, bound = np.zeros((), aval.dtype), np.asarray(size, aval.dtype)
    return select_n(lt(index, zero), index, add(index, bound))


def _starts(ndim: int, axis: int, start: Any) -> list[Any]:
    return [np.int32(0)] * axis + [start] + [np.int32(0)] * (ndim - axis - 1)


def _starts_in_dim(shape: tuple[int, ...], axis: int, start: Any, allow_negative: Any) -> list:
    """Start indices for a block at ``start`` along ``axis`` (0 along the others); a
    negative ``start`` counts from the end when allowed."""
    if allow_negative:
        start = _wrap_negative(start, shape[axis])
    return _starts(len(shape), axis, _same_int_type(start))


def _same_int_type(start: Any) -> Any:
    if dtypes.is_python_scalar(start):
        return np.int32(start)
    aval = get_aval(start)
    return start if aval.dtype == dtypes.int32 else convert_element_type(start, dtypes.int32)


def _wrapped_starts(name, shape, start_indices, allow_negative_indices) -> list[Any]:
    """The start indices with negative ones counted from the end where allowed (JAX's
    default); a concrete negative index where it is not allowed is an error."""
    if hasattr(start_indices, "shape") and len(start_indices.shape) == 1:
        start_indices = [start_indices[i] for i in range(start_indices.shape[0])]
    starts = list(start_indices)
    if len(starts) != len(shape):
        raise TypeError(
            f"{name}: {len(starts)} start indices for an operand of rank {len(shape)}"
            f"{errors.where()}"
        )
    allowed = allow_negative_indices
    if isinstance(allowed, bool):
        allowed = [allowed] * len(shape)
    out = []
    for start, size, allow in zip(starts, shape, allowed):
        if allow:
            out.append(_same_int_type(_wrap_negative(start, size)))
            continue
        if dtypes.is_python_scalar(start) or isinstance(start, (np.ndarray, np.generic)):
            if int(start) < 0:
                raise ValueError(
                    f"{name}: index {int(start)} is out of bounds for dimension {size} if "
                    f"allow_negative_indices=False{errors.where()}"
                )
        out.append(_same_int_type(start))
    return out


def dynamic_slice(
    operand: Any,
    start_indices: Any,
    slice_sizes: Sequence[int],
    *,
    allow_negative_indices: Any = True,
) -> Any:
    """The ``slice_sizes`` block at ``start_indices`` (negative starts count from the end;
    starts are then clamped so the block fits, as XLA does)."""
    shape = get_aval(operand).shape
    starts = _wrapped_starts("dynamic_slice", shape, start_indices, allow_negative_indices)
    return dynamic_slice_op(operand, starts, slice_sizes)


def dynamic_update_slice(
    operand: Any,
    update: Any,
    start_indices: Any,
    *,
    allow_negative_indices: Any = True,
) -> Any:
    """``operand`` with ``update`` written at ``start_indices`` (negative starts count from
    the end; starts are then clamped so the update fits)."""
    shape = get_aval(operand).shape
    starts = _wrapped_starts("dynamic_update_slice", shape, start_indices, allow_negative_indices)
    return dynamic_update_slice_op(operand, update, starts)


def dynamic_slice_in_dim(
    operand: Any,
    start_index: Any,
    slice_size: int,
    axis: int = 0,
    *,
    allow_negative_indices: bool = True,
) -> Any:
    """``dynamic_slice`` along one axis (other axes taken whole)."""
    shape = get_aval(operand).shape
    axis = _axis(axis, len(shape))
    sizes = list(shape)
    sizes[axis] = int(slice_size)
    starts = _starts_in_dim(shape, axis, start_index, allow_negative_indices)
    return dynamic_slice_op(operand, starts, sizes)


def dynamic_index_in_dim(
    operand: Any,
    index: Any,
    axis: int = 0,
    keepdims: bool = True,
    *,
    allow_negative_indices: bool = True,
) -> Any:
    """The slice at ``index`` along ``axis`` (kept as a size-1 axis when ``keepdims``)."""
    ndim = get_aval(operand).ndim
    axis = _axis(axis, ndim)
    out = dynamic_slice_in_dim(
        operand, index, 1, axis, allow_negative_indices=allow_negative_indices
    )
    return out if keepdims else squeeze(out, (axis,))


def dynamic_update_slice_in_dim(
    operand: Any,
    update: Any,
    start_index: Any,
    axis: int,
    *,
    allow_negative_indices: bool = True,
) -> Any:
    """``dynamic_update_slice`` at ``start_index`` along ``axis`` (0 along the others)."""
    shape = get_aval(operand).shape
    axis = _axis(axis, len(shape))
    starts = _starts_in_dim(shape, axis, start_index, allow_negative_indices)
    return dynamic_update_slice_op(operand, update, starts)


def dynamic_update_index_in_dim(
    operand: Any,
    update: Any,
    index: Any,
    axis: int,
    *,
    allow_negative_indices: bool = True,
) -> Any:
    """Write ``update`` (with or without the size-1 ``axis``) at ``index`` along ``axis``."""
    ndim = get_aval(operand).ndim
    axis = _axis(axis, ndim)
    if get_aval(update).ndim == ndim - 1:
        update = expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(
        operand, update, index, axis, allow_negative_indices=allow_negative_indices
    )


def slice_in_dim(
    operand: Any,
    start_index: int | None,
    limit_index: int | None,
    stride: int = 1,
    axis: int = 0,
) -> Any:
    """``operand[start:limit:stride]`` along ``axis`` (static bounds; negatives count from
    the end)."""
    shape = get_aval(operand).shape
    axis = _axis(axis, len(shape))
    size = shape[axis]
    start = 0 if start_index is None else int(start_index)
    limit = size if limit_index is None else int(limit_index)
    start = start + size if start < 0 else start
    limit = limit + size if limit < 0 else limit
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis], limits[axis], strides[axis] = start, limit, int(stride)
    return slice_op(operand, starts, limits, strides)


def index_in_dim(operand: Any, index: int, axis: int = 0, keepdims: bool = True) -> Any:
    """The slice at the static ``index`` along ``axis``."""
    shape = get_aval(operand).shape
    axis = _axis(axis, len(shape))
    size = shape[axis]
    wrapped = int(index) + size if int(index) < 0 else int(index)
    if not 0 <= wrapped < size:
        raise IndexError(
            f"index {index} is out of bounds for axis {axis} with size {size}{errors.where()}"
        )
    out = slice_in_dim(operand, wrapped, wrapped + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def index_take(src: Any, idxs: Sequence[Any], axes: Sequence[int]) -> Any:
    """``src[idxs[0], idxs[1], ...]`` along ``axes``: the index arrays (of one shape) pick
    points, and the untouched axes follow."""
    axes = tuple(int(a) for a in axes)
    if len(idxs) != len(axes):
        raise ValueError(
            f"index_take: {len(idxs)} index arrays for {len(axes)} axes{errors.where()}"
        )
    arrays = [_same_int_type(_as_index_array(i)) for i in idxs]
    shape = get_aval(src).shape
    batch_rank = get_aval(arrays[0]).ndim
    indices = concatenate([expand_dims(i, (batch_rank,)) for i in arrays], batch_rank)
    rest = tuple(d for d in range(len(shape)) if d not in axes)
    dn = GatherDimensionNumbers(
        offset_dims=tuple(range(batch_rank, batch_rank + len(rest))),
        collapsed_slice_dims=tuple(sorted(axes)),
        start_index_map=axes,
    )
    sizes = tuple(1 if d in axes else shape[d] for d in range(len(shape)))
    return gather(src, indices, dn, sizes, mode=GatherScatterMode.PROMISE_IN_BOUNDS)


# --------------------------------------------------------------------------------------------
# Shapes and creation


def collapse(operand: Any, start_dimension: int, stop_dimension: int | None = None) -> Any:
    """Merge axes ``start_dimension`` up to (not including) ``stop_dimension`` into one."""
    shape = get_aval(operand).shape
    ndim = len(shape)
    lo = _axis(start_dimension, ndim, "start_dimension")
    hi = ndim if stop_dimension is None else int(stop_dimension)
    hi = hi + ndim if hi < 0 else hi
    if not lo <= hi <= ndim:
        raise ValueError(
            f"collapse: stop_dimension={stop_dimension} must lie in [{lo}, {ndim}]{errors.where()}"
        )
    new_shape = (*shape[:lo], math.prod(shape[lo:hi]), *shape[hi:])
    return reshape(operand, new_shape)


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The shape that NumPy broadcasting gives ``shapes``."""
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except ValueError:
        raise ValueError(
            f"Incompatible shapes for broadcasting: {tuple(tuple(s) for s in shapes)}"
            f"{errors.where()}"
        ) from None


def broadcast_to_rank(x: Any, rank: int) -> Any:
    """``x`` with leading size-1 axes added up to ``rank``."""
    aval = get_aval(x)
    if aval.ndim > rank:
        raise ValueError(f"broadcast_to_rank: rank {rank} < x.ndim {aval.ndim}{errors.where()}")
    if aval.ndim == rank:
        return x
    shape = (1,) * (rank - aval.ndim) + aval.shape
    return broadcast_in_dim(x, shape, tuple(range(rank - aval.ndim, rank)))


def broadcasted_iota(dtype: Any, shape: Sequence[int], dimension: int, *, out_sharding=None):
    """An iota along ``dimension``, broadcast over the other axes of ``shape``."""
    shape = tuple(int(s) for s in shape)
    dimension = _axis(dimension, len(shape), "dimension")
    dtype = dtypes.canonicalize(np.dtype(dtype))
    out = broadcast_in_dim(iota_along(dtype, (shape[dimension],)), shape, (dimension,))
    return laid_out(out, out_sharding)


def _fill_dtype(fill_value: Any, dtype: Any) -> tuple[np.dtype, bool]:
    if dtype is not None:
        return dtypes.canonicalize(np.dtype(dtype)), False
    aval = get_aval(fill_value)
    return aval.dtype, aval.weak_type


def full(shape: Sequence[int], fill_value: Any, dtype: Any = None, *, sharding: Any = None):
    """An array of ``shape`` filled with the scalar ``fill_value`` (laid out as ``sharding``
    says, when given)."""
    shape = tuple(int(s) for s in shape)
    if isinstance(fill_value, (list, tuple)):
        fill_value = np.asarray(fill_value)
    if get_aval(fill_value).ndim:
        raise TypeError(
            f"full must be called with a scalar fill_value, got shape "
            f"{get_aval(fill_value).shape}{errors.where()}"
        )
    dtype, weak = _fill_dtype(fill_value, dtype)
    value = convert_element_type(fill_value, dtype, weak_type=weak)
    return laid_out(broadcast_in_dim(value, shape, ()), sharding)


def full_like(
    x: Any,
    fill_value: Any,
    dtype: Any = None,
    shape: Sequence[int] | None = None,
    sharding: Any = None,
) -> Any:
    """``full`` with ``x``'s shape and dtype (and weak type) unless given, laid out as
    ``sharding`` says, else (same shape) typed as ``x`` is over Explicit mesh axes."""
    aval = get_aval(x)
    out_shape = aval.shape if shape is None else tuple(shape)
    if dtype is None:
        value = convert_element_type(fill_value, aval.dtype, weak_type=aval.weak_type)
        out = broadcast_in_dim(value, out_shape, ())
    else:
        out = full(out_shape, fill_value, dtype)
    out = vary_like(out, x)
    if sharding is None and out_shape == aval.shape:
        return retype(out, aval.typed_sharding, x)
    return laid_out(out, sharding)


def empty(shape: Sequence[int], dtype: Any, *, out_sharding=None) -> Any:
    """An array of ``shape`` whose values must not be relied on (zeros here)."""
    return full(shape, 0, dtype, sharding=out_sharding)


def split(operand: Any, sizes: Sequence[int], axis: int = 0) -> list[Any]:
    """Consecutive pieces of ``operand`` along ``axis`` with the given ``sizes``."""
    shape = get_aval(operand).shape
    axis = _axis(axis, len(shape))
    sizes = [int(s) for s in sizes]
    if any(s < 0 for s in sizes) or sum(sizes) != shape[axis]:
        raise ValueError(
            f"split: sizes {sizes} must be non-negative and sum to the size of axis {axis} "
            f"({shape[axis]}){errors.where()}"
        )
    pieces, start = [], 0
    for size in sizes:
        pieces.append(slice_in_dim(operand, start, start + size, 1, axis))
        start += size
    return pieces


def tile(operand: Any, reps: Sequence[int]) -> Any:
    """``operand`` repeated ``reps[d]`` times along each axis ``d`` (one entry per axis)."""
    shape = get_aval(operand).shape
    reps = tuple(int(r) for r in reps)
    if len(reps) != len(shape):
        raise TypeError(
            f"reps length must be equal to the ndim of x, got len(reps)={len(reps)} and "
            f"x.ndim={len(shape)}{errors.where()}"
        )
    # Broadcast to (r0, n0, r1, n1, ...) then merge each pair.
    interleaved = tuple(v for pair in zip(reps, shape) for v in pair)
    dims = tuple(range(1, 2 * len(shape), 2))
    out = broadcast_in_dim(operand, interleaved, dims)
    return reshape(out, tuple(r * n for r, n in zip(reps, shape)))


def stack(operands: Sequence[Any], axis: int = 0) -> Any:
    """Join arrays of one shape along a new ``axis``."""
    operands = list(operands)
    if not operands:
        raise ValueError(f"stack needs at least one array{errors.where()}")
    ndim = get_aval(operands[0]).ndim
    axis = _axis(axis, ndim + 1)
    return concatenate([expand_dims(x, (axis,)) for x in operands], axis)


def unstack(x: Any, axis: int = 0) -> tuple[Any, ...]:
    """The slices of ``x`` along ``axis``, as a tuple."""
    shape = get_aval(x).shape
    axis = _axis(axis, len(shape))
    return tuple(index_in_dim(x, i, axis, keepdims=False) for i in range(shape[axis]))
