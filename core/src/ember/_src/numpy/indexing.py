"""``x[index]``: basic indexing here (integers, static or traced, slices, None, Ellipsis);
array indices go to ``advanced_indexing``.

Static parts lower to ``slice``/``rev``/``squeeze``/``reshape``; a traced integer becomes a
``dynamic_slice`` of size one (wrapped for negative values, as NumPy does).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import Tracer, get_aval
from ember._src.numpy.advanced_indexing import advanced_getitem, axes_consumed, is_advanced
from ember._src.primitives.arithmetic import add
from ember._src.primitives.comparisons import lt
from ember._src.primitives.indexing import dynamic_slice_op, index_to_int32
from ember._src.primitives.selection import select_n
from ember._src.primitives.shape import reshape, squeeze
from ember._src.primitives.slicing import rev, slice_op
from ember._src.runtime.array import Array


def getitem(x: Any, index: Any) -> Any:
    aval = get_aval(x)
    entries = index if isinstance(index, tuple) else (index,)
    entries = _expand_ellipsis(entries, aval.ndim)
    if any(is_advanced(e) for e in entries):
        return advanced_getitem(x, entries, _basic_getitem)
    return _basic_getitem(x, entries)


def _basic_getitem(x: Any, entries: tuple) -> Any:
    aval = get_aval(x)
    # First pass: static slicing and integer picks; collect traced picks and new axes.
    dim = 0
    starts, limits, strides, reversed_dims = [], [], [], []
    squeeze_dims: list[int] = []
    traced: list[tuple[int, Any]] = []
    new_axes: list[int] = []
    out_position = 0
    for entry in entries:
        if entry is None:
            new_axes.append(out_position)
            out_position += 1
            continue
        size = aval.shape[dim]
        if isinstance(entry, slice):
            start, stop, step = entry.indices(size) if _static_slice(entry) else _bad_slice(entry)
            if step > 0:
                count = max(0, (stop - start + step - 1) // step)
                starts.append(start)
                limits.append(start + max(count - 1, 0) * step + 1 if count else start)
                strides.append(step)
            else:
                count = max(0, (start - stop - step - 1) // (-step))
                # Reverse the axis, then take a forward slice of it.
                reversed_dims.append(dim)
                first = size - 1 - start
                starts.append(first)
                limits.append(first + max(count - 1, 0) * (-step) + 1 if count else first)
                strides.append(-step)
            out_position += 1
        elif _is_static_int(entry):
            i = operator.index(entry)
            if not -size <= i < size:
                raise IndexError(
                    f"index {i} is out of bounds for axis {dim} with size {size}{errors.where()}"
                )
            i %= size
            if isinstance(x, Array):
                # Eager: pass the index to the program as an operand rather than baking it in,
                # so picking element after element reuses one compiled program (per shape)
                # instead of compiling one per index value.
                starts.append(0)
                limits.append(size)
                traced.append((dim, np.int32(i)))
            else:
                starts.append(i)
                limits.append(i + 1)
            strides.append(1)
            squeeze_dims.append(dim)
        elif _is_traced_int(entry):
            starts.append(0)
            limits.append(size)
            strides.append(1)
            traced.append((dim, entry))
            squeeze_dims.append(dim)
        else:
            raise _unsupported(entry)
        dim += 1
    for rest in range(dim, aval.ndim):
        starts.append(0)
        limits.append(aval.shape[rest])
        strides.append(1)
        out_position += 1

    result = rev(x, tuple(reversed_dims)) if reversed_dims else x
    result = slice_op(result, starts, limits, strides)
    if traced:
        result = _dynamic_pick(result, traced)
    result = squeeze(result, tuple(squeeze_dims))
    if new_axes:
        shape = list(get_aval(result).shape)
        for position in new_axes:
            shape.insert(position, 1)
        result = reshape(result, tuple(shape))
    return result


def _dynamic_pick(x: Any, traced: list[tuple[int, Any]]) -> Any:
    shape = get_aval(x).shape
    starts: list[Any] = [np.int32(0)] * len(shape)
    sizes = list(shape)
    for dim, index in traced:
        if not isinstance(index, np.int32):  # host indices arrive already wrapped
            index = index_to_int32(index)
            size = np.int32(shape[dim])
            index = select_n(lt(index, np.int32(0)), index, add(index, size))
        starts[dim] = index
        sizes[dim] = 1
    return dynamic_slice_op(x, starts, sizes)


def _expand_ellipsis(entries: tuple, ndim: int) -> tuple:
    ellipses = [i for i, e in enumerate(entries) if e is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError(f"an index can only have a single ellipsis ('...'){errors.where()}")
    consumed = sum(axes_consumed(e) for e in entries)
    if consumed > ndim:
        raise IndexError(
            f"too many indices for array: array is {ndim}-dimensional, but {consumed} were "
            f"indexed{errors.where()}"
        )
    if ellipses:
        i = ellipses[0]
        return entries[:i] + (slice(None),) * (ndim - consumed) + entries[i + 1 :]
    return entries


def _static_slice(entry: slice) -> bool:
    return all(v is None or _is_static_int(v) for v in (entry.start, entry.stop, entry.step))


def _bad_slice(entry: slice) -> tuple[int, int, int]:
    raise IndexError(
        f"slice bounds must be static integers, got {entry}; use lax.dynamic_slice for traced "
        f"start positions{errors.where()}"
    )


def _is_static_int(value: Any) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (int, np.integer)):
        return True
    # A 0-d integer array (NumPy's or a concrete ember one) indexes like the integer it holds.
    if isinstance(value, (np.ndarray, Array)) and value.ndim == 0:
        return dtypes.is_integer(value.dtype)
    return False


def _is_traced_int(value: Any) -> bool:
    return (
        isinstance(value, Tracer) and value.aval.shape == () and dtypes.is_integer(value.aval.dtype)
    )


def _unsupported(entry: Any) -> Exception:
    kind = type(entry).__name__
    if isinstance(entry, (list, np.ndarray, Array, Tracer)):
        return IndexError(
            f"advanced indexing with a {kind} index is not supported yet; use integer and "
            f"slice indices{errors.where()}"
        )
    return IndexError(
        f"only integers, slices (`:`), ellipsis (`...`) and None are valid indices, got "
        f"{kind}{errors.where()}"
    )
