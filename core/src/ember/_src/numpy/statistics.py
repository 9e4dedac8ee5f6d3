"""Statistics: weighted averages, covariance and correlation, counting (``bincount``),
peak-to-peak, the NaN-ignoring arg-reductions, cumulative reductions and quantiles, and
histograms (``histogram`` and the multi-dimensional ones).

``bincount`` has a value-dependent output length: under ``jit`` it needs JAX's static
``length=``. Histogram bin edges from a bin count follow the data's (possibly traced) minimum
and maximum, as in JAX.
"""

from __future__ import annotations

import builtins
import functools
import operator
from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as enp, manipulation, reductions
from ember._src.numpy.advanced_indexing import take_along_axis
from ember._src.numpy.calculus import diff
from ember._src.numpy.contractions import matmul
from ember._src.numpy.linalg import diagonal
from ember._src.numpy.nan_reductions import _nan_to
from ember._src.numpy.operands import (
    as_operand,
    canonicalize_axes,
    canonicalize_axis,
    dtype_of,
    promote_dtypes,
    promote_to_inexact,
    scalar_like,
    shape_of,
)
from ember._src.numpy.searching import digitize, searchsorted  # noqa: F401 (re-exported)
from ember._src.numpy.sorting import cumprod, cumsum, sort
from ember._src.primitives.shape import (
    broadcast_to_shape,
    convert_element_type,
    reshape,
)
from ember._src.transforms.jit import jit

# --------------------------------------------------------------------------------------------
# Averages, covariance, correlation


def average(
    a: Any, axis: Any = None, weights: Any = None, returned: bool = False, keepdims: bool = False
) -> Any:
    """The (weighted) mean along ``axis``; ``returned=True`` also gives the sum of weights."""
    a = creation.asarray_inexact(a)
    if weights is None:
        result = reductions.mean(a, axis=axis, keepdims=keepdims)
        if not returned:
            return result
        count = a.size // builtins.max(get_aval(result).size, 1) if a.size else 0
        weight_sum = creation.full_like(result, count)  # in the result's dtype, as JAX
    else:
        a, w = promote_to_inexact(a, creation.asarray(as_operand(weights)))
        w = _weights_like(a, w, axis)
        dtype = dtype_of(a)
        # 16-bit floats: weigh, sum and divide in float32 (sums of many weights overflow
        # float16), and cast the answers back, as sum and mean do.
        wide = reductions.computation_dtype(dtype)
        a, w = convert_element_type(a, wide), convert_element_type(w, wide)
        weight_sum = reductions.sum(w, axis=axis, keepdims=keepdims)
        total = reductions.sum(enp.multiply(a, w), axis=axis, keepdims=keepdims)
        result = convert_element_type(enp.divide(total, weight_sum), dtype)
        weight_sum = convert_element_type(weight_sum, dtype)
    return (result, weight_sum) if returned else result


def _weights_like(a: Any, w: Any, axis: Any) -> Any:
    """``w`` broadcast to ``a``: the same shape, or 1-D along a single ``axis``."""
    if shape_of(w) == shape_of(a):
        return w
    if axis is None:
        raise ValueError(
            f"average: axis must be given when a {shape_of(a)} and weights {shape_of(w)} differ"
            f" in shape{errors.where()}"
        )
    if get_aval(w).ndim != 1 or not isinstance(axis, (int, np.integer)):
        raise TypeError(
            f"average: weights of shape {shape_of(w)} need a single int axis and 1-D weights when"
            f" the shapes of a {shape_of(a)} and weights differ{errors.where()}"
        )
    axis = canonicalize_axis(axis, get_aval(a).ndim)
    if shape_of(w)[0] != shape_of(a)[axis]:
        raise ValueError(
            f"average: length of weights {shape_of(w)[0]} differs from a's axis {axis} of length "
            f"{shape_of(a)[axis]}{errors.where()}"
        )
    shape = [1] * get_aval(a).ndim
    shape[axis] = shape_of(w)[0]
    return broadcast_to_shape(manipulation.reshape(w, tuple(shape)), shape_of(a))


