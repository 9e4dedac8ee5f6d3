"""Repeating and rolling whole arrays: ``tile``, ``repeat`` and ``roll``."""

from __future__ import annotations

import builtins
import operator
from typing import Any

import numpy as np

from ember._src import core, errors
from ember._src.core import get_aval
from ember._src.numpy import creation
from ember._src.numpy.advanced_indexing import take
from ember._src.numpy.operands import (
    canonicalize_axis,
    shape_of,
)
from ember._src.numpy.searching import digitize, searchsorted  # noqa: F401 (re-exported)
from ember._src.primitives.shape import broadcast_in_dim, reshape
from ember._src.primitives.slicing import concatenate, slice_along


def tile(A: Any, reps: Any) -> Any:  # NumPy and JAX call it A
    a = creation.asarray(A)
    reps = (operator.index(reps),) if np.ndim(reps) == 0 else tuple(operator.index(r) for r in reps)
    if builtins.any(r < 0 for r in reps):
        raise ValueError(f"tile: reps may not be negative, got {reps}{errors.where()}")
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
        if count < 0:
            raise ValueError(f"repeat: repeats may not be negative, got {count}{errors.where()}")
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
    if (counts < 0).any():
        raise ValueError(f"repeat: repeats may not contain negative values{errors.where()}")
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
