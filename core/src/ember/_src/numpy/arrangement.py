"""Rearranging whole arrays: fliplr, flipud, rot90, rollaxis, resize, trim_zeros, copy."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ember._src import core, errors
from ember._src.core import get_aval
from ember._src.numpy import creation, manipulation
from ember._src.numpy.concrete import concrete_or_error
from ember._src.numpy.operands import canonicalize_axis
from ember._src.numpy.repetition import tile


def fliplr(m: Any) -> Any:
    """``m`` with its columns (axis 1) in reverse order."""
    m = creation.asarray(m)
    if get_aval(m).ndim < 2:
        raise ValueError(
            f"fliplr: input must be >= 2-d, got shape {get_aval(m).shape}{errors.where()}"
        )
    return manipulation.flip(m, 1)


def flipud(m: Any) -> Any:
    """``m`` with its rows (axis 0) in reverse order."""
    m = creation.asarray(m)
    if get_aval(m).ndim < 1:
        raise ValueError(f"flipud: input must be >= 1-d, got a scalar{errors.where()}")
    return manipulation.flip(m, 0)


def rot90(m: Any, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Any:
    """``m`` rotated by 90 degrees ``k`` times in the plane of ``axes`` (from the first axis
    towards the second)."""
    m = creation.asarray(m)
    ndim = get_aval(m).ndim
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError(f"rot90: len(axes) must be 2, got axes={axes}{errors.where()}")
    if not all(-ndim <= ax < ndim for ax in axes):
        raise ValueError(
            f"rot90: axes={axes} out of range for array of ndim={ndim}{errors.where()}"
        )
    first, second = (ax % ndim for ax in axes)
    if first == second:
        raise ValueError(f"rot90: axes must be different, got axes={axes}{errors.where()}")
    k = operator.index(core.concrete_or_error(k, "rot90's k")) % 4
    if k == 0:
        return m
    if k == 2:
        return manipulation.flip(m, (first, second))
    swap = list(range(ndim))
    swap[first], swap[second] = swap[second], swap[first]
    if k == 1:
        return manipulation.transpose(manipulation.flip(m, second), swap)
    return manipulation.flip(manipulation.transpose(m, swap), second)


def rollaxis(a: Any, axis: int, start: int = 0) -> Any:
    """``a`` with ``axis`` moved to lie before position ``start`` (NumPy's older
    ``moveaxis``)."""
    a = creation.asarray(a)
    ndim = get_aval(a).ndim
    axis = canonicalize_axis(axis, ndim)
    start = operator.index(start)
    if not -ndim <= start <= ndim:
        raise np.exceptions.AxisError(
            f"rollaxis: 'start' must satisfy {-ndim} <= start <= {ndim}, got {start}"
            f"{errors.where()}"
        )
    start = start + ndim if start < 0 else start
    if axis < start:
        start -= 1
    if axis == start:
        return a
    return manipulation.moveaxis(a, axis, start)


def resize(a: Any, new_shape: Any) -> Any:
    """An array of ``new_shape`` filled with ``a``'s elements, repeated cyclically (zeros
    when ``a`` is empty)."""
    a = creation.asarray(a)
    if isinstance(new_shape, (int, np.integer)):
        new_shape = (new_shape,)
    dims = tuple(operator.index(core.concrete_or_error(d, "resize's new_shape")) for d in new_shape)
    if any(d < 0 for d in dims):
        raise ValueError(
            f"resize: all elements of new_shape must be non-negative, got {dims}{errors.where()}"
        )
    flat = manipulation.ravel(a)
    size, wanted = get_aval(flat).size, int(np.prod(dims, dtype=np.int64))
    if size == 0 or wanted == 0:
        return creation.zeros(dims, get_aval(a).dtype)
    repeated = tile(flat, -(-wanted // size))
    return manipulation.reshape(repeated[:wanted], dims)


def trim_zeros(filt: Any, trim: str = "fb", axis: Any = None) -> Any:
    """``filt`` without its leading (``"f"``) and/or trailing (``"b"``) zeros along each of
    ``axis`` (all axes when None). The result's shape depends on the values, so ``filt``
    must be concrete, as in JAX."""
    filt = creation.asarray(filt)
    values = np.asarray(concrete_or_error(filt, "trim_zeros' filt argument"))
    trim = trim.lower()
    if not set(trim) <= {"f", "b"}:
        raise ValueError(f"trim_zeros: trim must contain only 'f' and 'b', got {trim!r}")
    axes = range(values.ndim) if axis is None else _axes(axis, values.ndim)
    window = [slice(None)] * values.ndim
    for ax in axes:
        window[ax] = _nonzero_span(values, ax, trim)
    return filt[tuple(window)]


def _axes(axis: Any, ndim: int) -> list[int]:
    axes = [axis] if np.ndim(axis) == 0 else list(axis)
    return [canonicalize_axis(ax, ndim) for ax in axes]


def _nonzero_span(values: np.ndarray, axis: int, trim: str) -> slice:
    others = tuple(i for i in range(values.ndim) if i != axis)
    present = np.flatnonzero(np.any(values != 0, axis=others))
    if not present.size:
        return slice(0, 0)
    start = int(present[0]) if "f" in trim else None
    stop = int(present[-1]) + 1 if "b" in trim else None
    return slice(start, stop)


def copy(a: Any, order: str | None = None) -> Any:
    """A copy of ``a`` as an ember array (arrays are immutable, so this is ``asarray``)."""
    if order not in (None, "K", "C", "A"):
        raise NotImplementedError(f"copy: order={order!r} (only C order is supported)")
    return creation.array(a, copy=True)
