"""Searching a sorted array: ``searchsorted`` and ``digitize``.

Values are ordered as ``sort`` orders them: NaNs last (equal to each other), ``-0.0`` equal
to ``0.0``, complex numbers by real part then imaginary part. The methods are JAX's:

- ``"scan"`` (the default): a binary search, ``ceil(log2(n + 1))`` steps of a loop, each
  one gather and compare per query: O(m log n) work for m queries into n sorted values.
- ``"scan_unrolled"``: the same search with its loop unrolled (no loop in the program).
- ``"sort"``: one stable sort of the sorted values and the queries together; a query's
  insertion point is its rank in the union minus its rank among the queries.
- ``"compare_all"``: every query against every sorted value, O(m n) work but no loop.

All of them give the same answer; insertion points are int32, as JAX's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as enp, reductions
from ember._src.numpy.advanced_indexing import take
from ember._src.numpy.operands import as_operand, promote_dtypes, shape_of
from ember._src.primitives.arithmetic import add, div, sub
from ember._src.primitives.comparisons import gt
from ember._src.primitives.control_flow.loops import fori_loop
from ember._src.primitives.shape import broadcast_in_dim, iota_along, reshape
from ember._src.primitives.slicing import concatenate, rev
from ember._src.primitives.sort import sort as lax_sort
from ember._src.transforms.jit import jit

_METHODS = ("compare_all", "scan", "scan_unrolled", "sort")
_INDEX = dtypes.int32


def _check_method(method: Any) -> None:
    if method not in _METHODS:
        raise ValueError(
            f"invalid argument method={method!r}, expected one of {list(_METHODS)}{errors.where()}"
        )


def searchsorted(
    a: Any, v: Any, side: str = "left", sorter: Any = None, *, method: str = "scan"
) -> Any:
    """Where each of ``v`` would go in the sorted 1-D ``a`` to keep it sorted: the first
    such place (``side="left"``) or the last (``side="right"``)."""
    _check_method(method)
    if side not in ("left", "right"):
        raise ValueError(
            f"invalid argument side={side!r}, expected 'left' or 'right'{errors.where()}"
        )
    a = creation.asarray(a)
    if get_aval(a).ndim != 1:
        raise ValueError(
            f"searchsorted: a should be 1-dimensional, got shape {shape_of(a)}{errors.where()}"
        )
    if sorter is not None:
        a = take(a, sorter, mode="clip")
    a, v = promote_dtypes(a, creation.asarray(as_operand(v)))
    return _searchsorted(a, v, side, method)


def _before(x: Any, y: Any) -> Any:
    """Whether ``x`` sorts strictly before ``y`` in ``sort``'s order (elementwise)."""
    dtype = get_aval(x).dtype
    if dtype.kind == "c":
        x_re, y_re = enp.real(x), enp.real(y)
        tie = _same_place(x_re, y_re)
        return enp.logical_or(
            _before(x_re, y_re), enp.logical_and(tie, _before(enp.imag(x), enp.imag(y)))
        )
    if dtype == dtypes.bool_:
        return enp.logical_and(enp.logical_not(x), y)
    less = enp.less(x, y)
    if not dtypes.is_inexact(dtype):
        return less
    # A NaN sorts after every number: x < NaN unless x is NaN too.
    return enp.logical_or(less, enp.logical_and(enp.isnan(y), enp.logical_not(enp.isnan(x))))


def _same_place(x: Any, y: Any) -> Any:
    """Whether the real ``x`` and ``y`` sort as equals (NaNs equal each other)."""
    both_nan = enp.logical_and(enp.isnan(x), enp.isnan(y))
    return enp.logical_or(enp.equal(x, y), both_nan)


def _goes_at_or_before(v: Any, x: Any, side: str) -> Any:
    """Whether a query ``v`` belongs at or before a sorted value ``x``: for ``"left"`` when
    ``x`` is not before ``v``, for ``"right"`` when ``v`` is before ``x``."""
    return enp.logical_not(_before(x, v)) if side == "left" else _before(v, x)


