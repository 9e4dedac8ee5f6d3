"""NumPy functions JAX programs use every day, written over ember's own operations:
tiling and repetition, rolling, padding, differences, comparisons of whole arrays,
NaN-ignoring reductions, searching, interpolation, polynomials, histograms and percentiles.

Functions whose output shape depends on values (``nonzero``, ``unique``, ``argwhere``) take a
static ``size=`` (and ``fill_value=``) under ``jit``, as in JAX; without it they need
concrete inputs.
"""

from __future__ import annotations

import builtins
import operator
from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as enp, manipulation, reductions
from ember._src.numpy.advanced_indexing import take
from ember._src.numpy.searching import digitize, searchsorted  # noqa: F401 (re-exported)
from ember._src.numpy.sorting import argsort, cumsum, sort
from ember._src.numpy.unique_slices import unique_slices
from ember._src.numpy.util import (
    as_operand,
    canonicalize_axis,
    check_dtype_arg,
    check_no_out,
    promote_dtypes,
    promote_to_inexact,
    shape_of,
)
from ember._src.primitives.shape import broadcast_in_dim, convert_element_type, reshape
from ember._src.primitives.slicing import concatenate, pad as lax_pad, slice_along

# --------------------------------------------------------------------------------------------
# Tiling, repetition, rolling, padding


def tile(A: Any, reps: Any) -> Any:  # NumPy and JAX call it A
    a = creation.asarray(A)
    reps = (operator.index(reps),) if np.ndim(reps) == 0 else tuple(operator.index(r) for r in reps)
    shape = shape_of(a)
    ndim = builtins.max(len(shape), len(reps))
    shape = (1,) * (ndim - len(shape)) + shape
    reps = (1,) * (ndim - len(reps)) + reps
    a = reshape(a, shape)
    # Interleave a new axis of each repetition count before its axis, broadcast, then merge.
    expanded = [d for pair in zip(reps, shape) for d in pair]
    dims = tuple(2 * i + 1 for i in range(ndim))
    out = broadcast_in_dim(a, tuple(expanded), dims)
    return reshape(out, tuple(r * s for r, s in zip(reps, shape)))


def repeat(a: Any, repeats: Any, axis: int | None = None, *, total_repeat_length=None) -> Any:
    a = creation.asarray(a)
    if axis is None:
        a, axis = reshape(a, (get_aval(a).size,)), 0
    axis = canonicalize_axis(axis, get_aval(a).ndim)
    size = shape_of(a)[axis]
    if np.ndim(repeats) == 0 and not isinstance(repeats, core.Tracer):
        count = operator.index(repeats)
        shape = shape_of(a)
        target = shape[: axis + 1] + (count,) + shape[axis + 1 :]
        dims = tuple(d if d <= axis else d + 1 for d in range(len(shape)))
        out = broadcast_in_dim(a, target, dims)
        return reshape(out, shape[:axis] + (size * count,) + shape[axis + 1 :])
    counts = np.asarray(repeats) if not isinstance(repeats, core.Tracer) else None
    if counts is None:
        if total_repeat_length is None:
            raise errors.ConcretizationTypeError(
                f"repeat with traced repeat counts needs a static total_repeat_length"
                f"{errors.where()}"
            )
        raise NotImplementedError("repeat with traced repeat counts")
    index = np.repeat(np.arange(size), counts)
    return take(a, index, axis=axis, mode="clip")


def roll(a: Any, shift: Any, axis: Any = None) -> Any:
    a = creation.asarray(a)
    if axis is None:
        flat = reshape(a, (get_aval(a).size,))
        return reshape(roll(flat, shift, 0), shape_of(a))
    shifts = (shift,) if np.ndim(shift) == 0 else tuple(shift)
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    for s, ax in zip(shifts, axes):
        ax = canonicalize_axis(ax, get_aval(a).ndim)
        n = shape_of(a)[ax]
        if not n:
            continue
        s = operator.index(s) % n
        if s:
            a = concatenate([slice_along(a, ax, n - s, n), slice_along(a, ax, 0, n - s)], ax)
    return a


