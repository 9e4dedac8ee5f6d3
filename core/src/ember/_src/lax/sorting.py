"""Sorting at the lax level: values sorted together with the indices that sort them, and
``lax.top_k`` / ``approx_max_k`` / ``approx_min_k`` built on it. NumPy's ``argsort`` wraps
``sort_with_indices``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import errors
from ember._src.core import get_aval
from ember._src.primitives.arithmetic import sub
from ember._src.primitives.shape import iota_along, transpose
from ember._src.primitives.slicing import rev, slice_op
from ember._src.primitives.sort import sort


def sort_with_indices(
    operand: Any, axis: int, *, descending: bool = False, stable: bool = True, index_dtype: Any
) -> tuple[Any, Any]:
    """(``operand`` sorted along ``axis``, the positions it was taken from, as
    ``index_dtype``); NaNs sort last (first when ``descending``). Descending order is stable
    too: equal values keep their original order."""
    shape = get_aval(operand).shape
    positions = iota_along(index_dtype, shape, axis)
    if descending:  # stable descending: sort the reversed array, map indices back
        keys, idx = sort((rev(operand, (axis,)), positions), axis, is_stable=True, num_keys=1)
        flipped = sub(np.asarray(shape[axis] - 1, index_dtype)[()], idx)
        return rev(keys, (axis,)), rev(flipped, (axis,))
    return tuple(sort((operand, positions), axis, is_stable=stable, num_keys=1))


def _largest_along_last(operand: Any, k: int) -> tuple[Any, Any]:
    aval = get_aval(operand)
    values, order = sort_with_indices(
        operand, aval.ndim - 1, descending=True, index_dtype=np.int32
    )  # int32 indices, as lax.top_k
    start, limit = (0,) * aval.ndim, (*aval.shape[:-1], k)
    return slice_op(values, start, limit), slice_op(order, start, limit)


def top_k(operand: Any, k: int, *, axis: int = -1) -> tuple[Any, Any]:
    """The ``k`` largest entries along ``axis`` and their indices, largest first."""
    aval = get_aval(operand)
    ndim = aval.ndim
    if not -ndim <= axis < ndim:
        raise ValueError(f"top_k: axis={axis} is out of range for rank {ndim}{errors.where()}")
    axis %= ndim
    if aval.dtype.kind == "c":
        raise ValueError(f"top_k is not compatible with complex inputs{errors.where()}")
    if not 0 <= k <= aval.shape[axis]:
        # the shape of the operand moved to have ``axis`` last, as the check first saw it
        shape = tuple(aval.shape[d] for d in range(ndim) if d != axis) + (aval.shape[axis],)
        raise ValueError(f"top_k: k={k} for an operand of shape {shape}{errors.where()}")
    if axis == ndim - 1:
        return _largest_along_last(operand, k)
    to_last = [d for d in range(ndim) if d != axis] + [axis]
    back = list(np.argsort(to_last))
    values, indices = _largest_along_last(transpose(operand, to_last), k)
    return transpose(values, back), transpose(indices, back)


def _extreme_k(name: str, operand: Any, k: int, axis: int, descending: bool):
    aval = get_aval(operand)
    if not aval.ndim or not -aval.ndim <= axis < aval.ndim:
        raise ValueError(
            f"{name}: reduction_dimension {axis} is out of range for {aval.str_short()}"
            f"{errors.where()}"
        )
    axis %= aval.ndim
    if not 0 <= k <= aval.shape[axis]:
        raise ValueError(f"{name}: k={k} must lie in [0, {aval.shape[axis]}]{errors.where()}")
    values, order = sort_with_indices(
        operand, axis, descending=descending, index_dtype=np.int32
    )  # int32 indices, as JAX
    limits = list(aval.shape)
    limits[axis] = k
    start = (0,) * aval.ndim
    return slice_op(values, start, limits), slice_op(order, start, limits)


def approx_max_k(
    operand: Any,
    k: int,
    reduction_dimension: int = -1,
    recall_target: float = 0.95,
    reduction_input_size_override: int = -1,
    aggregate_to_topk: bool = True,
) -> tuple[Any, Any]:
    """The ``k`` largest entries along ``reduction_dimension`` and their indices, largest
    first (computed exactly)."""
    return _extreme_k("approx_max_k", operand, int(k), reduction_dimension, True)


def approx_min_k(
    operand: Any,
    k: int,
    reduction_dimension: int = -1,
    recall_target: float = 0.95,
    reduction_input_size_override: int = -1,
    aggregate_to_topk: bool = True,
) -> tuple[Any, Any]:
    """The ``k`` smallest entries along ``reduction_dimension`` and their indices, smallest
    first (computed exactly)."""
    return _extreme_k("approx_min_k", operand, int(k), reduction_dimension, False)