def _observations(m: Any, rowvar: bool, dtype: Any) -> Any:
    """``m`` as a 2-D (variables, observations) array in an inexact dtype."""
    m = creation.asarray(as_operand(m))
    if dtype is not None:
        m = manipulation.astype(m, dtype)
    m = creation.asarray_inexact(m)
    if get_aval(m).ndim > 2:
        raise ValueError(f"cov: m has more than 2 dimensions: {shape_of(m)}{errors.where()}")
    m = manipulation.atleast_2d(m)
    if not rowvar and shape_of(m)[0] != 1:
        m = manipulation.transpose(m)
    return m


def cov(
    m: Any,
    y: Any = None,
    rowvar: bool = True,
    bias: bool = False,
    ddof: int | None = None,
    fweights: Any = None,
    aweights: Any = None,
    dtype: Any = None,
) -> Any:
    """Covariance matrix of the variables in ``m`` (and ``y``), as ``numpy.cov``: rows are
    variables unless ``rowvar=False``; frequency and analytic weights per observation."""
    x = _observations(m, rowvar, dtype)
    if y is not None:
        x, other = promote_dtypes(x, _observations(y, rowvar, dtype))
        x = manipulation.concatenate([x, other], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    ddof = operator.index(core.concrete_or_error(ddof, "cov's ddof"))
    n = shape_of(x)[1]
    weights = _observation_weights(fweights, aweights, n)
    if weights is None:
        mean = reductions.mean(x, axis=1, keepdims=True)
        factor = creation.asarray(np.asarray(n - ddof, dtypes.real_dtype(dtype_of(x))))
    else:
        weights = convert_element_type(weights, dtypes.real_dtype(dtype_of(x)))
        weight_sum = reductions.sum(weights)
        mean = enp.divide(
            reductions.sum(enp.multiply(x, weights), axis=1, keepdims=True), weight_sum
        )
        factor = _weighted_normaliser(weights, weight_sum, aweights, ddof)
    factor = enp.maximum(factor, scalar_like(0, factor))  # NumPy warns and clamps at zero
    centred = enp.subtract(x, mean)
    scaled = centred if weights is None else enp.multiply(centred, weights)
    product = matmul(centred, enp.conjugate(manipulation.transpose(scaled)))
    return manipulation.squeeze(enp.divide(product, factor))


def _observation_weights(fweights: Any, aweights: Any, n: int) -> Any:
    """The product of the frequency and analytic weights (None when neither is given)."""
    weights = None
    for name, given in (("fweights", fweights), ("aweights", aweights)):
        if given is None:
            continue
        given = creation.asarray(as_operand(given))
        if get_aval(given).ndim != 1 or shape_of(given)[0] != n:
            raise ValueError(
                f"cov: {name} must be 1-D with one entry per observation ({n}), got shape "
                f"{shape_of(given)}{errors.where()}"
            )
        if name == "fweights" and dtype_of(given).kind not in "iub":
            raise TypeError(
                f"cov: fweights must be integers, got {dtype_of(given)}{errors.where()}"
            )
        if not isinstance(given, core.Tracer) and bool(np.any(np.asarray(given) < 0)):
            raise ValueError(f"cov: {name} cannot be negative{errors.where()}")
        given = creation.asarray_inexact(given)
        weights = given if weights is None else enp.multiply(weights, given)
    return weights


def _weighted_normaliser(weights: Any, weight_sum: Any, aweights: Any, ddof: int) -> Any:
    if ddof == 0:
        return weight_sum
    if aweights is None:
        return enp.subtract(weight_sum, scalar_like(ddof, weight_sum))
    a = convert_element_type(creation.asarray_inexact(aweights), dtype_of(weights))
    correction = enp.divide(reductions.sum(enp.multiply(weights, a)), weight_sum)
    return enp.subtract(weight_sum, enp.multiply(scalar_like(ddof, weight_sum), correction))


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, dtype: Any = None) -> Any:
    """Pearson correlation coefficients: the covariance normalised by the standard
    deviations, clipped to [-1, 1] against rounding."""
    c = cov(x, y, rowvar, dtype=dtype)
    if not get_aval(c).ndim:
        return enp.divide(c, c)
    std = enp.sqrt(enp.real(diagonal(c)))
    c = enp.divide(enp.divide(c, std[:, None]), std[None, :])
    if dtype_of(c).kind == "c":
        one = scalar_like(1, enp.real(c))
        real = enp.clip(enp.real(c), -one, one)
        imag = enp.clip(enp.imag(c), -one, one)
        return enp.add(real, enp.multiply(imag, scalar_like(1j, c)))
    return enp.clip(c, -scalar_like(1, c), scalar_like(1, c))


