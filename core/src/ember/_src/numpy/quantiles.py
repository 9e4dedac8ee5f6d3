"""Quantiles of data: ``quantile``, ``percentile`` and ``median`` (NumPy's interpolation
methods)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as enp, manipulation, reductions
from ember._src.numpy.advanced_indexing import take
from ember._src.numpy.operands import (
    as_operand,
    canonicalize_axis,
    check_no_out,
    shape_of,
)
from ember._src.numpy.searching import digitize, searchsorted  # noqa: F401 (re-exported)
from ember._src.numpy.sorting import sort
from ember._src.primitives.shape import (
    convert_element_type,
    reshape,
)


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
