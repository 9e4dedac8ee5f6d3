"""Set routines on arrays: ``unique``, ``isin``, ``union1d``, ``intersect1d``, ``setdiff1d`` and
``setxor1d``; results are sorted and unique, and ``size=`` pads them to a static length under
``jit``, as in JAX."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import Tracer, get_aval
from ember._src.numpy import (
    creation,
    elementwise as enp,
    manipulation,
    reductions,
    searching,
    sorting,
)
from ember._src.numpy.advanced_indexing import take
from ember._src.numpy.operands import (
    promote_dtypes,
    shape_of,
)
from ember._src.numpy.searching import digitize, searchsorted  # noqa: F401 (re-exported)
from ember._src.numpy.sorting import argsort, cumsum
from ember._src.numpy.unique_slices import unique_slices
from ember._src.primitives.shape import reshape
from ember._src.primitives.slicing import concatenate


def setxor1d(
    ar1: Any,
    ar2: Any,
    assume_unique: bool = False,
    *,
    size: int | None = None,
    fill_value: Any = None,
) -> Any:
    """Values in ``ar1`` or ``ar2`` but not both, sorted and unique; ``size=`` pads (with
    ``fill_value``, default the smallest result) or truncates to a static length."""
    a, b = promote_dtypes(
        manipulation.ravel(creation.asarray(ar1)), manipulation.ravel(creation.asarray(ar2))
    )
    joined = manipulation.concatenate([a, b])
    _needs_size(joined, size, "setxor1d")
    # The values of each array missing from the other form two disjoint sets: their union
    # (deduplicated) is the symmetric difference, whether or not the inputs were unique.
    keep = manipulation.concatenate([isin(a, b, invert=True), isin(b, a, invert=True)])
    return _masked_unique(joined, keep, size, fill_value)


_ISIN_METHODS = ("auto", "compare_all", "binary_search", "sort")


def isin(
    element: Any,
    test_elements: Any,
    assume_unique: bool = False,
    invert: bool = False,
    *,
    method: str = "auto",
) -> Any:
    """Whether each element appears in ``test_elements``. ``"compare_all"`` compares every
    pair (O(n*m) work, quickest for small inputs); ``"binary_search"`` and ``"sort"`` sort
    ``test_elements`` and look each element up (O((n + m) log m)); ``"auto"`` picks by the
    number of pairs. ``assume_unique`` only chooses JAX's algorithm; answers are the same."""
    if method not in _ISIN_METHODS:
        raise ValueError(
            f"isin: method must be one of {_ISIN_METHODS}, got {method!r}{errors.where()}"
        )
    element, test = promote_dtypes(creation.asarray(element), creation.asarray(test_elements))
    flat = manipulation.reshape(test, (get_aval(test).size,))
    if get_aval(flat).size == 0 or get_aval(element).size == 0:
        found = creation.zeros(shape_of(element), dtypes.bool_)
    elif method == "compare_all" or (
        method == "auto" and get_aval(element).size * get_aval(flat).size <= _ISIN_PAIRS
    ):
        matches = enp.equal(manipulation.expand_dims(element, -1), flat)
        found = reductions.any(matches, axis=-1)
    else:
        found = _isin_sorted(element, flat)
    return enp.logical_not(found) if invert else found


# Above this many (element, test element) pairs, "auto" sorts rather than compares them all.
_ISIN_PAIRS = 1 << 16


def _isin_sorted(element: Any, flat_test: Any) -> Any:
    """Membership by binary search in the sorted test elements: the candidate where each
    element would go is the only one that can equal it (NaN equals nothing, as with ==)."""
    ordered = sorting.sort(flat_test)
    place = searching.searchsorted(ordered, element)
    last = get_aval(ordered).size - 1
    candidate = take(ordered, enp.minimum(place, last))
    return enp.equal(element, candidate)


def _needs_size(x: Any, size: Any, what: str) -> None:
    if size is None and isinstance(x, Tracer):
        raise errors.ConcretizationTypeError(
            f"{what} of a traced array has a value-dependent shape; pass size=...{errors.where()}"
        )


