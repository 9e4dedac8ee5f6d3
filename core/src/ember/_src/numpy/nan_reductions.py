"""Reductions that ignore NaNs: ``nansum``, ``nanprod``, ``nanmax``, ``nanmin``, ``nanmean``,
``nanvar`` and ``nanstd``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes
from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as enp, reductions
from ember._src.numpy.operands import (
    check_dtype_arg,
    check_no_out,
)
from ember._src.numpy.searching import digitize, searchsorted  # noqa: F401 (re-exported)
from ember._src.primitives.shape import (
    convert_element_type,
)


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