def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Any:
    a = creation.asarray(a)
    axis = canonicalize_axis(axis, get_aval(a).ndim)
    parts = [p for p in (prepend, a, append) if p is not None]
    if len(parts) > 1:
        shape = list(shape_of(a))
        fixed = []
        for p in parts:
            p = creation.asarray(p)
            if not shape_of(p):
                shape[axis] = 1
                p = broadcast_in_dim(p, tuple(shape), ())
            fixed.append(p)
        a = manipulation.concatenate(fixed, axis=axis)
    # Booleans have no subtraction: their difference is "changed", as in NumPy and JAX.
    op = enp.not_equal if get_aval(a).dtype == dtypes.bool_ else enp.subtract
    for _ in range(n):
        size = shape_of(a)[axis]
        a = op(slice_along(a, axis, 1, size), slice_along(a, axis, 0, size - 1))
    return a


def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> list:
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    arrays = [reshape(creation.asarray(x), (get_aval(creation.asarray(x)).size,)) for x in xi]
    shape = [get_aval(a).size for a in arrays]
    if indexing == "xy" and len(arrays) > 1:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, a in enumerate(arrays):
        dim = i
        if indexing == "xy" and len(arrays) > 1 and i < 2:
            dim = 1 - i
        if sparse:
            target = [1] * len(arrays)
            target[dim] = shape[dim]
            out.append(reshape(a, tuple(target)))
        else:
            out.append(broadcast_in_dim(a, tuple(shape), (dim,)))
    return out


# --------------------------------------------------------------------------------------------
# Comparing arrays


def isclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    a, b = promote_dtypes(as_operand(a), as_operand(b))
    dtype = get_aval(a).dtype
    if not dtypes.is_inexact(dtype):
        return enp.equal(a, b)
    rtol_, atol_ = (
        np.asarray(rtol, dtypes.real_dtype(dtype)),
        np.asarray(atol, dtypes.real_dtype(dtype)),
    )
    close = enp.less_equal(
        enp.abs(enp.subtract(a, b)), enp.add(atol_, enp.multiply(rtol_, enp.abs(b)))
    )
    both_inf = enp.logical_and(enp.isinf(a), enp.equal(a, b))
    close = enp.logical_or(enp.logical_and(close, enp.isfinite(b)), both_inf)
    if equal_nan:
        close = enp.logical_or(close, enp.logical_and(enp.isnan(a), enp.isnan(b)))
    return close


def allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    return reductions.all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> Any:
    a1, a2 = creation.asarray(a1), creation.asarray(a2)
    if shape_of(a1) != shape_of(a2):
        return creation.asarray(False)
    same = enp.equal(a1, a2)
    if equal_nan and dtypes.is_inexact(get_aval(a1).dtype):
        same = enp.logical_or(same, enp.logical_and(enp.isnan(a1), enp.isnan(a2)))
    return reductions.all(same)