def ptp(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
    """Range of values (maximum minus minimum) along ``axis``."""
    a = creation.asarray(as_operand(a))
    return enp.subtract(
        reductions.max(a, axis=axis, keepdims=keepdims),
        reductions.min(a, axis=axis, keepdims=keepdims),
    )


# --------------------------------------------------------------------------------------------
# Counting


def bincount(
    x: Any,
    weights: Any = None,
    minlength: int = 0,
    *,
    length: int | None = None,
    out_sharding: Any = None,
) -> Any:
    """Occurrences of each non-negative integer in ``x`` (or the sum of their ``weights``).

    The output length is ``max(x) + 1`` (at least ``minlength``), so under ``jit`` a static
    ``length=`` is needed; values past it are dropped, negative ones count as 0 (as JAX)."""
    x = creation.asarray(as_operand(x))
    if dtype_of(x).kind not in "iu":
        raise TypeError(
            f"bincount: x must have an integer dtype, got {dtypes.short_name(dtype_of(x))}"
            f"{errors.where()}"
        )
    if get_aval(x).ndim != 1:
        raise ValueError(f"bincount: x must be 1-D, got shape {shape_of(x)}{errors.where()}")
    minlength = operator.index(core.concrete_or_error(minlength, "bincount's minlength"))
    if minlength < 0:
        raise ValueError(f"bincount: minlength must be non-negative, got {minlength}")
    if length is None:
        if isinstance(x, core.Tracer):
            raise errors.ConcretizationTypeError(
                f"bincount of a traced array has a value-dependent length; pass a static "
                f"length=...{errors.where()}"
            )
        values = np.asarray(x)
        length = builtins.max(minlength, int(values.max()) + 1 if values.size else 0)
    length = operator.index(length)
    if weights is None:
        weights = creation.ones(shape_of(x), dtypes.default_int())
    else:
        weights = creation.asarray(as_operand(weights))
        if shape_of(weights) != shape_of(x):
            raise ValueError(
                f"bincount: weights shape {shape_of(weights)} differs from x's {shape_of(x)}"
                f"{errors.where()}"
            )
    index = enp.maximum(x, scalar_like(0, x))
    inside = enp.less(index, scalar_like(length, index))
    weights = enp.where(inside, weights, scalar_like(0, weights))
    index = enp.where(inside, index, scalar_like(0, index))
    return creation.zeros((length,), dtype_of(weights)).at[index].add(weights)


# --------------------------------------------------------------------------------------------
# NaN-ignoring arg-reductions and cumulative reductions


def nanargmax(a: Any, axis: int | None = None, out: None = None, keepdims: bool | None = None):
    """Index of the largest non-NaN value (-1 where a slice is all NaN, as JAX)."""
    return _nan_arg_extremum(reductions.argmax, -np.inf, a, axis, keepdims)


def nanargmin(a: Any, axis: int | None = None, out: None = None, keepdims: bool | None = None):
    """Index of the smallest non-NaN value (-1 where a slice is all NaN, as JAX)."""
    return _nan_arg_extremum(reductions.argmin, np.inf, a, axis, keepdims)


def _nan_arg_extremum(reducer, fill: float, a: Any, axis: Any, keepdims: Any) -> Any:
    a = creation.asarray(as_operand(a))
    keepdims = bool(keepdims)
    if not dtypes.is_inexact(dtype_of(a)):
        return reducer(a, axis=axis, keepdims=keepdims)
    nan = enp.isnan(a)
    index = reducer(enp.where(nan, scalar_like(fill, a), a), axis=axis, keepdims=keepdims)
    all_nan = reductions.all(nan, axis=axis, keepdims=keepdims)
    return enp.where(all_nan, scalar_like(-1, index), index)


def nancumsum(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
    """Cumulative sum treating NaN as zero."""
    return cumsum(_nan_to(as_operand(a), 0), axis=axis, dtype=dtype)


def nancumprod(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
    """Cumulative product treating NaN as one."""
    return cumprod(_nan_to(as_operand(a), 1), axis=axis, dtype=dtype)


# --------------------------------------------------------------------------------------------
# NaN-ignoring quantiles

_QUANTILE_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def nanquantile(
    a: Any,
    q: Any,
    axis: Any = None,
    out: None = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: Any = None,
) -> Any:
    """Quantiles (``q`` in [0, 1]) of the non-NaN values; NaN where a slice is all NaN."""
    if weights is not None:
        raise NotImplementedError(
            f"nanquantile: weights= (JAX supports it only for method "
            f"'inverted_cdf'){errors.where()}"
        )
    if method not in _QUANTILE_METHODS:
        raise ValueError(
            f"nanquantile: method must be one of {_QUANTILE_METHODS}, got {method!r}"
            f"{errors.where()}"
        )
    a = creation.asarray_inexact(a)
    if dtype_of(a).kind == "c":
        raise errors.EmberTypeError(f"nanquantile does not support complex input{errors.where()}")
    # 16-bit floats: count, positions and interpolation in float32, the answer cast back.
    dtype = dtype_of(a)
    a = convert_element_type(a, reductions.computation_dtype(dtype))
    values, kept_shape = _reduced_axes_last(a, axis, keepdims)
    q = convert_element_type(creation.asarray(as_operand(q)), dtype_of(a))
    result = convert_element_type(_nan_quantile_last_axis(values, q, method), dtype)
    return manipulation.reshape(result, shape_of(q) + kept_shape)


def _reduced_axes_last(a: Any, axis: Any, keepdims: bool) -> tuple[Any, tuple[int, ...]]:
    """``a`` with the reduced axes merged into one last axis, and the result's shape."""
    shape = shape_of(a)
    axes = canonicalize_axes(axis, len(shape))
    kept = [d for d in range(len(shape)) if d not in axes]
    moved = manipulation.transpose(a, tuple(kept + list(axes)))
    count = int(np.prod([shape[d] for d in axes], dtype=np.int64))
    values = manipulation.reshape(moved, tuple(shape[d] for d in kept) + (count,))
    if keepdims:
        return values, tuple(1 if d in axes else shape[d] for d in range(len(shape)))
    return values, tuple(shape[d] for d in kept)


@functools.partial(jit, inline=True, static_argnames="method")
def _nan_quantile_last_axis(values: Any, q: Any, method: str) -> Any:
    """Quantiles along the last axis: sort (NaNs go last), then interpolate between the
    order statistics of each slice's own count of valid values. Shape: q's + the batch's."""
    n = shape_of(values)[-1]
    batch = shape_of(values)[:-1]
    ordered = sort(values, axis=-1)
    valid = reductions.sum(enp.logical_not(enp.isnan(values)), axis=-1, dtype=dtype_of(values))
    q_shape = shape_of(q)
    q = manipulation.reshape(q, q_shape + (1,) * len(batch))
    last = enp.maximum(enp.subtract(valid, scalar_like(1, valid)), scalar_like(0, valid))
    position = enp.multiply(q, last)
    low = enp.floor(position)
    frac = enp.subtract(position, low)
    high = enp.minimum(enp.add(low, scalar_like(1, low)), last)
    if method == "higher":
        low = enp.ceil(position)
    elif method == "nearest":
        low = enp.round(position)  # half to even, as NumPy
    elif method == "midpoint":
        frac = enp.where(enp.equal(frac, 0), frac, scalar_like(0.5, frac))
    target = q_shape + batch + (n,)
    ordered = broadcast_to_shape(ordered, target)

    def pick(index):
        index = convert_element_type(index, dtypes.int32)[..., None]
        index = broadcast_to_shape(index, q_shape + batch + (1,))
        return take_along_axis(ordered, index, axis=-1)[..., 0]

    empty = enp.equal(valid, 0)
    v_low = pick(low)
    if method in ("lower", "higher", "nearest"):  # an order statistic, no interpolation
        return enp.where(empty, scalar_like(np.nan, v_low), v_low)
    v_high = pick(high)
    # Interpolate from the nearer end, as NumPy does (this also fixes which infinities
    # survive interpolation).
    step = enp.subtract(v_high, v_low)
    from_low = enp.add(v_low, enp.multiply(step, frac))
    from_high = enp.subtract(v_high, enp.multiply(step, enp.subtract(1, frac)))
    result = enp.where(enp.greater_equal(frac, 0.5), from_high, from_low)
    return enp.where(empty, scalar_like(np.nan, result), result)


def nanpercentile(
    a: Any,
    q: Any,
    axis: Any = None,
    out: None = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: Any = None,
) -> Any:
    """Percentiles (``q`` in [0, 100]) of the non-NaN values."""
    a = creation.asarray_inexact(a)
    q = enp.divide(convert_element_type(creation.asarray(as_operand(q)), dtype_of(a)), 100)
    return nanquantile(a, q, axis=axis, method=method, keepdims=keepdims, weights=weights)


def nanmedian(
    a: Any,
    axis: Any = None,
    out: None = None,
    overwrite_input: bool = False,
    keepdims: bool = False,
) -> Any:
    """Median of the non-NaN values."""
    return nanquantile(a, 0.5, axis=axis, keepdims=keepdims)


# --------------------------------------------------------------------------------------------
# Histograms


def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None, weights: Any = None) -> Any:
    """Bin edges: ``bins`` itself when it is an array of edges, otherwise ``bins + 1`` evenly
    spaced edges over ``range`` (default: the data's minimum and maximum)."""
    a = creation.asarray_inexact(a)
    if np.ndim(bins) == 1:
        return creation.asarray_inexact(bins)
    if np.ndim(bins) != 0:
        raise ValueError(f"histogram_bin_edges: bins must be an int or 1-D, got {bins!r}")
    count = operator.index(core.concrete_or_error(bins, "histogram_bin_edges's bins"))
    if count < 1:
        raise ValueError(f"histogram_bin_edges: bins must be positive, got {count}")
    if range is None:
        if not a.size:
            lo, hi = scalar_like(0, a), scalar_like(1, a)
        else:
            lo, hi = reductions.min(a), reductions.max(a)
    else:
        if len(range) != 2:
            raise ValueError(f"histogram_bin_edges: range must be (min, max), got {range!r}")
        lo, hi = (convert_element_type(creation.asarray(v), dtype_of(a)) for v in range)
    # A single value spreads over a unit interval, as NumPy does.
    same = enp.equal(lo, hi)
    lo = enp.where(same, enp.subtract(lo, scalar_like(0.5, a)), lo)
    hi = enp.where(same, enp.add(hi, scalar_like(0.5, a)), hi)
    steps = creation.asarray(np.arange(count + 1) / count, dtype_of(a))
    edges = enp.add(lo, enp.multiply(steps, enp.subtract(hi, lo)))
    # Pin the last edge to the maximum exactly, so that the largest value is counted.
    return enp.where(np.arange(count + 1) == count, hi, edges)


def histogramdd(
    sample: Any, bins: Any = 10, range: Any = None, weights: Any = None, density: Any = None
) -> tuple[Any, list[Any]]:
    """Counts (or summed weights) of ``sample``'s points, an (N, D) array, per D-dimensional
    bin; the last bin of each dimension includes its right edge."""
    sample = creation.asarray_inexact(sample)
    if get_aval(sample).ndim == 1:
        sample = sample[:, None]
    if get_aval(sample).ndim != 2:
        raise ValueError(f"histogramdd: sample must be (N, D), got {shape_of(sample)}")
    n_points, n_dims = shape_of(sample)
    bins_per_dim = _per_dimension(bins, n_dims, "bins")
    ranges = [None] * n_dims if range is None else _per_dimension(range, n_dims, "range")
    edges = [
        histogram_bin_edges(sample[:, d], bins_per_dim[d], ranges[d])
        for d in builtins.range(n_dims)
    ]
    sizes = [shape_of(e)[0] - 1 for e in edges]
    flat = creation.zeros((n_points,), dtypes.int32)
    inside = creation.ones((n_points,), dtypes.bool_)
    for d, e in enumerate(edges):
        index, within = _bin_index(sample[:, d], e)
        flat = enp.add(enp.multiply(flat, np.int32(sizes[d])), index)
        inside = enp.logical_and(inside, within)
    if weights is not None:
        weight = convert_element_type(creation.asarray(as_operand(weights)), dtype_of(sample))
    else:  # plain counts are integers, as JAX's (densities are the sample's float)
        weight = creation.ones((n_points,), dtype_of(sample) if density else dtypes.default_int())
    weight = enp.where(inside, weight, scalar_like(0, weight))
    total_bins = int(np.prod(sizes, dtype=np.int64))
    counts = creation.zeros((total_bins,), dtype_of(weight)).at[flat].add(weight)
    counts = manipulation.reshape(counts, tuple(sizes))
    if density:
        volume = creation.ones((), dtype_of(counts))
        for d, e in enumerate(edges):
            width = enp.subtract(e[1:], e[:-1])
            shape = [1] * n_dims
            shape[d] = sizes[d]
            volume = enp.multiply(volume, manipulation.reshape(width, tuple(shape)))
        counts = enp.divide(enp.divide(counts, reductions.sum(counts)), volume)
    return counts, edges


def _per_dimension(value: Any, n_dims: int, what: str) -> list[Any]:
    if isinstance(value, (int, np.integer)):
        return [value] * n_dims
    if len(value) != n_dims:
        raise ValueError(
            f"histogramdd: {what} must have one entry per dimension ({n_dims}), got "
            f"{len(value)}{errors.where()}"
        )
    return list(value)


def _bin_index(x: Any, edges: Any) -> tuple[Any, Any]:
    """Each value's bin (clamped into range) and whether it lies inside the edges."""
    n_bins = shape_of(edges)[0] - 1
    index = enp.subtract(searchsorted(edges, x, side="right"), np.int32(1))
    index = enp.where(enp.equal(x, edges[-1]), np.int32(n_bins - 1), index)  # closed last bin
    inside = enp.logical_and(enp.greater_equal(index, 0), enp.less(index, np.int32(n_bins)))
    return enp.clip(index, np.int32(0), np.int32(n_bins - 1)), inside


def histogram2d(
    x: Any, y: Any, bins: Any = 10, range: Any = None, weights: Any = None, density: Any = None
) -> tuple[Any, Any, Any]:
    """The 2-D histogram of the points ``(x, y)``: counts, x edges, y edges."""
    x, y = promote_dtypes(creation.asarray_inexact(x), creation.asarray_inexact(y))
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n not in (1, 2):  # one array of edges shared by both dimensions
        bins = [bins, bins]
    sample = manipulation.stack([x, y], axis=1)
    counts, edges = histogramdd(sample, bins, range, weights, density)
    return counts, edges[0], edges[1]


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
