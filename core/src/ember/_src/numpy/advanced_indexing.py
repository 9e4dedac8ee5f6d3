"""Advanced (array) indexing, ``take`` and ``take_along_axis``.

``x[idx]`` with integer or boolean arrays follows NumPy's rules: the advanced indices are
broadcast together, and their shape replaces the indexed axes in place when those axes are
adjacent, or goes first when they are not. Slices are applied first, then one ``gather``
picks the elements. Boolean masks must be concrete (their result shape depends on their
values), as in JAX. Traced out-of-range integer indices are clamped (XLA's gather semantics);
static ones raise ``IndexError``, as in NumPy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import Tracer, get_aval
from ember._src.primitives.arithmetic import add, max as max_, min as min_, rem
from ember._src.primitives.bits import bitwise_and
from ember._src.primitives.comparisons import ge, lt
from ember._src.primitives.gather_scatter import GatherDimensionNumbers, gather, gather_fill_value
from ember._src.primitives.selection import select_n
from ember._src.primitives.shape import (
    broadcast_to_shape,
    convert_element_type,
    expand_dims,
    reshape,
)
from ember._src.primitives.slicing import concatenate
from ember._src.runtime.array import Array


def is_advanced(entry: Any) -> bool:
    """An index entry that makes indexing "advanced": a list or an array of rank >= 1, or a
    boolean array of any rank."""
    if isinstance(entry, (list, tuple)):
        return True
    if isinstance(entry, (np.ndarray, Array, Tracer)):
        aval = get_aval(entry)
        return aval.ndim >= 1 or aval.dtype == dtypes.bool_
    return isinstance(entry, np.bool_) or isinstance(entry, bool)


def advanced_getitem(x: Any, entries: tuple, basic_getitem) -> Any:
    """``x[entries]`` where at least one entry is advanced (entries have no Ellipsis)."""
    if any(e is None or _is_scalar_bool(e) for e in entries):
        x, entries = _new_axes_as_slices(x, entries)
    entries = _expand_booleans(entries, get_aval(x))
    # Slices first (keeping every axis), then the array/int picks in one gather.
    slices = tuple(e if isinstance(e, slice) else slice(None) for e in entries)
    y = basic_getitem(x, slices) if any(s != slice(None) for s in slices) else x
    shape = get_aval(y).shape
    adv_dims = [d for d, e in enumerate(entries) if not isinstance(e, slice)]
    arrays = [_index_array(entries[d], shape[d], d) for d in adv_dims]
    common = np.broadcast_shapes(*[get_aval(a).shape for a in arrays])
    arrays = [broadcast_to_shape(a, common) for a in arrays]
    indices = concatenate([expand_dims(a, (-1,)) for a in arrays], len(common))
    remaining = [d for d in range(len(shape)) if d not in adv_dims]
    contiguous = adv_dims == list(range(adv_dims[0], adv_dims[0] + len(adv_dims)))
    if contiguous:
        before = sum(1 for d in remaining if d < adv_dims[0])
        after = len(remaining) - before
        offset = tuple(range(before)) + tuple(
            range(before + len(common), before + len(common) + after)
        )
    else:
        offset = tuple(range(len(common), len(common) + len(remaining)))
    dn = GatherDimensionNumbers(
        offset_dims=offset, collapsed_slice_dims=tuple(adv_dims), start_index_map=tuple(adv_dims)
    )
    sizes = tuple(1 if d in adv_dims else shape[d] for d in range(len(shape)))
    out_shape = _result_shape(common, [shape[d] for d in remaining], offset)
    if 0 in out_shape:
        # Nothing is picked: skip the gather, whose size-1 slices cannot fit an axis of
        # length 0 (x[[]] on an empty axis), as NumPy and JAX return an empty array.
        return broadcast_to_shape(np.zeros((), get_aval(y).dtype), out_shape)
    return gather(y, indices, dn, sizes)


def _result_shape(batch: tuple, window: list, offset_dims: tuple) -> tuple:
    """The gather's output shape: the ``window`` sizes at ``offset_dims``, ``batch`` around."""
    batch_sizes, window_sizes = iter(batch), iter(window)
    rank = len(batch) + len(window)
    return tuple(next(window_sizes) if d in offset_dims else next(batch_sizes) for d in range(rank))


def _is_scalar_bool(entry: Any) -> bool:
    """A concrete scalar boolean index: True/False or a 0-d boolean array."""
    if isinstance(entry, (bool, np.bool_)):
        return True
    if isinstance(entry, (np.ndarray, Array)):
        aval = get_aval(entry)
        return aval.ndim == 0 and aval.dtype == dtypes.bool_
    return False