def count_nonzero(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    nonzero = enp.not_equal(as_operand(a), 0)
    return reductions.sum(nonzero, axis=axis, keepdims=keepdims, dtype=dtypes.default_int())


# --------------------------------------------------------------------------------------------
# NaN-ignoring reductions


def _nan_to(a: Any, value: float) -> Any:
    a = creation.asarray(a)
    if not dtypes.is_inexact(get_aval(a).dtype):
        return a
    return enp.where(enp.isnan(a), np.asarray(value, get_aval(a).dtype), a)


def nansum(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: None = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
) -> Any:
    check_no_out(out, "jnp.nansum")
    return reductions.sum(
        _nan_to(a, 0), axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where
    )


def nanprod(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: None = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
) -> Any:
    check_no_out(out, "jnp.nanprod")
    return reductions.prod(
        _nan_to(a, 1), axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where
    )


def nanmax(
    a: Any,
    axis: Any = None,
    out: None = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
) -> Any:
    check_no_out(out, "jnp.nanmax")
    a = creation.asarray(a)
    result = reductions.max(
        _nan_to(a, -np.inf), axis=axis, keepdims=keepdims, initial=initial, where=where
    )
    # With an initial value an all-NaN slice reduces to it rather than to NaN.
    return result if initial is not None else _all_nan_to_nan(a, result, axis, keepdims)


def nanmin(
    a: Any,
    axis: Any = None,
    out: None = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
) -> Any:
    check_no_out(out, "jnp.nanmin")
    a = creation.asarray(a)
    result = reductions.min(
        _nan_to(a, np.inf), axis=axis, keepdims=keepdims, initial=initial, where=where
    )
    return result if initial is not None else _all_nan_to_nan(a, result, axis, keepdims)


def _all_nan_to_nan(a, result, axis, keepdims):
    if not dtypes.is_inexact(get_aval(a).dtype):
        return result
    all_nan = reductions.all(enp.isnan(a), axis=axis, keepdims=keepdims)
    return enp.where(all_nan, np.asarray(np.nan, get_aval(result).dtype), result)


def _valid_count(a: Any, axis: Any, keepdims: bool, where: Any, dtype: Any) -> Any:
    """How many entries per slice are neither NaN nor masked out by ``where``."""
    valid = enp.logical_not(enp.isnan(a))
    return reductions.sum(valid, axis=axis, keepdims=keepdims, dtype=dtype, where=where)


def nanmean(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: None = None,
    keepdims: bool = False,
    where: Any = None,
) -> Any:
    check_no_out(out, "jnp.nanmean")
    a = creation.asarray(a)
    if not dtypes.is_inexact(get_aval(a).dtype):
        return reductions.mean(a, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    result_dtype = check_dtype_arg(dtype) or get_aval(a).dtype
    # 16-bit floats: sum and count in float32 (a count cast to float16 overflows at 65504).
    wide = reductions.computation_dtype(result_dtype)
    total = nansum(a, axis=axis, dtype=wide, keepdims=keepdims, where=where)
    count = _valid_count(a, axis, keepdims, where, wide)
    return convert_element_type(enp.divide(total, count), result_dtype)


def nanvar(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: None = None,
    ddof: int = 0,
    keepdims: bool = False,
    where: Any = None,
    mean: Any = None,
):
    check_no_out(out, "jnp.nanvar")
    a = creation.asarray_inexact(a)
    result_dtype = dtypes.real_dtype(check_dtype_arg(dtype) or get_aval(a).dtype)
    wide = reductions.computation_dtype(get_aval(a).dtype)
    a = convert_element_type(a, wide)  # 16-bit floats are computed in float32
    if mean is None:
        mean = nanmean(a, axis=axis, keepdims=True, where=where)
    centred = enp.subtract(a, mean)
    squares = (
        enp.multiply(centred, enp.conjugate(centred))
        if get_aval(a).dtype.kind == "c"
        else enp.square(centred)
    )
    total = nansum(enp.real(squares), axis=axis, keepdims=keepdims, where=where)
    count = _valid_count(a, axis, keepdims, where, get_aval(total).dtype)
    variance = enp.divide(total, enp.subtract(count, np.asarray(ddof, get_aval(total).dtype)))
    return convert_element_type(variance, result_dtype)


def nanstd(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: None = None,
    ddof: int = 0,
    keepdims: bool = False,
    where: Any = None,
    mean: Any = None,
):
    check_no_out(out, "jnp.nanstd")
    variance = nanvar(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean)
    return enp.sqrt(variance)


# --------------------------------------------------------------------------------------------
# Searching (searchsorted and digitize live in their own module)


def nonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> tuple:
    """Indices of the nonzero elements, one array per axis (``size=`` makes it traceable),
    in the default integer type (int64 under x64), as JAX."""
    a = creation.asarray(a)
    shape = shape_of(a)
    index_dtype = dtypes.default_int()
    mask = reshape(enp.not_equal(a, 0), (get_aval(a).size,))
    if size is None:
        if isinstance(a, core.Tracer):
            raise errors.ConcretizationTypeError(
                f"nonzero of a traced array has a value-dependent shape; pass size=..."
                f"{errors.where()}"
            )
        flat = np.flatnonzero(np.asarray(mask))
        return tuple(creation.asarray(i.astype(index_dtype)) for i in np.unravel_index(flat, shape))
    # Stable argsort of "not nonzero" puts the nonzero positions first, in order.
    order = argsort(enp.logical_not(mask))
    count = reductions.sum(mask, dtype=index_dtype)
    first = slice_along(order, 0, 0, size) if size <= get_aval(mask).size else _pad_end(order, size)
    valid = enp.less(creation.arange(size, dtype=index_dtype), count)
    strides = np.cumprod((1,) + shape[::-1])[::-1][1:]
    results = []
    for axis, stride in enumerate(strides):
        coordinate = enp.remainder(
            enp.floor_divide(first, index_dtype.type(stride)), index_dtype.type(shape[axis])
        )
        fill = (
            0 if fill_value is None else (fill_value[axis] if np.ndim(fill_value) else fill_value)
        )
        results.append(enp.where(valid, coordinate, index_dtype.type(fill)))
    return tuple(results)


def _pad_end(x: Any, size: int) -> Any:
    n = shape_of(x)[0]
    return lax_pad(x, np.zeros((), get_aval(x).dtype), [(0, size - n, 0)])


def flatnonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    a = creation.asarray(a)
    return nonzero(reshape(a, (get_aval(a).size,)), size=size, fill_value=fill_value)[0]


def argwhere(a: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    return manipulation.stack(nonzero(a, size=size, fill_value=fill_value), axis=1)


def where(condition: Any, x: Any = None, y: Any = None, *, size=None, fill_value=None) -> Any:
    """``where(c, x, y)`` selects; ``where(c)`` is ``nonzero(c)``."""
    if x is None and y is None:
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise ValueError("where needs both x and y, or neither")
    return enp.where(condition, x, y)


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


# --------------------------------------------------------------------------------------------
# Interpolation, polynomials, histograms, percentiles


def interp(
    x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None
) -> Any:
    x, xp, fp = promote_dtypes(as_operand(x), as_operand(xp), as_operand(fp))
    x, xp, fp = (
        manipulation.astype(v, dtypes.to_inexact(get_aval(v).dtype))
        if not dtypes.is_inexact(get_aval(v).dtype)
        else v
        for v in (x, xp, fp)
    )
    if period is not None:
        x, xp, fp = _periodic_samples(x, xp, fp, period)
        left = right = None  # NumPy ignores them for periodic data
    n = shape_of(xp)[0]
    i = enp.clip(searchsorted(xp, x, side="right"), np.int32(1), np.int32(n - 1))
    x0, x1 = take(xp, enp.subtract(i, np.int32(1)), mode="clip"), take(xp, i, mode="clip")
    y0, y1 = take(fp, enp.subtract(i, np.int32(1)), mode="clip"), take(fp, i, mode="clip")
    dx = enp.subtract(x1, x0)
    t = enp.where(
        enp.equal(dx, 0),
        np.asarray(0, get_aval(dx).dtype),
        enp.divide(
            enp.subtract(x, x0), enp.where(enp.equal(dx, 0), np.asarray(1, get_aval(dx).dtype), dx)
        ),
    )
    out = enp.add(y0, enp.multiply(t, enp.subtract(y1, y0)))
    first, last = take(fp, np.int32(0), mode="clip"), take(fp, np.int32(n - 1), mode="clip")
    out = enp.where(
        enp.less(x, take(xp, np.int32(0), mode="clip")), first if left is None else left, out
    )
    return enp.where(
        enp.greater(x, take(xp, np.int32(n - 1), mode="clip")),
        last if right is None else right,
        out,
    )


def _periodic_samples(x: Any, xp: Any, fp: Any, period: Any) -> tuple[Any, Any, Any]:
    """Map ``x`` and ``xp`` into one period, sort the samples, and add one wrapped sample
    at each end so that interpolation runs across the period's boundary."""
    if isinstance(period, (int, float, np.number)) and period == 0:
        raise ValueError(f"interp: period must be a non-zero value{errors.where()}")
    period = enp.abs(as_operand(period))
    x, xp = enp.remainder(x, period), enp.remainder(xp, period)
    order = argsort(xp)
    xp, fp = take(xp, order), take(fp, order)
    n = shape_of(xp)[0]
    xp = concatenate([enp.subtract(xp[n - 1 :], period), xp, enp.add(xp[:1], period)], 0)
    fp = concatenate([fp[n - 1 :], fp, fp[:1]], 0)
    return x, xp, fp


def polyval(p: Any, x: Any, *, unroll: int = 16) -> Any:
    """``p[0] * x**(n-1) + ... + p[n-1]`` by Horner's rule (``unroll`` only tunes JAX's
    loop; ember's loop is unrolled at trace time)."""
    operator.index(unroll)
    p, x = promote_dtypes(creation.asarray(p), creation.asarray(x))
    result = creation.zeros_like(x)
    for k in range(shape_of(p)[0]):
        result = enp.add(enp.multiply(result, x), p[k])
    return result


def histogram(
    a: Any, bins: Any = 10, range: Any = None, weights: Any = None, density: bool = False
):
    """Counts (or weights) per bin; ``bins`` is a count (with static ``range``) or edges.
    Counts, edges and weights share one inexact dtype (``a``'s and the weights' promoted), as
    JAX."""
    a = creation.asarray_inexact(a)
    if weights is not None:
        a, weights = promote_to_inexact(a, creation.asarray(as_operand(weights)))
        if shape_of(weights) != shape_of(a):
            raise ValueError(
                f"histogram: weights shape {shape_of(weights)} differs from a's {shape_of(a)}"
                f"{errors.where()}"
            )
        weights = reshape(weights, (get_aval(weights).size,))
    a = reshape(a, (get_aval(a).size,))
    dtype = get_aval(a).dtype
    if np.ndim(bins) == 0:
        if range is None:
            if isinstance(a, core.Tracer):
                raise errors.ConcretizationTypeError(
                    f"histogram of a traced array with a bin count needs a static range"
                    f"{errors.where()}"
                )
            concrete = np.asarray(a)
            range = (concrete.min(), concrete.max()) if concrete.size else (0.0, 1.0)
        lo, hi = builtins.map(float, range)
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = creation.asarray(np.linspace(lo, hi, operator.index(bins) + 1).astype(dtype))
    else:
        edges = creation.asarray(bins)
    n_bins = shape_of(edges)[0] - 1
    index = enp.subtract(searchsorted(edges, a, side="right"), np.int32(1))
    index = enp.where(enp.equal(a, edges[-1]), np.int32(n_bins - 1), index)  # last bin is closed
    inside = enp.logical_and(enp.greater_equal(index, 0), enp.less(index, np.int32(n_bins)))
    weight = creation.ones_like(a) if weights is None else weights
    weight = enp.where(inside, weight, np.asarray(0, get_aval(weight).dtype))
    counts = (
        creation.zeros((n_bins,), get_aval(weight).dtype)
        .at[enp.clip(index, 0, n_bins - 1)]
        .add(weight)
    )
    if density:
        widths = diff(edges)
        counts = enp.divide(counts, enp.multiply(reductions.sum(counts), widths))
    return counts, edges


def _check_quantile_options(name: str, out: Any, overwrite_input: bool, weights: Any) -> None:
    if overwrite_input or out is not None:
        raise ValueError(
            f"{name} does not support overwrite_input=True or out != None{errors.where()}"
        )
    if weights is not None:
        raise NotImplementedError(
            f"{name}: weights= (JAX supports it only for method 'inverted_cdf'){errors.where()}"
        )


def quantile(
    a: Any,
    q: Any,
    axis: Any = None,
    out: None = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: Any = None,
):
    """Quantiles (``q`` in [0, 1]) by sorting; ``method`` is NumPy's linear/lower/higher/
    nearest/midpoint."""
    _check_quantile_options("quantile", out, overwrite_input, weights)
    a = creation.asarray(a)
    if get_aval(a).dtype.kind == "c":  # as JAX: complex numbers have no natural order
        raise ValueError(f"quantile does not support complex input{errors.where()}")
    if not dtypes.is_inexact(get_aval(a).dtype):
        a = manipulation.astype(a, dtypes.to_inexact(get_aval(a).dtype))
    # 16-bit floats: positions and interpolation in float32 (n - 1 overflows float16 past
    # 65505 entries, and rounds past 2048), the answer cast back.
    dtype = get_aval(a).dtype
    a = convert_element_type(a, reductions.computation_dtype(dtype))
    return convert_element_type(_quantile(a, q, axis, method, keepdims), dtype)


def _quantile(a: Any, q: Any, axis: Any, method: str, keepdims: bool) -> Any:
    kept_all_dims = shape_of(a) if axis is None and keepdims else None
    if axis is None:
        a, axis = reshape(a, (get_aval(a).size,)), 0
    axis = canonicalize_axis(axis, get_aval(a).ndim)
    n = shape_of(a)[axis]
    ordered = sort(a, axis=axis)
    q = manipulation.astype(creation.asarray(q), get_aval(a).dtype)
    position = enp.multiply(q, np.asarray(n - 1, get_aval(a).dtype))
    low = manipulation.astype(enp.floor(position), np.int32)
    high = enp.minimum(enp.add(low, np.int32(1)), np.int32(n - 1))
    frac = enp.subtract(position, enp.floor(position))
    if method == "lower":
        high, frac = low, creation.zeros_like(frac)
    elif method == "higher":
        low = manipulation.astype(enp.ceil(position), np.int32)
        high, frac = low, creation.zeros_like(frac)
    elif method == "nearest":
        low = manipulation.astype(enp.round(position), np.int32)
        high, frac = low, creation.zeros_like(frac)
    elif method == "midpoint":
        frac = enp.where(enp.equal(frac, 0), frac, np.asarray(0.5, get_aval(frac).dtype))
    elif method != "linear":
        raise ValueError(f"quantile: unknown method {method!r}")
    v_low = take(ordered, low, axis=axis, mode="clip")
    v_high = take(ordered, high, axis=axis, mode="clip")
    q_ndim = get_aval(q).ndim
    frac = (
        reshape(frac, (1,) * axis + shape_of(frac) + (1,) * (get_aval(ordered).ndim - axis - 1))
        if q_ndim
        else frac
    )
    out = enp.add(v_low, enp.multiply(frac, enp.subtract(v_high, v_low)))
    if q_ndim:  # NumPy puts the quantiles' axes first
        out = manipulation.moveaxis(out, tuple(range(axis, axis + q_ndim)), tuple(range(q_ndim)))
    # Sorting moves NaNs to the end; a slice holding one has NaN quantiles, as in NumPy.
    has_nan = reductions.any(enp.isnan(a), axis=axis)
    out = enp.where(has_nan, np.asarray(np.nan, get_aval(out).dtype), out)
    if kept_all_dims is not None:  # every axis was reduced: keep each as size one
        return reshape(out, shape_of(q) + (1,) * len(kept_all_dims))
    if keepdims:
        out = manipulation.expand_dims(out, axis + q_ndim)
    return out


def percentile(
    a: Any,
    q: Any,
    axis: Any = None,
    out: None = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: Any = None,
):
    _check_quantile_options("percentile", out, overwrite_input, weights)
    q = enp.divide(as_operand(q), np.asarray(100.0, dtypes.default_float()))
    return quantile(a, q, axis=axis, method=method, keepdims=keepdims)


def median(
    a: Any,
    axis: Any = None,
    out: None = None,
    overwrite_input: bool = False,
    keepdims: bool = False,
) -> Any:
    # JAX ignores overwrite_input here (arrays are immutable) but not in quantile.
    check_no_out(out, "jnp.median")
    return quantile(a, 0.5, axis=axis, keepdims=keepdims)


def convolve(
    a: Any,
    v: Any,
    mode: str = "full",
    *,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    """1-D discrete convolution (``full``, ``same`` or ``valid``). ``precision`` is a hint
    ember's backends do not need; ``preferred_element_type`` sets the accumulation and
    result dtype."""
    a, v = creation.asarray(a), creation.asarray(v)
    if preferred_element_type is None:  # as JAX: integers convolve as floats
        a, v = promote_to_inexact(a, v)
    else:
        a, v = promote_dtypes(a, v)
        result_dtype = check_dtype_arg(preferred_element_type)
        a, v = manipulation.astype(a, result_dtype), manipulation.astype(v, result_dtype)
    n, m = shape_of(a)[0], shape_of(v)[0]
    if not n or not m:
        raise ValueError(f"convolve: empty input{errors.where()}")
    if n < m:
        a, v, n, m = v, a, m, n
    length = n + m - 1
    # out[k] = sum_j v[j] a[k - j]: gather a shifted copy of `a` per tap of `v`.
    k = np.arange(length)[:, None] - np.arange(m)[None, :]
    valid = (k >= 0) & (k < n)
    padded = take(a, np.clip(k, 0, n - 1), mode="clip")
    padded = enp.where(valid, padded, np.asarray(0, get_aval(padded).dtype))
    full = reductions.sum(enp.multiply(padded, v), axis=1)
    if mode == "full":
        return full
    if mode == "same":
        start = (m - 1) // 2
        return slice_along(full, 0, start, start + n)
    if mode == "valid":
        return slice_along(full, 0, m - 1, n)
    raise ValueError(f"convolve: mode must be 'full', 'same' or 'valid', got {mode!r}")
