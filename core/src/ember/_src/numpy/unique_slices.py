"""``unique(..., axis=k)``: the distinct slices along an axis, in lexicographic order, with
their first indices, the inverse map and the counts; ``size=`` gives a static length (so it
traces), padded as JAX pads it."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as enp, manipulation, reductions
from ember._src.numpy.advanced_indexing import take
from ember._src.numpy.operands import canonicalize_axis, shape_of
from ember._src.numpy.partitioning import lexsort
from ember._src.numpy.sorting import cumsum


def unique_slices(ar: Any, axis: int, return_index: bool, return_inverse: bool,
                  return_counts: bool, equal_nan: bool, size: int | None,
                  fill_value: Any) -> Any:  # fmt: skip
    ar = creation.asarray(ar)
    axis = canonicalize_axis(axis, max(get_aval(ar).ndim, 1))
    moved = manipulation.moveaxis(ar, axis, 0)
    slice_shape = shape_of(moved)[1:]
    n = shape_of(moved)[0]
    rows = manipulation.reshape(moved, (n, int(np.prod(slice_shape, dtype=np.int64))))
    index_dtype = dtypes.default_int()
    if n == 0:
        return _empty(moved, axis, index_dtype, return_index, return_inverse, return_counts)
    order, first = _sorted_groups(rows, equal_nan, index_dtype)
    sorted_rows = take(rows, order, axis=0, mode="clip")
    if size is None:
        if isinstance(ar, core.Tracer):
            raise errors.ConcretizationTypeError(
                f"unique of a traced array has a value-dependent shape; pass size=..."
                f"{errors.where()}"
            )
        keep = np.asarray(first)
        values = creation.asarray(np.asarray(sorted_rows)[keep])
        index = creation.asarray(np.asarray(order)[keep])
        group = np.cumsum(keep) - 1
        inverse = np.empty(n, index_dtype)
        inverse[np.asarray(order)] = group
        counts = np.diff(np.append(np.flatnonzero(keep), n)).astype(index_dtype)
        extras = (index, creation.asarray(inverse), creation.asarray(counts))
    else:
        values, extras = _static_size(sorted_rows, order, first, n, size, fill_value, index_dtype)
    count = shape_of(values)[0]
    values = manipulation.moveaxis(manipulation.reshape(values, (count, *slice_shape)), 0, axis)
    chosen = [e for e, want in zip(extras, (return_index, return_inverse, return_counts)) if want]
    return (values, *chosen) if chosen else values


def _sorted_groups(rows: Any, equal_nan: bool, index_dtype: np.dtype) -> tuple[Any, Any]:
    """The lexicographic order of ``rows`` and, in that order, True at each new row."""
    n, m = shape_of(rows)
    if m == 0 or n == 0:  # every (empty) slice is the same one
        order = creation.arange(n, dtype=index_dtype)
        return order, enp.equal(order, 0)
    keys = [rows[:, j] for j in range(m - 1, -1, -1)]  # lexsort's primary key comes last
    order = lexsort(keys)
    sorted_rows = take(rows, order, axis=0, mode="clip")
    before, after = sorted_rows[:-1], sorted_rows[1:]
    unequal = enp.not_equal(after, before)
    if equal_nan and dtypes.is_inexact(get_aval(rows).dtype):
        unequal = enp.logical_and(
            unequal, enp.logical_not(enp.logical_and(enp.isnan(after), enp.isnan(before)))
        )
    differs = reductions.any(unequal, axis=1)
    return order, manipulation.concatenate([creation.ones((1,), bool), differs], 0)


def _static_size(sorted_rows: Any, order: Any, first: Any, n: int, size: int, fill_value: Any,
                 index_dtype: np.dtype) -> tuple[Any, tuple]:  # fmt: skip
    """The first ``size`` groups scattered to their ranks. As JAX, missing slices are
    ``fill_value`` (default: the smallest slice), missing indices the smallest slice's index
    and missing counts 0."""
    group = enp.subtract(cumsum(first, dtype=index_dtype), index_dtype.type(1))
    # Repeats and groups past ``size`` all land in one spare slot at the end, cut off after.
    spare = index_dtype.type(size)
    target = enp.where(enp.logical_and(first, enp.less(group, spare)), group, spare)
    dtype = get_aval(sorted_rows).dtype
    width = shape_of(sorted_rows)[1]
    if fill_value is None:
        values = manipulation.broadcast_to(sorted_rows[:1], (size + 1, width))
    else:
        values = creation.full((size + 1, width), fill_value, dtype)
    values = values.at[target].set(sorted_rows)[:size]
    index = creation.full((size + 1,), order[0], index_dtype).at[target].set(order)[:size]
    inverse = creation.zeros((n,), index_dtype).at[order].set(group)
    counted = enp.minimum(group, spare)
    counts = creation.zeros((size + 1,), index_dtype).at[counted].add(index_dtype.type(1))[:size]
    return values, (index, inverse, counts)


def _empty(moved: Any, axis: int, index_dtype: np.dtype, *wanted: bool) -> Any:
    """No slices at all: empty results of the right shapes."""
    values = manipulation.moveaxis(moved, 0, axis)
    extras = [creation.zeros((0,), index_dtype) for want in wanted if want]
    return (values, *extras) if extras else values
