"""Choosing and placing elements: select, choose, piecewise, compress, extract, and the
functional forms of NumPy's in-place writers put, put_along_axis and place.

ember arrays are immutable, so the writers return an updated copy and, as in JAX, insist
on ``inplace=False`` to make that visible. ``compress``/``extract`` take a static
``size=`` (and ``fill_value=``) to be traced.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import Tracer, get_aval
from ember._src.numpy import creation, elementwise as enp, manipulation, reductions
from ember._src.numpy.advanced_indexing import take, take_along_axis
from ember._src.numpy.concrete import concrete_or_error
from ember._src.numpy.operands import canonicalize_axis, promote_dtypes
from ember._src.numpy.repetition import tile
from ember._src.numpy.sorting import argsort, cumsum
from ember._src.runtime.array import Array


def _refuse_inplace(name: str, inplace: bool) -> None:
    if inplace:
        raise ValueError(
            f"{name} cannot modify arrays in place: ember arrays are immutable. Pass "
            f"inplace=False to get an updated copy{errors.where()}"
        )


def _cycle_to(values: Any, count: int) -> Any:
    """The 1-D ``values`` repeated cyclically to exactly ``count`` elements."""
    size = get_aval(values).shape[0]
    if size < count:
        values = tile(values, -(-count // size))
    return values[:count] if get_aval(values).shape[0] > count else values


def put(a: Any, ind: Any, v: Any, mode: str | None = None, *, inplace: bool = True) -> Any:
    """A copy of ``a`` with the flat positions ``ind`` set to ``v`` (repeated cyclically).

    ``mode``: None drops out-of-range positions, ``"clip"`` clamps them, ``"wrap"`` wraps."""
    _refuse_inplace("put", inplace)
    a = creation.asarray(a)
    positions = manipulation.ravel(creation.asarray(ind))
    values = manipulation.ravel(creation.asarray(v))
    size = get_aval(a).size
    count = get_aval(positions).size
    if not size or not count or not get_aval(values).size:
        return a
    if not dtypes.is_integer(get_aval(positions).dtype):
        raise IndexError(
            f"put: indices must be integers, got {get_aval(positions).dtype}{errors.where()}"
        )
    dtype = get_aval(positions).dtype
    if mode == "clip":
        positions = enp.clip(positions, np.asarray(0, dtype), np.asarray(size - 1, dtype))
    elif mode == "wrap":
        positions = enp.remainder(positions, np.asarray(size, dtype))
    elif mode == "raise":
        raise NotImplementedError("put: mode='raise' is not supported (use None, 'clip' or 'wrap')")
    elif mode is not None:
        raise ValueError(f"put: mode must be None, 'clip' or 'wrap', got {mode!r}{errors.where()}")
    values = manipulation.astype(_cycle_to(values, count), get_aval(a).dtype)
    flat = manipulation.ravel(a).at[positions].set(values)
    return manipulation.reshape(flat, get_aval(a).shape)


def put_along_axis(arr: Any, indices: Any, values: Any, axis: int | None,
                   inplace: bool = True, *, mode: str | None = None) -> Any:  # fmt: skip
    """A copy of ``arr`` with ``values`` written where ``take_along_axis(arr, indices, axis)``
    reads."""
    _refuse_inplace("put_along_axis", inplace)
    arr = creation.asarray(arr)
    shape = get_aval(arr).shape
    if axis is None:
        arr, axis = manipulation.ravel(arr), 0
    indices = creation.asarray(indices)
    ndim = get_aval(arr).ndim
    if get_aval(indices).ndim != ndim:
        raise ValueError(
            f"put_along_axis: arr and indices must have the same number of dimensions, got "
            f"{ndim} and {get_aval(indices).ndim}{errors.where()}"
        )
    axis = canonicalize_axis(axis, ndim)
    index_shape = get_aval(indices).shape
    try:
        values = manipulation.broadcast_to(creation.asarray(values), index_shape)
    except ValueError:
        raise ValueError(
            f"put_along_axis: values of shape {np.shape(values)} do not broadcast to the "
            f"indices' shape {index_shape}{errors.where()}"
        ) from None
    if mode not in (None, "drop", "clip", "fill", "promise_in_bounds"):
        raise ValueError(f"put_along_axis: unknown mode {mode!r}{errors.where()}")
    picks = []
    for d in range(ndim):
        if d == axis:
            picks.append(indices)
        else:
            grid = [1] * ndim
            grid[d] = index_shape[d]
            picks.append(np.arange(index_shape[d], dtype=np.int32).reshape(grid))
    if mode == "clip":
        # Negative indices count from the end first; what is still out of range is clamped.
        length = get_aval(arr).shape[axis]
        dtype = get_aval(indices).dtype
        wrapped = enp.where(enp.less(indices, 0), indices + np.asarray(length, dtype), indices)
        limit = np.asarray(length - 1, dtype)
        picks[axis] = enp.clip(wrapped, np.asarray(0, dtype), limit)
    values = manipulation.astype(values, get_aval(arr).dtype)
    result = arr.at[tuple(picks)].set(values)
    return manipulation.reshape(result, shape)


def place(arr: Any, mask: Any, vals: Any, *, inplace: bool = True) -> Any:
    """A copy of ``arr`` whose elements where ``mask`` is true are, in order, the values
    ``vals`` (repeated cyclically)."""
    _refuse_inplace("place", inplace)
    arr = creation.asarray(arr)
    mask = manipulation.ravel(creation.asarray(mask))
    values = manipulation.ravel(creation.asarray(vals))
    size = get_aval(arr).size
    if get_aval(mask).size != size:
        raise ValueError(
            f"place: arr and mask must be the same size, got {size} and {get_aval(mask).size}"
            f"{errors.where()}"
        )
    if not get_aval(values).size:
        raise ValueError(f"place: cannot place values from an empty array{errors.where()}")
    if not size:
        return arr
    chosen = enp.not_equal(mask, False)
    # The k-th selected element takes vals[k % len(vals)]; k counts the selected ones so far.
    count = np.int32(get_aval(values).size)
    if isinstance(chosen, Tracer):
        rank = cumsum(chosen.astype(np.int32)) - np.int32(1)
        source = enp.remainder(enp.maximum(rank, np.int32(0)), count)
    else:  # a concrete mask: count on the host
        source = (np.maximum(np.cumsum(np.asarray(chosen)) - 1, 0) % count).astype(np.int32)
    picked = manipulation.astype(take(values, source, mode="clip"), get_aval(arr).dtype)
    flat = enp.where(chosen, picked, manipulation.ravel(arr))
    return manipulation.reshape(flat, get_aval(arr).shape)


# --------------------------------------------------------------------------------------------
# select, choose, piecewise


def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Any:
    """Element-wise, the entry of the first choice whose condition holds (``default`` where
    none does)."""
    if len(condlist) != len(choicelist):
        raise ValueError(
            f"select: condlist and choicelist must have the same length, got "
            f"{len(condlist)} and {len(choicelist)}{errors.where()}"
        )
    if not len(condlist):
        raise ValueError(f"select: condlist must be non-empty{errors.where()}")
    conditions = [creation.asarray(c) for c in condlist]
    for i, c in enumerate(conditions):
        if get_aval(c).dtype != dtypes.bool_:
            raise TypeError(
                f"select: invalid entry {i} in condlist: should be boolean, got "
                f"{get_aval(c).dtype}{errors.where()}"
            )
    default, *choices = promote_dtypes(_operand(default), *[_operand(c) for c in choicelist])
    result = default
    for cond, choice in reversed(list(zip(conditions, choices))):
        result = enp.where(cond, choice, result)
    return result


def _operand(x: Any) -> Any:
    return x if dtypes.is_python_scalar(x) else creation.asarray(x)


def choose(a: Any, choices: Any, out: None = None, mode: str = "raise") -> Any:
    """Element-wise, ``choices[a]``: the index array ``a`` picks which choice each element
    comes from (all broadcast together). ``mode``: ``"raise"`` (``a`` concrete and in
    range), ``"wrap"`` or ``"clip"``."""
    if out is not None:
        raise NotImplementedError("choose: the out argument is not supported")
    index = creation.asarray(a)
    if not dtypes.is_integer(get_aval(index).dtype):
        raise TypeError(
            f"choose: a must be an integer array, got {get_aval(index).dtype}{errors.where()}"
        )
    options = [creation.asarray(c) for c in _choices_list(choices)]
    count = len(options)
    dtype = get_aval(index).dtype
    if mode == "raise":
        values = np.asarray(
            concrete_or_error(
                index, "choose's a with mode='raise' (use 'wrap' or 'clip' under jit)"
            )
        )
        if values.size and (values.min() < 0 or values.max() >= count):
            raise ValueError(f"choose: invalid entry in choice array{errors.where()}")
    elif mode == "wrap":
        index = enp.remainder(index, np.asarray(count, dtype))
    elif mode == "clip":
        index = enp.clip(index, np.asarray(0, dtype), np.asarray(count - 1, dtype))
    else:
        raise ValueError(
            f"choose: mode must be 'raise', 'wrap' or 'clip', got {mode!r}{errors.where()}"
        )
    shapes = [get_aval(x).shape for x in (index, *options)]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(
            f"choose: shape mismatch, a and the choices cannot be broadcast together: "
            f"{shapes}{errors.where()}"
        ) from None
    options = promote_dtypes(*options)
    stacked = manipulation.stack([manipulation.broadcast_to(o, shape) for o in options])
    picks = manipulation.expand_dims(manipulation.broadcast_to(index, shape), 0)
    return manipulation.squeeze(take_along_axis(stacked, picks, axis=0), 0)


def _choices_list(choices: Any) -> list[Any]:
    if isinstance(choices, (Array, Tracer, np.ndarray)):
        return [choices[i] for i in range(get_aval(choices).shape[0])]
    return list(choices)


def piecewise(x: Any, condlist: Any, funclist: list[Any], *args: Any, **kw: Any) -> Any:
    """``funclist[i]`` (a function of ``x``, or a constant) where ``condlist[i]`` holds, the
    later condition winning; with one extra function, that one where no condition holds
    (zero otherwise). Results take ``x``'s dtype."""
    x = creation.asarray(x)
    conditions = _condition_list(condlist, get_aval(x).ndim)
    n_cond, n_func = len(conditions), len(funclist)
    if n_func not in (n_cond, n_cond + 1):
        raise ValueError(
            f"piecewise: with {n_cond} condition(s), either {n_cond} or {n_cond + 1} functions "
            f"are expected, got {n_func}{errors.where()}"
        )
    dtype = get_aval(x).dtype
    shape = get_aval(x).shape
    otherwise = funclist[n_cond] if n_func == n_cond + 1 else 0
    result = _evaluate(otherwise, x, dtype, shape, args, kw)
    for cond, func in zip(conditions, funclist):
        cond = manipulation.broadcast_to(creation.asarray(cond, dtype=np.bool_), shape)
        result = enp.where(cond, _evaluate(func, x, dtype, shape, args, kw), result)
    return result