def _binary_search(a: Any, v: Any, side: str, unroll: bool) -> Any:
    """The first position ``i`` in ``[0, n]`` where ``v`` goes at or before ``a[i]`` (``n``:
    past the end). The answer lies in ``(low, high]``; each step halves that interval, so
    ``ceil(log2(n + 1))`` steps pin it down; a step on a settled interval changes nothing."""
    n = shape_of(a)[0]
    steps = int(np.ceil(np.log2(n + 1)))
    low = creation.full(shape_of(v), -1, _INDEX)
    high = creation.full(shape_of(v), n, _INDEX)
    one, two = np.int32(1), np.int32(2)

    def step(_, bounds):
        low, high = bounds
        open_ = gt(sub(high, low), one)
        # Inside (low, high) while open (then low + high >= 0, so division floors); a
        # settled interval's probe is clipped into range and ignored.
        mid = div(add(low, high), two)
        probe = take(a, mid, mode="clip")
        left = enp.logical_and(open_, _goes_at_or_before(v, probe, side))
        right = enp.logical_and(open_, enp.logical_not(left))
        return enp.where(right, mid, low), enp.where(left, mid, high)

    if not steps:
        return high
    _, high = fori_loop(0, steps, step, (low, high), unroll=True if unroll else 1)
    return high


def _compare_all(a: Any, v: Any, side: str) -> Any:
    """How many of ``a`` come before each query: every pair compared."""
    shape = shape_of(v)
    n = shape_of(a)[0]
    queries = broadcast_in_dim(v, (*shape, n), tuple(range(len(shape))))
    values = broadcast_in_dim(a, (*shape, n), (len(shape),))
    before = enp.logical_not(_goes_at_or_before(queries, values, side))
    return reductions.sum(before, axis=-1, dtype=_INDEX)


def _by_sorting(a: Any, v: Any, side: str) -> Any:
    """Sort the queries and ``a`` together, stably: a query's rank in the union less its rank
    among the other queries counts the values of ``a`` placed before it. For ``"left"`` the
    queries go first (so they precede equal values), for ``"right"`` last."""
    shape = shape_of(v)
    queries = reshape(v, (get_aval(v).size,))
    m, n = shape_of(queries)[0], shape_of(a)[0]
    union = concatenate([queries, a] if side == "left" else [a, queries], 0)
    union_rank = _ranks(union)
    start = 0 if side == "left" else n
    rank_in_union = union_rank[start : start + m]
    return reshape(sub(rank_in_union, _ranks(queries)), shape)


def _ranks(x: Any) -> Any:
    """Each entry's position in the stable sort of the 1-D ``x``."""
    positions = iota_along(_INDEX, shape_of(x), 0)
    _, order = lax_sort((x, positions), 0, is_stable=True, num_keys=1)
    return creation.zeros(shape_of(x), _INDEX).at[order].set(positions)


def _searchsorted_body(a: Any, v: Any, side: str, method: str) -> Any:
    if method == "compare_all":
        return _compare_all(a, v, side)
    if method == "sort":
        return _by_sorting(a, v, side)
    return _binary_search(a, v, side, unroll=method == "scan_unrolled")


# Eagerly, one compiled program per shape rather than a dispatch per loop step.
_searchsorted = jit(_searchsorted_body, inline=True, static_argnames=("side", "method"))


def digitize(x: Any, bins: Any, right: bool = False, *, method: str | None = None) -> Any:
    """The bin of each ``x``: ``i`` with ``bins[i-1] <= x < bins[i]`` for increasing bins
    (``<`` and ``<=`` swapped when ``right``), mirrored for decreasing ones (decided, as in
    JAX, by ``bins[-1] >= bins[0]``)."""
    if method is not None:
        _check_method(method)
    method = method or "scan"
    bins = creation.asarray(bins)
    if get_aval(bins).ndim != 1:
        raise ValueError(
            f"digitize: bins must be 1-dimensional, got shape {shape_of(bins)}{errors.where()}"
        )
    x = creation.asarray(as_operand(x))
    n = shape_of(bins)[0]
    if n == 0:
        return creation.zeros(shape_of(x), _INDEX)
    side = "left" if right else "right"
    increasing = searchsorted(bins, x, side=side, method=method)
    decreasing = sub(np.int32(n), searchsorted(rev(bins, (0,)), x, side=side, method=method))
    return enp.where(enp.greater_equal(bins[-1], bins[0]), increasing, decreasing)