def _new_axes_as_slices(x: Any, entries: tuple) -> tuple[Any, tuple]:
    """``x`` with a size-1 axis inserted where each None or scalar boolean is, and the index
    with a full slice for a None and a one-element mask for a boolean. In NumPy a None is such
    an axis: it separates the advanced indices on either side (which then go first in the
    result) and otherwise stays where it is; a scalar boolean is an advanced index over such
    an axis, keeping it (True) or leaving it empty (False), as NumPy and JAX read it."""
    shape = get_aval(x).shape
    new_shape: list[int] = []
    new_entries: list[Any] = []
    dim = 0
    for entry in entries:
        if entry is None or _is_scalar_bool(entry):
            new_shape.append(1)
            new_entries.append(slice(None) if entry is None else np.array([bool(entry)]))
            continue
        consumed = axes_consumed(entry)
        new_shape.extend(shape[dim : dim + consumed])
        new_entries.append(entry)
        dim += consumed
    new_shape.extend(shape[dim:])
    return reshape(x, tuple(new_shape)), tuple(new_entries)


def axes_consumed(entry: Any) -> int:
    """How many axes an index entry indexes (a boolean mask: its rank)."""
    if entry is None or entry is Ellipsis or isinstance(entry, (bool, np.bool_)):
        return 0
    if isinstance(entry, (np.ndarray, Array, list)):
        mask = np.asarray(entry)
        if mask.dtype == np.bool_:
            return mask.ndim
    return 1


def _expand_booleans(entries: tuple, aval: core.ShapedArray) -> tuple:
    expanded: list[Any] = []
    dim = 0
    for entry in entries:
        mask = _as_bool_mask(entry)
        if mask is None:
            expanded.append(entry)
            dim += 1
            continue
        indexed = aval.shape[dim : dim + mask.ndim]
        # An empty mask axis selects nothing from an axis of any length (NumPy and JAX).
        if len(indexed) != mask.ndim or any(
            k not in (size, 0) for k, size in zip(mask.shape, indexed)
        ):
            raise IndexError(
                f"boolean index of shape {mask.shape} does not match the indexed axes "
                f"{indexed}{errors.where()}"
            )
        expanded.extend(np.nonzero(mask))
        dim += mask.ndim
    return tuple(expanded)


def _as_bool_mask(entry: Any) -> np.ndarray | None:
    if isinstance(entry, Tracer) and entry.aval.dtype == dtypes.bool_:
        raise errors.NonConcreteBooleanIndexError(
            f"a boolean index mask must be concrete: the result's shape depends on its values. "
            f"Use ember.numpy.where(mask, x, fill) or pass a static mask{errors.where()}"
        )
    if isinstance(entry, (np.ndarray, Array, list)):
        array = np.asarray(entry)
        if array.dtype == np.bool_:
            return array
    return None


def _index_array(entry: Any, size: int, dim: int) -> Any:
    """An int32 index array for one axis, with negative values wrapped as NumPy does."""
    if isinstance(entry, (int, np.integer, list, np.ndarray)):
        array = np.asarray(entry)
        if not dtypes.is_integer(array.dtype):
            raise IndexError(
                f"array indices must be integers or booleans, got {array.dtype}{errors.where()}"
            )
        if array.size and (array.min() < -size or array.max() >= size):
            bad = array[(array < -size) | (array >= size)].flat[0]
            raise IndexError(
                f"index {bad} is out of bounds for axis {dim} with size {size}{errors.where()}"
            )
        return np.asarray(np.where(array < 0, array + size, array), np.int32)
    aval = get_aval(entry)
    if not dtypes.is_integer(aval.dtype):
        raise IndexError(
            f"array indices must be integers or booleans, got {aval.str_short()}{errors.where()}"
        )
    index = convert_element_type(entry, dtypes.int32)
    return select_n(lt(index, np.int32(0)), index, add(index, np.int32(size)))


# --------------------------------------------------------------------------------------------
# take and take_along_axis


def take(
    a: Any,
    indices: Any,
    axis: int | None = None,
    out: None = None,
    mode: str | None = None,
    unique_indices: bool = False,
    indices_are_sorted: bool = False,
    fill_value=None,
):
    """Elements of ``a`` at ``indices`` along ``axis`` (flattened when ``axis`` is None).

    ``mode``: ``"fill"`` (JAX's default: out-of-range picks give ``fill_value``, NaN for
    floats), ``"clip"`` or ``"wrap"``. ``unique_indices`` and ``indices_are_sorted`` are
    promises that let JAX pick a faster gather; ember's result is the same without them.
    """
    if out is not None:
        raise NotImplementedError(
            f"The 'out' argument to jnp.take is not supported.{errors.where()}"
        )
    if mode == "raise":
        raise NotImplementedError(f"The 'raise' mode to jnp.take is not supported.{errors.where()}")
    aval = get_aval(a)
    if axis is None:
        a, axis = reshape(a, (aval.size,)), 0
        aval = get_aval(a)
    axis = _axis(axis, aval.ndim)
    size = aval.shape[axis]
    mode = mode or "fill"
    if mode not in ("fill", "clip", "wrap"):
        raise ValueError(f"take: mode must be 'fill', 'clip' or 'wrap', got {mode!r}")
    index, valid = _take_index(as_operand(indices), size, mode)
    if size == 0:
        # A gather can't take a slice of an empty axis; only an empty take makes sense (JAX).
        if get_aval(index).size:
            raise IndexError(f"Cannot do a non-empty take() from an empty axis.{errors.where()}")
        shape = aval.shape[:axis] + get_aval(index).shape + aval.shape[axis + 1 :]
        return broadcast_to_shape(np.zeros((), aval.dtype), shape)
    else:
        picked = advanced_getitem(a, (slice(None),) * axis + (index,), None)
    if valid is None:
        return picked
    shape = get_aval(picked).shape
    index_ndim = get_aval(index).ndim
    valid = reshape(
        valid, (1,) * axis + get_aval(valid).shape + (1,) * (len(shape) - axis - index_ndim)
    )
    fill = gather_fill_value(aval.dtype) if fill_value is None else fill_value
    return select_n(broadcast_to_shape(valid, shape), _full(fill, picked), picked)