def union1d(ar1: Any, ar2: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    joined = manipulation.concatenate(
        [manipulation.ravel(creation.asarray(ar1)), manipulation.ravel(creation.asarray(ar2))]
    )
    _needs_size(joined, size, "union1d")
    return unique(joined, size=size, fill_value=fill_value)


def intersect1d(
    ar1: Any,
    ar2: Any,
    assume_unique: bool = False,
    return_indices: bool = False,
    *,
    size: int | None = None,
    fill_value: Any = None,
) -> Any:
    """Sorted unique values found in both arrays; with ``return_indices`` also the index of
    each value's first occurrence in the flattened ``ar1`` and ``ar2`` (padding entries get
    the array's length, as in JAX). ``assume_unique`` is accepted; the result is the same."""
    a, b = promote_dtypes(
        manipulation.ravel(creation.asarray(ar1)), manipulation.ravel(creation.asarray(ar2))
    )
    _needs_size(a, size, "intersect1d")
    present = isin(a, b)
    values = _masked_unique(a, present, size, fill_value)
    if not return_indices:
        return values
    is_real = creation.ones(shape_of(values), dtypes.bool_)
    if size is not None:
        n_results = reductions.sum(enp.logical_and(present, _first_occurrences(a)), dtype=np.int32)
        is_real = enp.less(creation.arange(size, dtype=np.int32), n_results)
    return values, _first_index_of(values, a, is_real), _first_index_of(values, b, is_real)


def _first_occurrences(a: Any) -> Any:
    """Whether each entry of the 1-D ``a`` is the first one holding its value."""
    same = enp.equal(manipulation.expand_dims(a, -1), a)
    first = reductions.argmax(same, axis=-1)
    return enp.equal(first, creation.arange(shape_of(a)[0], dtype=get_aval(first).dtype))


def _first_index_of(values: Any, a: Any, is_real: Any) -> Any:
    """Index in ``a`` of each value's first occurrence; ``len(a)`` where not ``is_real``
    (in the default integer type, int64 under x64, as JAX)."""
    n = shape_of(a)[0]
    index_dtype = dtypes.default_int()
    if not n:
        return creation.full(shape_of(values), n, index_dtype)
    index = reductions.argmax(enp.equal(manipulation.expand_dims(values, -1), a), axis=-1)
    index = manipulation.astype(index, index_dtype)
    return enp.where(is_real, index, index_dtype.type(n))


def setdiff1d(
    ar1: Any,
    ar2: Any,
    assume_unique: bool = False,
    *,
    size: int | None = None,
    fill_value: Any = None,
) -> Any:
    a = manipulation.ravel(creation.asarray(ar1))
    _needs_size(a, size, "setdiff1d")
    return _masked_unique(a, isin(a, ar2, invert=True), size, fill_value)


def _masked_unique(a: Any, keep: Any, size: Any, fill_value: Any) -> Any:
    if size is None:
        values = np.asarray(a)[np.asarray(keep)]
        return unique(creation.asarray(values))
    # Push the dropped values past every kept one, then take the unique leading part.
    dtype = get_aval(a).dtype
    top = np.asarray(
        dtypes.finfo(dtype).max if dtypes.is_inexact(dtype) else np.iinfo(dtype).max, dtype
    )
    staged = enp.where(keep, a, top)
    count = reductions.sum(keep, dtype=np.int32)
    uniques = unique(staged, size=size, fill_value=top)
    has_top = reductions.any(enp.logical_and(keep, enp.equal(a, top)))
    n_unique = reductions.sum(enp.not_equal(uniques, top), dtype=np.int32)
    valid = enp.less(creation.arange(size, dtype=np.int32), n_unique + has_top.astype(np.int32))
    valid = enp.logical_and(valid, enp.greater(count, 0))
    fill = uniques[0] if fill_value is None else fill_value
    return enp.where(valid, uniques, np.asarray(fill, dtype) if fill_value is not None else fill)


def unique(ar: Any, return_index=False, return_inverse=False, return_counts=False, axis=None,
           *, equal_nan: bool = True, size: int | None = None, fill_value: Any = None,
           sorted: bool = True) -> Any:  # fmt: skip
    """Sorted unique values of the flattened ``ar`` (``size=`` pads to a static length).
    ``equal_nan`` counts every NaN as one value; ``sorted`` is unused, as in JAX (the
    result is always sorted)."""
    if axis is not None:
        return unique_slices(ar, axis, return_index, return_inverse, return_counts, equal_nan,
                             size, fill_value)  # fmt: skip
    ar = creation.asarray(ar)
    flat = reshape(ar, (get_aval(ar).size,))
    n = shape_of(flat)[0]
    index_dtype = dtypes.default_int()  # of the index, inverse and counts, as JAX
    order = argsort(flat)
    values = take(flat, order, mode="clip")
    # True where a sorted value differs from its predecessor: the first of each group.
    differs = enp.not_equal(values[1:], values[:-1])
    if equal_nan and dtypes.is_inexact(get_aval(values).dtype):  # NaNs sort together, last
        both_nan = enp.logical_and(enp.isnan(values[1:]), enp.isnan(values[:-1]))
        differs = enp.logical_and(differs, enp.logical_not(both_nan))
    first = concatenate([creation.ones((1,), bool), differs], 0)
    if size is None:
        if isinstance(ar, core.Tracer):
            raise errors.ConcretizationTypeError(
                f"unique of a traced array has a value-dependent shape; pass size=..."
                f"{errors.where()}"
            )
        keep = np.asarray(first)
        uniques = creation.asarray(np.asarray(values)[keep])
        extras = []
        if return_index:
            extras.append(creation.asarray(np.asarray(order)[keep]))
        if return_inverse:
            group = np.cumsum(keep) - 1
            inverse = np.empty(n, index_dtype)
            inverse[np.asarray(order)] = group
            extras.append(creation.asarray(inverse.reshape(shape_of(ar))))
        if return_counts:
            starts = np.flatnonzero(keep)
            extras.append(creation.asarray(np.diff(np.append(starts, n)).astype(index_dtype)))
        return (uniques, *extras) if extras else uniques
    # Static size: scatter each group's first value to its rank.
    group = enp.subtract(cumsum(first, dtype=index_dtype), index_dtype.type(1))
    fill = values[0] if fill_value is None else fill_value
    out = creation.full((size,), fill, get_aval(values).dtype)
    out = out.at[enp.where(first, group, index_dtype.type(size))].set(values)
    extras = []
    if return_index:
        idx = (  # padded with the smallest value's index, as JAX
            creation.full((size,), order[0], index_dtype)
            .at[enp.where(first, group, index_dtype.type(size))]
            .set(order)
        )
        extras.append(idx)
    if return_inverse:
        inverse = creation.zeros((n,), index_dtype).at[order].set(group)
        extras.append(reshape(inverse, shape_of(ar)))
    if return_counts:
        counts = creation.zeros((size,), index_dtype).at[group].add(index_dtype.type(1))
        extras.append(counts)
    return (out, *extras) if extras else out
