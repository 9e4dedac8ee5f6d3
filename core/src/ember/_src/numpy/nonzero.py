"""Where an array is nonzero: ``nonzero``, ``flatnonzero``, ``argwhere``, ``count_nonzero``,
and ``where`` (its one-argument form is ``nonzero``).

Functions whose output shape depends on values take a static ``size=`` (and ``fill_value=``)
under ``jit``, as in JAX; without it they need concrete inputs."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as enp, manipulation, reductions
from ember._src.numpy.operands import (
    as_operand,
    shape_of,
)
from ember._src.numpy.searching import digitize, searchsorted  # noqa: F401 (re-exported)
from ember._src.numpy.sorting import argsort
from ember._src.primitives.shape import reshape
from ember._src.primitives.slicing import pad as lax_pad, slice_along

# --------------------------------------------------------------------------------------------
# Tiling, repetition, rolling, padding


# --------------------------------------------------------------------------------------------
# Comparing arrays


def count_nonzero(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    nonzero = enp.not_equal(as_operand(a), 0)
    return reductions.sum(nonzero, axis=axis, keepdims=keepdims, dtype=dtypes.default_int())


# --------------------------------------------------------------------------------------------
# NaN-ignoring reductions


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


# --------------------------------------------------------------------------------------------
# Interpolation, polynomials, histograms, percentiles