def _take_index(index: Any, size: int, mode: str) -> tuple[Any, Any]:
    """``take``'s indices brought into ``[0, size)`` as int32, and (for ``"fill"``) whether
    each one was in range. As JAX: ``"clip"`` clamps without wrapping negatives, ``"wrap"``
    reduces modulo ``size``, ``"fill"`` counts negatives from the end. The arithmetic runs in
    the index's own integer type, so that a 64-bit index is not wrapped by the narrowing."""
    dtype = get_aval(index).dtype
    if not dtypes.is_integer(dtype):
        raise ValueError(f"take: indices must have an integer type, got {dtype}{errors.where()}")
    if dtype.itemsize < 4:
        dtype = dtypes.int32  # every size fits in it
        index = convert_element_type(index, dtype)

    def const(value: int) -> Any:
        return np.asarray(value, dtype)[()]

    valid = None
    if mode == "clip":
        index = max_(min_(index, const(max(size - 1, 0))), const(0))
    elif mode == "wrap":
        index = rem(index, const(max(size, 1)))
        if dtype.kind == "i":  # the remainder keeps the dividend's sign
            index = select_n(lt(index, const(0)), index, add(index, const(size)))
    else:
        in_range = lt(index, const(size))
        if dtype.kind == "i":
            in_range = bitwise_and(in_range, ge(index, const(-size)))
            index = select_n(lt(index, const(0)), index, add(index, const(size)))
        valid = in_range
        index = select_n(in_range, const(0), index)
    return convert_element_type(index, dtypes.int32), valid


def _full(value: Any, like: Any) -> Any:
    aval = get_aval(like)
    return broadcast_to_shape(np.asarray(value, aval.dtype), aval.shape)


def take_along_axis(
    arr: Any,
    indices: Any,
    axis: int | None = -1,
    mode: str | None = None,
    fill_value: Any = None,
    *,
    wrap_negative_indices: bool | None = None,
) -> Any:
    """``arr`` picked along ``axis`` by ``indices`` (of ``arr``'s rank), as in NumPy.

    Out-of-range indices give ``fill_value`` (NaN for floats) in the default ``"fill"`` mode
    and the nearest edge in ``"clip"`` mode, as in JAX; negative indices count from the end
    unless ``wrap_negative_indices=False``."""
    if mode not in (None, "fill", "clip", "promise_in_bounds"):
        raise ValueError(
            f"take_along_axis: mode must be 'fill', 'clip' or 'promise_in_bounds', got "
            f"{mode!r}{errors.where()}"
        )
    aval = get_aval(arr)
    if axis is None:
        arr, axis = reshape(arr, (aval.size,)), 0
        aval = get_aval(arr)
    indices = as_operand(indices)
    idx_aval = get_aval(indices)
    if idx_aval.ndim != aval.ndim:
        raise ValueError(
            f"take_along_axis: indices of rank {idx_aval.ndim} for an array of rank {aval.ndim}"
            f"{errors.where()}"
        )
    axis = _axis(axis, aval.ndim)
    size = np.int32(aval.shape[axis])
    index = convert_element_type(indices, dtypes.int32)
    if wrap_negative_indices is None or wrap_negative_indices:
        index = select_n(lt(index, np.int32(0)), index, add(index, size))
    in_range = bitwise_and(ge(index, np.int32(0)), lt(index, size))
    clamped = max_(min_(index, np.int32(max(size - 1, 0))), np.int32(0))
    entries = []
    for d in range(aval.ndim):
        if d == axis:
            entries.append(clamped)
        else:
            shape = [1] * aval.ndim
            shape[d] = aval.shape[d]
            entries.append(np.arange(aval.shape[d], dtype=np.int32).reshape(shape))
    picked = advanced_getitem(arr, tuple(entries), None)
    if mode in ("clip", "promise_in_bounds"):
        return picked
    fill = gather_fill_value(aval.dtype) if fill_value is None else fill_value
    valid = broadcast_to_shape(in_range, get_aval(picked).shape)
    return select_n(valid, _full(fill, picked), picked)


def _axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < max(ndim, 1):
        raise np.exceptions.AxisError(
            f"axis {axis} is out of bounds for array of dimension {ndim}{errors.where()}"
        )
    return axis % max(ndim, 1)


def as_operand(x: Any) -> Any:
    return np.asarray(x) if isinstance(x, (list, tuple, int)) else x