def _condition_list(condlist: Any, ndim: int) -> list[Any]:
    # NumPy's rule: a scalar, or a flat sequence of booleans for an x of rank >= 1, is one
    # condition; otherwise each entry along the first axis is a condition.
    if isinstance(condlist, (bool, np.bool_)):
        return [condlist]
    if isinstance(condlist, (Array, Tracer, np.ndarray)):
        rank = get_aval(condlist).ndim
        if rank == 0 or (rank == 1 and ndim != 0):
            return [condlist]
        return [condlist[i] for i in range(get_aval(condlist).shape[0])]
    condlist = list(condlist)
    if condlist and ndim and not isinstance(condlist[0], (list, np.ndarray, Array, Tracer)):
        return [condlist]
    return condlist


def _evaluate(func: Any, x: Any, dtype: np.dtype, shape: tuple, args: tuple, kw: dict) -> Any:
    value = func(x, *args, **kw) if callable(func) else func
    value = manipulation.astype(creation.asarray(value), dtype)
    return manipulation.broadcast_to(value, shape)


# --------------------------------------------------------------------------------------------
# compress and extract


def compress(condition: Any, a: Any, axis: int | None = None, *, size: int | None = None,
             fill_value: Any = 0, out: None = None) -> Any:  # fmt: skip
    """The slices of ``a`` along ``axis`` (flattened when None) where the 1-D ``condition``
    is true. Under ``jit`` pass a static ``size=``: the result then has exactly ``size``
    slices, padded with ``fill_value``."""
    if out is not None:
        raise NotImplementedError("compress: the out argument is not supported")
    condition = creation.asarray(condition)
    if get_aval(condition).ndim != 1:
        raise ValueError(
            f"compress: condition must be a 1-D array, got shape {get_aval(condition).shape}"
            f"{errors.where()}"
        )
    a = creation.asarray(a)
    if axis is None:
        a, axis = manipulation.ravel(a), 0
    axis = canonicalize_axis(axis, get_aval(a).ndim)
    moved = manipulation.moveaxis(a, axis, 0)
    length = get_aval(moved).shape[0]
    keep = enp.not_equal(condition, False)
    if size is None:
        mask = np.asarray(
            concrete_or_error(keep, "compress's condition (pass a static size= under jit)")
        )
        if mask[length:].any():
            raise IndexError(
                f"compress: condition has true entries beyond the axis' length {length}"
                f"{errors.where()}"
            )
        positions = np.flatnonzero(mask[:length]).astype(np.int32)
        return manipulation.moveaxis(take(moved, positions, axis=0, mode="clip"), 0, axis)
    result = _compress_to_size(moved, keep[:length], size, fill_value)
    return manipulation.moveaxis(result, 0, axis)


