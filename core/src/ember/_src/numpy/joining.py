"""Joining and editing along an axis: append, insert, delete, block, column_stack, dstack,
atleast_3d.

``insert`` accepts traced insertion points (their count is static); ``delete`` needs
concrete indices unless ``assume_unique_indices=True``, as in JAX.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import Tracer, get_aval
from ember._src.numpy import creation, elementwise as enp, manipulation, reductions
from ember._src.numpy.advanced_indexing import take
from ember._src.numpy.concrete import concrete_or_none
from ember._src.numpy.operands import canonicalize_axis
from ember._src.numpy.sorting import argsort, sort
from ember._src.runtime.array import Array


def append(arr: Any, values: Any, axis: int | None = None) -> Any:
    """``values`` joined to the end of ``arr`` (both flattened when ``axis`` is None)."""
    if axis is None:
        return manipulation.concatenate(
            [
                manipulation.ravel(creation.asarray(arr)),
                manipulation.ravel(creation.asarray(values)),
            ]
        )
    return manipulation.concatenate([creation.asarray(arr), creation.asarray(values)], axis=axis)


def atleast_3d(*arys: Any) -> Any:
    """Each argument viewed with at least three axes: (N,) becomes (1, N, 1), (M, N) becomes
    (M, N, 1). One argument gives one array, several give a list."""
    results = [_at_least_3d(a) for a in arys]
    return results[0] if len(results) == 1 else results  # (no arguments: an empty list)


def _at_least_3d(a: Any) -> Any:
    a = creation.asarray(a)
    shape = get_aval(a).shape
    if len(shape) == 0:
        return manipulation.reshape(a, (1, 1, 1))
    if len(shape) == 1:
        return manipulation.reshape(a, (1, shape[0], 1))
    if len(shape) == 2:
        return manipulation.reshape(a, (*shape, 1))
    return a


def column_stack(tup: Any) -> Any:
    """1-D arrays become the columns of a 2-D array; wider arrays are joined on axis 1."""
    columns = []
    for a in _sequence("column_stack", tup):
        a = creation.asarray(a)
        if get_aval(a).ndim < 2:
            a = manipulation.reshape(a, (-1, 1))
        columns.append(a)
    return manipulation.concatenate(columns, axis=1)


def dstack(tup: Any, dtype: Any = None) -> Any:
    """Arrays joined along the third axis, after ``atleast_3d``."""
    pieces = [_at_least_3d(a) for a in _sequence("dstack", tup)]
    return manipulation.concatenate(pieces, axis=2, dtype=dtype)


def _sequence(name: str, tup: Any) -> list[Any]:
    if isinstance(tup, (Array, Tracer, np.ndarray)):
        return [tup[i] for i in range(get_aval(tup).shape[0])] if get_aval(tup).ndim else [tup]
    pieces = list(tup)
    if not pieces:
        raise ValueError(f"{name}: need at least one array to stack{errors.where()}")
    return pieces


# --------------------------------------------------------------------------------------------
# block


def block(arrays: Any) -> Any:
    """An array assembled from nested lists of blocks: the innermost lists are joined along
    the last axis, the next ones along the second last, and so on."""
    depth, max_ndim = _block_structure(arrays, ())
    ndim = max(depth, max_ndim)
    return _assemble(arrays, depth, ndim)


def _block_structure(arrays: Any, index: tuple[int, ...]) -> tuple[int, int]:
    """(list depth, largest block rank), checking that every leaf sits at the same depth."""
    if isinstance(arrays, tuple):
        raise TypeError(
            f"block: arrays{_where_in(index)} is a tuple; only lists can be used to arrange "
            f"blocks{errors.where()}"
        )
    if not isinstance(arrays, list):
        return 0, get_aval(creation.asarray(arrays)).ndim
    if not arrays:
        raise ValueError(f"block: lists cannot be empty (arrays{_where_in(index)}){errors.where()}")
    parts = [_block_structure(a, (*index, i)) for i, a in enumerate(arrays)]
    depths = {d for d, _ in parts}
    if len(depths) != 1:
        raise ValueError(
            f"block: list depths are mismatched inside arrays{_where_in(index)}: "
            f"{[d for d, _ in parts]}{errors.where()}"
        )
    return depths.pop() + 1, max(n for _, n in parts)


def _where_in(index: tuple[int, ...]) -> str:
    return "".join(f"[{i}]" for i in index)


def _assemble(arrays: Any, depth: int, ndim: int) -> Any:
    if depth == 0:
        a = creation.asarray(arrays)
        shape = get_aval(a).shape
        return manipulation.reshape(a, (1,) * (ndim - len(shape)) + shape)
    pieces = [_assemble(a, depth - 1, ndim) for a in arrays]
    return manipulation.concatenate(pieces, axis=-depth)


# --------------------------------------------------------------------------------------------
# insert and delete


def insert(arr: Any, obj: Any, values: Any, axis: int | None = None) -> Any:
    """``values`` inserted into ``arr`` before the positions ``obj`` along ``axis``.

    ``obj`` is a slice, an integer or a 1-D integer array (it may be traced)."""
    a = creation.asarray(arr)
    if axis is None:
        a, axis = manipulation.ravel(a), 0
    axis = canonicalize_axis(core.concrete_or_error(axis, "insert's axis"), get_aval(a).ndim)
    length = get_aval(a).shape[axis]
    positions = _insert_positions(obj, length)
    values = _as_rank(creation.asarray(values, dtype=get_aval(a).dtype), get_aval(a).ndim)
    if get_aval(positions).ndim == 0:
        # One insertion point takes all of ``values``, whose first axis runs along ``axis``.
        values = manipulation.moveaxis(values, 0, axis)
        count = get_aval(values).shape[axis]
        positions = (
            np.full(count, positions, np.int32)
            if isinstance(positions, np.ndarray)
            else manipulation.broadcast_to(positions, (count,))
        )
    count = get_aval(positions).shape[0]
    target = list(get_aval(a).shape)
    target[axis] = count
    try:
        values = manipulation.broadcast_to(values, tuple(target))
    except ValueError:
        raise ValueError(
            f"insert: values of shape {get_aval(values).shape} do not fit the {count} inserted "
            f"slot(s) of shape {tuple(target)}{errors.where()}"
        ) from None
    order = _insertion_order(positions, length)
    joined = manipulation.concatenate([a, values], axis=axis)
    return take(joined, order, axis=axis, mode="clip")


def _insert_positions(obj: Any, length: int) -> Any:
    if isinstance(obj, slice):
        return np.arange(*obj.indices(length), dtype=np.int32)
    known = concrete_or_none(obj)
    positions = creation.asarray(obj) if known is None else np.asarray(known)
    aval = get_aval(positions)
    if aval.ndim > 1:
        raise ValueError(
            f"insert: obj must be a slice, a scalar or a 1-D array, got shape {aval.shape}"
            f"{errors.where()}"
        )
    if aval.size == 0 and not isinstance(positions, (Array, Tracer)):
        return np.zeros((0,), np.int32)
    if not dtypes.is_integer(aval.dtype):
        raise IndexError(f"insert: index array must be integers, got {aval.dtype}{errors.where()}")
    if isinstance(positions, np.ndarray):
        bad = positions[(positions < -length) | (positions > length)]
        if bad.size:
            raise IndexError(
                f"insert: index {bad.flat[0]} is out of bounds for axis with size {length}"
                f"{errors.where()}"
            )
        return np.where(positions < 0, positions + length, positions).astype(np.int32)
    positions = manipulation.astype(positions, np.int32)
    wrapped = enp.where(enp.less(positions, 0), positions + np.int32(length), positions)
    return enp.clip(wrapped, np.int32(0), np.int32(length))


def _as_rank(values: Any, ndim: int) -> Any:
    shape = get_aval(values).shape
    return (
        manipulation.reshape(values, (1,) * (ndim - len(shape)) + shape)
        if len(shape) < ndim
        else values
    )


def _insertion_order(positions: Any, length: int) -> Any:
    """For each output slot, its source in ``concatenate([arr, values])``.

    Original element i lands at i + #(positions <= i); the inserted element j lands at
    positions[j] + (its rank among the positions, ties kept in order). Inverting that
    permutation with an argsort gives the gather indices."""
    count = get_aval(positions).shape[0]
    original = np.arange(length, dtype=np.int32)
    if isinstance(positions, np.ndarray):  # concrete positions: work it out on the host
        ranks = np.argsort(np.argsort(positions, kind="stable"), kind="stable")
        shifts = (positions[None, :] <= original[:, None]).sum(axis=1)
        landing = np.concatenate([original + shifts, positions + ranks])
        return np.argsort(landing, kind="stable").astype(np.int32)
    shifts = reductions.sum(
        enp.less_equal(manipulation.expand_dims(positions, 0), original[:, None]),
        axis=1,
        dtype=np.int32,
    )
    ranks = argsort(argsort(positions)).astype(np.int32) if count else positions
    landing = manipulation.concatenate([original + shifts, positions + ranks])
    return argsort(landing)


def delete(arr: Any, obj: Any, axis: int | None = None, *, assume_unique_indices: bool = False):
    """``arr`` without the entries ``obj`` (a slice, indices or a boolean mask) along ``axis``.

    Traced ``obj`` needs ``assume_unique_indices=True`` (the result's length then is static)."""
    a = creation.asarray(arr)
    if axis is None:
        a, axis = manipulation.ravel(a), 0
    axis = canonicalize_axis(axis, get_aval(a).ndim)
    length = get_aval(a).shape[axis]
    if isinstance(obj, slice):
        keep = np.ones(length, bool)
        keep[obj] = False
        return take(a, np.flatnonzero(keep).astype(np.int32), axis=axis, mode="clip")
    known = concrete_or_none(obj)
    if known is not None:
        return take(a, _static_kept(np.asarray(known), length), axis=axis, mode="clip")
    if isinstance(obj, Tracer):
        if not assume_unique_indices or not dtypes.is_integer(get_aval(obj).dtype):
            raise errors.ConcretizationTypeError(
                f"delete: a traced obj argument has a value-dependent result length; pass "
                f"concrete indices, or integer indices with assume_unique_indices=True"
                f"{errors.where()}"
            )
    return take(a, _kept_positions(obj, length), axis=axis, mode="clip")


def _static_kept(obj: np.ndarray, length: int) -> np.ndarray:
    keep = np.ones(length, bool)
    if obj.dtype == np.bool_:
        if obj.shape != (length,):
            raise ValueError(
                f"delete: a boolean obj must be 1-D with the axis' length {length}, got shape "
                f"{obj.shape}{errors.where()}"
            )
        keep = ~obj
    elif obj.size:
        if obj.dtype.kind not in "iu":
            raise IndexError(f"delete: obj must be integers or booleans, got {obj.dtype}")
        bad = obj[(obj < -length) | (obj >= length)]
        if bad.size:
            raise IndexError(
                f"delete: index {bad.flat[0]} is out of bounds for axis with size {length}"
                f"{errors.where()}"
            )
        keep[obj] = False
    return np.flatnonzero(keep).astype(np.int32)


def _kept_positions(obj: Any, length: int) -> Any:
    """The positions that survive deleting the distinct traced indices ``obj``.

    The k-th survivor is k plus the number of deleted positions at or before it; with the
    deleted positions sorted, deleted[j] - j counts the survivors before deleted[j]."""
    deleted = manipulation.ravel(manipulation.astype(obj, np.int32))
    deleted = enp.where(enp.less(deleted, 0), deleted + np.int32(length), deleted)
    count = get_aval(deleted).shape[0]
    survivors_before = sort(deleted) - np.arange(count, dtype=np.int32)
    kept = np.arange(max(length - count, 0), dtype=np.int32)
    skips = reductions.sum(
        enp.greater_equal(kept[:, None], manipulation.expand_dims(survivors_before, 0)),
        axis=1,
        dtype=np.int32,
    )
    return kept + skips
