"""``pad`` with every NumPy mode: constant, edge, wrap, reflect and symmetric (even or odd),
linear_ramp, the statistics (maximum, minimum, mean, median), empty, and a callable applied
to each 1-D slice. Axes are padded one after another, as NumPy does, so corners see the
earlier axes' padding."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as enp, manipulation, reductions
from ember._src.numpy.advanced_indexing import take
from ember._src.numpy.operands import as_operand, shape_of
from ember._src.numpy.quantiles import median
from ember._src.primitives.shape import convert_element_type
from ember._src.primitives.slicing import pad as lax_pad, rev, slice_along
from ember._src.transforms.vmap import vmap

_KEYWORDS = {
    "constant": {"constant_values"},
    "edge": set(),
    "wrap": set(),
    "empty": set(),
    "reflect": {"reflect_type"},
    "symmetric": {"reflect_type"},
    "linear_ramp": {"end_values"},
    "maximum": {"stat_length"},
    "minimum": {"stat_length"},
    "mean": {"stat_length"},
    "median": {"stat_length"},
}


def pad(array: Any, pad_width: Any, mode: str | Callable[..., Any] = "constant", **kwargs) -> Any:
    """``numpy.pad``: ``array`` widened by ``pad_width`` (per axis ``(before, after)``)."""
    array = creation.asarray(as_operand(array))
    ndim = get_aval(array).ndim
    widths = _pairs(pad_width, ndim, "pad_width").astype(np.int64)
    if (widths < 0).any():
        raise ValueError(f"pad: negative pad widths {widths.tolist()}{errors.where()}")
    if callable(mode):
        return _pad_with_function(array, widths, mode, kwargs)
    if mode not in _KEYWORDS:
        raise NotImplementedError(f"pad: unimplemented padding mode {mode!r}{errors.where()}")
    unknown = set(kwargs) - _KEYWORDS[mode]
    if unknown:
        raise ValueError(
            f"pad: unsupported keyword arguments for mode {mode!r}: {unknown}{errors.where()}"
        )
    if mode in ("constant", "empty"):
        return _pad_constant(array, widths, kwargs.get("constant_values", 0))
    for axis, (lo, hi) in enumerate(widths.tolist()):
        if lo == hi == 0:
            continue
        if shape_of(array)[axis] == 0:
            raise ValueError(
                f"pad: can't extend empty axis {axis} using modes other than 'constant' or "
                f"'empty'{errors.where()}"
            )
        array = _pad_axis(array, axis, lo, hi, mode, kwargs)
    return array


def _pairs(values: Any, ndim: int, name: str) -> np.ndarray:
    """``values`` as an (ndim, 2) table of (before, after), from a scalar, a pair or a table."""
    table = np.asarray(values)
    if table.ndim > 2 or not (table.ndim < 2 or table.shape[0] in (1, ndim)):
        raise ValueError(
            f"pad: {name} of shape {table.shape} doesn't fit an array of rank {ndim}"
            f"{errors.where()}"
        )
    try:
        return np.broadcast_to(table, (ndim, 2))
    except ValueError:
        raise ValueError(
            f"pad: {name} of shape {table.shape} doesn't fit an array of rank {ndim}"
            f"{errors.where()}"
        ) from None


def _pad_constant(array: Any, widths: np.ndarray, constant_values: Any) -> Any:
    dtype = get_aval(array).dtype
    if np.ndim(constant_values) == 0 and not hasattr(constant_values, "shape"):
        value = convert_element_type(as_operand(constant_values), dtype)
        return lax_pad(array, value, [(int(lo), int(hi), 0) for lo, hi in widths])
    values = creation.asarray(as_operand(constant_values))
    if get_aval(values).ndim == 0:
        value = convert_element_type(values, dtype)
        return lax_pad(array, value, [(int(lo), int(hi), 0) for lo, hi in widths])
    values = manipulation.broadcast_to(_table(values, get_aval(array).ndim), (len(widths), 2))
    for axis, (lo, hi) in enumerate(widths.tolist()):
        no_pad = [(0, 0, 0)] * len(widths)
        lo_cfg, hi_cfg = list(no_pad), list(no_pad)
        lo_cfg[axis], hi_cfg[axis] = (lo, 0, 0), (0, hi, 0)
        array = lax_pad(array, convert_element_type(values[axis, 0], dtype), lo_cfg)
        array = lax_pad(array, convert_element_type(values[axis, 1], dtype), hi_cfg)
    return array


def _table(values: Any, ndim: int) -> Any:
    """A traced per-axis value table, reshaped to broadcast against (ndim, 2)."""
    shape = shape_of(values)
    if len(shape) == 1:
        return manipulation.reshape(values, (1, shape[0]))
    if len(shape) == 2 and shape[0] in (1, ndim):
        return values
    raise ValueError(f"pad: values of shape {shape} don't fit rank {ndim}{errors.where()}")


def _pad_axis(array: Any, axis: int, lo: int, hi: int, mode: str, kwargs: dict) -> Any:
    n = shape_of(array)[axis]
    if mode in ("edge", "wrap") or (mode in ("reflect", "symmetric") and
                                    kwargs.get("reflect_type", "even") == "even"):  # fmt: skip
        return take(array, _positions(n, lo, hi, mode), axis=axis, mode="clip")
    if mode in ("reflect", "symmetric"):
        if kwargs["reflect_type"] != "odd":
            raise ValueError(
                f"pad: reflect_type must be 'even' or 'odd', got {kwargs['reflect_type']!r}"
                f"{errors.where()}"
            )
        return _reflect_odd(array, axis, lo, hi, mode == "symmetric")
    if mode == "linear_ramp":
        return _linear_ramp(array, axis, lo, hi, kwargs.get("end_values", 0))
    return _pad_statistic(array, axis, lo, hi, mode, kwargs.get("stat_length"))


def _positions(n: int, lo: int, hi: int, mode: str) -> np.ndarray:
    """Source index of each padded position for the index-only modes."""
    positions = np.arange(-lo, n + hi)
    if mode == "edge":
        return np.clip(positions, 0, n - 1)
    if mode == "wrap":
        return positions % n
    period = 2 * n - 2 if mode == "reflect" else 2 * n
    if period == 0:
        return np.zeros_like(positions)
    folded = positions % period
    if mode == "reflect":
        return np.where(folded >= n, period - folded, folded)
    return np.where(folded >= n, period - 1 - folded, folded)


def _reflect_odd(array: Any, axis: int, lo: int, hi: int, symmetric: bool) -> Any:
    """Odd reflection grows in chunks at most one period long, each mirrored through the
    current edge value (2 * edge - mirror), exactly as NumPy builds it."""
    n = shape_of(array)[axis]
    if n == 1 and not symmetric:
        return take(array, np.zeros(n + lo + hi, np.int64), axis=axis)
    two = np.asarray(2, get_aval(array).dtype)
    while lo > 0 or hi > 0:
        length = shape_of(array)[axis]
        period = n if symmetric else n - 1
        usable = (length // n) * n if symmetric else ((length - 1) // period) * period
        skip = 0 if symmetric else 1  # reflect leaves the edge itself out of the mirror
        parts = [array]
        if lo > 0:
            size = min(usable, lo)
            chunk = rev(slice_along(array, axis, skip, skip + size), (axis,))
            edge = slice_along(array, axis, 0, 1)
            parts.insert(0, enp.subtract(enp.multiply(two, edge), chunk))
            lo -= size
        if hi > 0:
            size = min(usable, hi)
            chunk = rev(slice_along(array, axis, length - skip - size, length - skip), (axis,))
            edge = slice_along(array, axis, length - 1, length)
            parts.append(enp.subtract(enp.multiply(two, edge), chunk))
            hi -= size
        array = manipulation.concatenate(parts, axis=axis)
    return array


def _linear_ramp(array: Any, axis: int, lo: int, hi: int, end_values: Any) -> Any:
    """Ramps from ``end_values`` toward each edge value (the edge itself excluded). Integer
    ramps are floored, as ``linspace`` with an integer dtype, in exact integer arithmetic so
    that compiled and eager answers agree."""
    ndim, n = get_aval(array).ndim, shape_of(array)[axis]
    dtype = get_aval(array).dtype
    ends = creation.asarray(as_operand(end_values))
    ends = manipulation.broadcast_to(_table(ends, ndim) if get_aval(ends).ndim else ends, (ndim, 2))
    ends = convert_element_type(ends, dtype)
    parts = [array]
    for side, width in ((0, lo), (1, hi)):
        if width == 0:
            continue
        edge = slice_along(array, axis, 0, 1) if side == 0 else slice_along(array, axis, n - 1, n)
        shape = [1] * ndim
        shape[axis] = width
        steps = np.arange(width).reshape(shape).astype(dtype)  # 0 at the end value
        rise = enp.multiply(steps, enp.subtract(edge, ends[axis, side]))
        if dtypes.is_inexact(dtype):
            ramp = enp.add(ends[axis, side], enp.divide(rise, np.asarray(width, dtype)))
        else:
            ramp = enp.add(ends[axis, side], enp.floor_divide(rise, np.asarray(width, dtype)))
        if side == 1:
            ramp = rev(ramp, (axis,))
        parts.insert(0, ramp) if side == 0 else parts.append(ramp)
    return manipulation.concatenate(parts, axis=axis)


_STATISTICS = {
    "maximum": lambda v, ax: reductions.max(v, axis=ax, keepdims=True),
    "minimum": lambda v, ax: reductions.min(v, axis=ax, keepdims=True),
    "mean": lambda v, ax: reductions.mean(v, axis=ax, keepdims=True),
}


def _pad_statistic(array: Any, axis: int, lo: int, hi: int, mode: str, stat_length: Any) -> Any:
    """Each side filled with a statistic of the ``stat_length`` values nearest it; integer
    means and medians are rounded half to even, as NumPy."""
    ndim, n = get_aval(array).ndim, shape_of(array)[axis]
    lengths = _pairs(n if stat_length is None else stat_length, ndim, "stat_length")[axis]
    parts = [array]
    for side, width in ((0, lo), (1, hi)):
        if width == 0:
            continue
        count = min(int(lengths[side]), n)
        if count <= 0:
            raise ValueError(f"pad: stat_length of 0 yields no value for padding{errors.where()}")
        window = (
            slice_along(array, axis, 0, count)
            if side == 0
            else slice_along(array, axis, n - count, n)
        )
        value = _statistic(window, axis, mode, get_aval(array).dtype)
        target = list(shape_of(array))
        target[axis] = width
        fill = manipulation.broadcast_to(value, tuple(target))
        parts.insert(0, fill) if side == 0 else parts.append(fill)
    return manipulation.concatenate(parts, axis=axis)


def _statistic(window: Any, axis: int, mode: str, dtype: np.dtype) -> Any:
    if mode == "median":
        value = median(window, axis=axis, keepdims=True)
    else:
        value = _STATISTICS[mode](window, axis)
    if mode in ("mean", "median") and not dtypes.is_inexact(dtype):
        value = enp.round(value)
    return convert_element_type(value, dtype)


def _pad_with_function(array: Any, widths: np.ndarray, function: Callable, kwargs: dict) -> Any:
    """Zero padding, then ``function(vector, (before, after), axis, kwargs)`` -> new vector
    over every 1-D slice along each axis in turn (mapped with vmap, as JAX)."""
    array = _pad_constant(array, widths, 0)
    for axis, pair in enumerate(widths.tolist()):
        moved = manipulation.moveaxis(array, axis, -1)
        rows = manipulation.reshape(moved, (-1, shape_of(moved)[-1]))
        out = vmap(lambda row, _a=axis, _p=tuple(pair): function(row, _p, _a, kwargs))(rows)
        out = creation.asarray(out)
        if shape_of(out) != shape_of(rows):
            raise ValueError(
                f"pad: the padding function must return a vector of length {shape_of(rows)[1]}"
                f", got shape {shape_of(out)[1:]}{errors.where()}"
            )
        array = manipulation.moveaxis(manipulation.reshape(out, shape_of(moved)), -1, axis)
    return array