def _compress_to_size(moved: Any, keep: Any, size: int, fill_value: Any) -> Any:
    # A condition shorter than the axis leaves the remaining slices out.
    moved = moved[: get_aval(keep).shape[0]]
    length = get_aval(moved).shape[0]
    if not 0 <= size <= length:
        raise ValueError(
            f"compress: size must be between 0 and the axis' length {length}, got size={size}"
            f"{errors.where()}"
        )
    # A stable sort of "not kept" brings the kept slices to the front, in order.
    order = argsort(enp.logical_not(keep))[:size]
    picked = take(moved, order, axis=0, mode="clip")
    valid = enp.less(np.arange(size, dtype=np.int32), reductions.sum(keep, dtype=np.int32))
    valid = manipulation.reshape(valid, (size,) + (1,) * (get_aval(picked).ndim - 1))
    fill = np.asarray(fill_value, get_aval(picked).dtype)
    return enp.where(valid, picked, fill)


def extract(condition: Any, arr: Any, *, size: int | None = None, fill_value: Any = 0) -> Any:
    """The elements of ``arr`` where ``condition`` is true, both flattened (see
    ``compress`` for ``size=``)."""
    condition = manipulation.ravel(creation.asarray(condition))
    return compress(condition, manipulation.ravel(creation.asarray(arr)), size=size,
                    fill_value=fill_value)  # fmt: skip
