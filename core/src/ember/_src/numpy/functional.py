"""Lifting functions over arrays with ``vmap``: vectorize (with NumPy's gufunc
``signature=`` and ``excluded=``), apply_along_axis, apply_over_axes, fromfunction.

The function is traced once per call, not run per element: it sees the core slices of its
arguments, as under ``ember.vmap``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import core, errors
from ember._src.core import get_aval
from ember._src.numpy import creation, manipulation
from ember._src.numpy.operands import canonicalize_axis, check_dtype_arg
from ember._src.transforms.vmap import vmap

# A gufunc signature such as "(m,n),(n)->(m)": comma-separated argument lists of names.
_DIMENSION = r"\w+"
_CORE_DIMS = rf"\((?:{_DIMENSION}(?:,{_DIMENSION})*)?\)"
_ARGUMENTS = rf"{_CORE_DIMS}(?:,{_CORE_DIMS})*"
_SIGNATURE = re.compile(rf"^{_ARGUMENTS}->{_ARGUMENTS}$")


def parse_signature(signature: str) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """The core dimension names of each input and each output of a gufunc signature."""
    compact = re.sub(r"\s+", "", signature)
    if not _SIGNATURE.match(compact):
        raise ValueError(f"vectorize: not a valid gufunc signature: {signature!r}{errors.where()}")
    inputs, outputs = compact.split("->")
    return _core_dims(inputs), _core_dims(outputs)


def _core_dims(part: str) -> list[tuple[str, ...]]:
    return [tuple(re.findall(_DIMENSION, group)) for group in re.findall(_CORE_DIMS, part)]


def vectorize(pyfunc: Callable[..., Any], *, excluded: Any = frozenset(),
              signature: str | None = None) -> Callable[..., Any]:  # fmt: skip
    """``pyfunc`` lifted to broadcast over leading (loop) axes, with ``vmap``.

    Without ``signature`` every argument is treated element-wise; with one such as
    ``"(n),(n)->()"`` the named trailing axes are handed to ``pyfunc`` whole. Positional
    indices or keyword names in ``excluded`` are passed through unchanged."""
    excluded = frozenset(excluded)
    for item in excluded:
        if not isinstance(item, (int, str)) or isinstance(item, bool):
            raise TypeError(
                f"vectorize: excluded may hold only argument positions (int) and names (str), "
                f"got {item!r}{errors.where()}"
            )
        if isinstance(item, int) and item < 0:
            raise ValueError(f"vectorize: excluded={set(excluded)} holds a negative position")
    parsed = parse_signature(signature) if signature is not None else None

    @functools.wraps(pyfunc)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        context = (
            f"in the vectorized {getattr(pyfunc, '__name__', 'function')} (signature={signature!r})"
        )
        func, args, kwargs = _bind_excluded(pyfunc, excluded, args, kwargs)
        func, args = _keywords_as_positional(func, args, kwargs)
        in_dims = list(parsed[0]) if parsed else [()] * len(args)
        func, args, in_dims = _bind_nones(func, args, in_dims)
        args = [creation.asarray(a) for a in args]
        if len(in_dims) != len(args):
            raise TypeError(
                f"wrong number of positional arguments: expected {len(in_dims)}, got "
                f"{len(args)} {context}"
            )
        sizes = _core_sizes(args, in_dims, context)
        if parsed:
            func = _checked_outputs(func, parsed[1], sizes, context)
        return _loop(func, args, in_dims)

    return wrapped


def _bind_excluded(func, excluded, args, kwargs):
    """``func`` with the excluded arguments fixed, and the remaining arguments."""
    fixed = {i: args[i] for i in excluded if isinstance(i, int) and i < len(args)}
    fixed_kwargs = {k: v for k, v in kwargs.items() if k in excluded}
    if not fixed and not fixed_kwargs:
        return func, list(args), kwargs
    free = [a for i, a in enumerate(args) if i not in fixed]
    free_kwargs = {k: v for k, v in kwargs.items() if k not in excluded}
    total = len(args)

    def bound(*rest: Any, **more: Any) -> Any:
        rest = iter(rest)
        full = [fixed[i] if i in fixed else next(rest) for i in range(total)]
        return func(*full, **more, **fixed_kwargs)

    return bound, free, free_kwargs


def _keywords_as_positional(func, args, kwargs):
    """Keyword arguments are vectorized too, as NumPy does: they follow the positional ones
    (and take the next entries of a signature)."""
    if not kwargs:
        return func, list(args)
    names = list(kwargs)
    count = len(args)

    def by_position(*values: Any) -> Any:
        return func(*values[:count], **dict(zip(names, values[count:])))

    return by_position, [*args, *kwargs.values()]


def _bind_nones(func, args, in_dims):
    """``None`` arguments are passed through as they are (they have no axes to map)."""
    nones = {i for i, a in enumerate(args) if a is None}
    if not nones:
        return func, args, in_dims
    if any(in_dims[i] for i in nones if i < len(in_dims)):
        raise ValueError(
            f"vectorize: cannot pass None for an argument with core dimensions{errors.where()}"
        )
    func, args, _ = _bind_excluded(func, frozenset(nones), args, {})
    return func, args, [d for i, d in enumerate(in_dims) if i not in nones]


def _core_sizes(args: list[Any], in_dims: list[tuple[str, ...]], context: str) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for arg, dims in zip(args, in_dims):
        _record_sizes(sizes, get_aval(arg).shape, dims, context, "input")
    return sizes


def _record_sizes(sizes: dict, shape: tuple, dims: tuple, context: str, what: str) -> None:
    if len(shape) < len(dims):
        raise ValueError(
            f"{what} with shape {shape} does not have enough dimensions for its core "
            f"dimensions {dims} {context}{errors.where()}"
        )
    for name, size in zip(dims, shape[len(shape) - len(dims) :]):
        if sizes.setdefault(name, size) != size:
            raise ValueError(
                f"inconsistent size for core dimension {name!r}: {size} vs {sizes[name]} "
                f"{context}{errors.where()}"
            )


def _checked_outputs(func, out_dims, sizes, context):
    def checked(*args: Any, **kwargs: Any) -> Any:
        out = func(*args, **kwargs)
        outs = out if isinstance(out, tuple) else (out,)
        if len(out_dims) > 1 and not isinstance(out, tuple):
            raise TypeError(f"output must be a tuple when several outputs are expected {context}")
        if len(outs) != len(out_dims):
            raise TypeError(
                f"wrong number of outputs: expected {len(out_dims)}, got {len(outs)} {context}"
            )
        seen = dict(sizes)
        for value, dims in zip(outs, out_dims):
            _record_sizes(seen, get_aval(creation.asarray(value)).shape, dims, context, "output")
        return out

    return checked


def _loop(func, args: list[Any], in_dims: list[tuple[str, ...]]) -> Any:
    """Map ``func`` over the broadcast loop axes: one ``vmap`` per loop axis, innermost
    last; arguments of size 1 on an axis are not mapped there (broadcast)."""
    loop_shapes = [get_aval(a).shape[: get_aval(a).ndim - len(d)] for a, d in zip(args, in_dims)]
    loop_shape = _broadcast_loop_shapes(loop_shapes)
    rank = len(loop_shape)
    squeezed = []
    padded_shapes = []
    for arg, shape in zip(args, loop_shapes):
        padded = (1,) * (rank - len(shape)) + shape
        padded_shapes.append(padded)
        singles = tuple(i for i, s in enumerate(shape) if s == 1)
        squeezed.append(manipulation.squeeze(arg, singles) if singles else arg)
    call = func
    unmapped = []
    for axis in reversed(range(rank)):
        in_axes = tuple(None if shape[axis] == 1 else 0 for shape in padded_shapes)
        if all(a is None for a in in_axes):
            unmapped.append(axis)
        else:
            call = vmap(call, in_axes=in_axes)
    result = call(*squeezed)
    if not unmapped:
        return result
    axes = tuple(sorted(unmapped))
    if isinstance(result, tuple):
        return tuple(manipulation.expand_dims(r, axes) for r in result)
    return manipulation.expand_dims(result, axes)


def _call_with_kwargs(func, kwargs, *args):
    return func(*args, **kwargs)


def _broadcast_loop_shapes(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(
            f"vectorize: the loop dimensions {shapes} cannot be broadcast together{errors.where()}"
        ) from None


# --------------------------------------------------------------------------------------------


def apply_along_axis(func1d: Callable[..., Any], axis: int, arr: Any, *args: Any,
                     **kwargs: Any) -> Any:  # fmt: skip
    """``func1d`` applied to every 1-D slice of ``arr`` along ``axis``; the slices' results
    replace that axis."""
    arr = creation.asarray(arr)
    ndim = get_aval(arr).ndim
    axis = canonicalize_axis(axis, ndim)

    def on_slice(x: Any) -> Any:
        return func1d(x, *args, **kwargs)

    func = on_slice
    # Axes after ``axis`` are mapped with their results kept last; those before, first.
    for i in range(1, ndim - axis):
        func = vmap(func, in_axes=i, out_axes=-1)
    for _ in range(axis):
        func = vmap(func, in_axes=0, out_axes=0)
    return func(arr)


def apply_over_axes(func: Callable[[Any, int], Any], a: Any, axes: Sequence[int]) -> Any:
    """``func(a, axis)`` applied for each of ``axes`` in turn, each result keeping ``a``'s
    rank (a reduced axis is put back with length 1)."""
    a = creation.asarray(a)
    for axis in [axes] if isinstance(axes, int) else axes:
        result = creation.asarray(func(a, axis))
        rank, result_rank = get_aval(a).ndim, get_aval(result).ndim
        if result_rank == rank - 1:
            result = manipulation.expand_dims(result, axis)
        elif result_rank != rank:
            raise ValueError(
                f"apply_over_axes: function is not returning an array of the correct shape "
                f"(rank {result_rank} for an input of rank {rank}){errors.where()}"
            )
        a = result
    return a


def fromfunction(function: Callable[..., Any], shape: Any, *, dtype: Any = float,
                 **kwargs: Any) -> Any:  # fmt: skip
    """``function(i, j, ...)`` over every index of ``shape`` (vectorised: the function sees
    scalar indices of ``dtype`` under ``vmap``)."""
    dims = core.canonicalize_shape(shape, "fromfunction's shape")
    dtype = check_dtype_arg(dtype)
    func = functools.partial(_call_with_kwargs, function, kwargs)
    for axis in reversed(range(len(dims))):
        func = vmap(func, in_axes=tuple(0 if j == axis else None for j in range(len(dims))))
    return func(*(creation.arange(n, dtype=dtype) for n in dims))
