"""Summary statistics of ``ember.scipy.stats``: mode, rankdata, sem.

mode and rankdata work on sorted runs of equal values: a run's first and last positions come
from cumulative max/min scans, so both are O(n log n) and fixed-shape (jit-friendly).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.lax.cumulative import cummax, cummin
from ember._src.numpy import (
    advanced_indexing,
    creation,
    elementwise as jnp,
    manipulation,
    nan_reductions,
    reductions,
    sorting,
)
from ember._src.numpy.operands import canonicalize_axis, promote_to_inexact


class ModeResult(NamedTuple):
    mode: Any
    count: Any


def _last_axis(a: Any, axis: Any, name: str) -> tuple[Any, int | None]:
    """``a`` with ``axis`` moved last (flattened when ``axis`` is None), and the canonical
    axis."""
    a = creation.asarray(a)
    if axis is None:
        return manipulation.reshape(a, (-1,)), None
    axis = canonicalize_axis(axis, get_aval(a).ndim)
    return manipulation.moveaxis(a, axis, -1), axis


def _runs(sorted_: Any) -> tuple[Any, Any]:
    """For each position of ``sorted_`` (sorted along the last axis), the first and last
    positions of its run of equal values."""
    n = get_aval(sorted_).shape[-1]
    index = np.broadcast_to(np.arange(n, dtype=np.int32), get_aval(sorted_).shape)
    differs = jnp.not_equal(sorted_[..., 1:], sorted_[..., :-1])
    edge = creation.ones(get_aval(sorted_).shape[:-1] + (1,), bool)
    is_first = manipulation.concatenate([edge, differs], axis=-1)
    is_last = manipulation.concatenate([differs, edge], axis=-1)
    last_axis = len(get_aval(sorted_).shape) - 1
    first = cummax(jnp.where(is_first, index, 0), axis=last_axis)
    last = cummin(jnp.where(is_last, index, n - 1), axis=last_axis, reverse=True)
    return first, last


def _check_nan_policy(name: str, nan_policy: str) -> None:
    if nan_policy != "propagate":
        raise NotImplementedError(
            f"{name}: nan_policy={nan_policy!r} is not implemented (only 'propagate')"
            f"{errors.where()}"
        )


def mode(a: Any, axis: int | None = 0, nan_policy: str = "propagate", keepdims: bool = False):
    """The most common value along ``axis`` (the smallest of ties) and its count."""
    _check_nan_policy("mode", nan_policy)
    a = creation.asarray(a)
    ndim = get_aval(a).ndim
    moved, axis = _last_axis(a, axis, "mode")
    if get_aval(moved).shape[-1] == 0:
        raise ValueError(f"mode: the input is empty along the axis{errors.where()}")
    sorted_ = sorting.sort(moved, axis=-1)
    first, last = _runs(sorted_)
    counts = last - first + 1
    # argmax picks the first maximum: on sorted data, the smallest of equally common values.
    best = reductions.argmax(counts, axis=-1, keepdims=True)
    values = advanced_indexing.take_along_axis(sorted_, best, axis=-1)[..., 0]
    count = advanced_indexing.take_along_axis(counts, best, axis=-1)[..., 0]
    count = count.astype(dtypes.default_int())
    if keepdims:
        shape = (1,) * ndim if axis is None else None
        values = _restore(values, axis, shape)
        count = _restore(count, axis, shape)
    return ModeResult(values, count)


def _restore(x: Any, axis: int | None, shape: tuple[int, ...] | None) -> Any:
    if shape is not None:
        return manipulation.reshape(x, shape)
    return manipulation.expand_dims(x, axis)


_RANK_METHODS = ("average", "min", "max", "dense", "ordinal")


def rankdata(
    a: Any, method: str = "average", *, axis: int | None = None, nan_policy: str = "propagate"
) -> Any:
    """Ranks (from 1) of the data along ``axis`` (of the flattened data when None), ties
    resolved by ``method``; a slice holding a nan ranks as all nan."""
    if method not in _RANK_METHODS:
        raise ValueError(f"rankdata: unknown method {method!r}{errors.where()}")
    _check_nan_policy("rankdata", nan_policy)
    a = creation.asarray(a)
    moved, axis_ = _last_axis(a, axis, "rankdata")
    order = sorting.argsort(moved, axis=-1, stable=True)
    sorted_ = advanced_indexing.take_along_axis(moved, order, axis=-1)
    first, last = _runs(sorted_)
    float_dtype = dtypes.default_float()
    if method == "ordinal":
        n = get_aval(moved).shape[-1]
        by_position = np.broadcast_to(np.arange(1, n + 1), get_aval(moved).shape)
    elif method == "min":
        by_position = first + 1
    elif method == "max":
        by_position = last + 1
    elif method == "average":
        by_position = (first + last).astype(float_dtype) / 2 + 1
    else:  # dense: the number of distinct values up to and including this one
        starts = jnp.equal(first, np.arange(get_aval(first).shape[-1]))
        by_position = sorting.cumsum(starts.astype(np.int32), axis=-1)
    by_position = creation.asarray(by_position).astype(float_dtype)
    # Scatter the ranks back to the data's order: the inverse permutation of ``order``.
    inverse = sorting.argsort(order, axis=-1)
    ranks = advanced_indexing.take_along_axis(by_position, inverse, axis=-1)
    if dtypes.is_inexact(get_aval(moved).dtype):
        has_nan = reductions.any(jnp.isnan(moved), axis=-1, keepdims=True)
        ranks = jnp.where(has_nan, np.asarray(np.nan, float_dtype), ranks)
    if axis_ is None:
        return ranks
    return manipulation.moveaxis(ranks, -1, axis_)


def sem(
    a: Any,
    axis: int | None = 0,
    ddof: int = 1,
    nan_policy: str = "propagate",
    *,
    keepdims: bool = False,
) -> Any:
    """The standard error of the mean, ``std(a, ddof) / sqrt(n)``, along ``axis``;
    ``nan_policy='omit'`` leaves nans out of both."""
    (a,) = promote_to_inexact(creation.asarray(a))
    if nan_policy == "propagate":
        size = get_aval(a).size if axis is None else get_aval(a).shape[axis]
        spread = reductions.std(a, axis=axis, ddof=ddof, keepdims=keepdims)
        return spread / np.asarray(math.sqrt(size), get_aval(spread).dtype)
    if nan_policy == "omit":
        count = reductions.sum(jnp.logical_not(jnp.isnan(a)), axis=axis, keepdims=keepdims).astype(
            get_aval(a).dtype
        )
        return nan_reductions.nanstd(a, axis=axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(count)
    raise ValueError(f"sem: nan_policy={nan_policy!r} is not supported{errors.where()}")
