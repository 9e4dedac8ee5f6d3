"""Building indices and grids: indices, ix_, mgrid, ogrid, r_, c_, s_, index_exp,
unravel_index, ravel_multi_index, meshgrid.

Grid bounds and concatenation directives are static. ``unravel_index`` of concrete indices
checks them as NumPy does (ValueError); traced indices are clipped into range, as in JAX.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import Tracer, get_aval
from ember._src.numpy import creation, elementwise as enp, manipulation
from ember._src.numpy.concrete import concrete_or_error
from ember._src.numpy.operands import (
    check_dtype_arg,
    promote_dtypes,
)
from ember._src.numpy.searching import digitize, searchsorted  # noqa: F401 (re-exported)
from ember._src.primitives.shape import (
    broadcast_in_dim,
    reshape,
)

s_ = np.s_
index_exp = np.index_exp


def indices(dimensions: Sequence[int], dtype: Any = None, sparse: bool = False) -> Any:
    """The index of every position of a grid of shape ``dimensions``, one array per axis
    (stacked into one array unless ``sparse``)."""
    dims = core.canonicalize_shape(dimensions, "indices' dimensions")
    dtype = check_dtype_arg(dtype) or dtypes.default_int()
    grids = []
    for axis, size in enumerate(dims):
        shape = [1] * len(dims)
        shape[axis] = size
        grids.append(manipulation.reshape(creation.arange(size, dtype=dtype), tuple(shape)))
    if sparse:
        return tuple(grids)
    if not grids:
        return creation.zeros((0,), dtype)
    return manipulation.stack([manipulation.broadcast_to(g, dims) for g in grids])


def ix_(*args: Any) -> tuple[Any, ...]:
    """Open-mesh index arrays from 1-D sequences: ``x[ix_(rows, cols)]`` picks the
    cross product of ``rows`` and ``cols``. Boolean (concrete) arguments mean their
    nonzero positions."""
    out = []
    for axis, arg in enumerate(args):
        arg = creation.asarray(arg)
        aval = get_aval(arg)
        if aval.ndim != 1:
            raise ValueError(
                f"ix_: cross index must be 1-dimensional, got shape {aval.shape}{errors.where()}"
            )
        if aval.dtype == dtypes.bool_:
            mask = np.asarray(concrete_or_error(arg, "ix_'s boolean argument"))
            arg = creation.asarray(np.flatnonzero(mask).astype(dtypes.default_int()))
        shape = [1] * len(args)
        shape[axis] = get_aval(arg).shape[0]
        out.append(manipulation.reshape(arg, tuple(shape)))
    return tuple(out)


# --------------------------------------------------------------------------------------------
# mgrid, ogrid, r_, c_


def _grid_from_slice(item: slice, name: str) -> Any:
    """The 1-D grid a slice stands for: ``arange`` for a real step, ``linspace`` (with the
    end point) for a complex step ``Nj``."""
    start = core.concrete_or_error(item.start, f"the slice start of {name}")
    stop = core.concrete_or_error(item.stop, f"the slice stop of {name}")
    step = core.concrete_or_error(item.step, f"the slice step of {name}")
    start = 0 if start is None else start
    step = 1 if step is None else step
    if isinstance(step, (complex, np.complexfloating)):
        return creation.linspace(start, stop, int(abs(step)))
    return creation.arange(start, stop, step)


class _Grid:
    """``mgrid[...]`` (dense) and ``ogrid[...]`` (open): grids from slices."""

    def __init__(self, sparse: bool, name: str):
        self.sparse = sparse
        self.name = name

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            return _grid_from_slice(key, self.name)
        axes = [_grid_from_slice(k, self.name) for k in key]
        if not axes:
            return [] if self.sparse else creation.arange(0)
        axes = promote_dtypes(*axes)
        grids = meshgrid(*axes, indexing="ij", sparse=self.sparse)
        return grids if self.sparse else manipulation.stack(grids)

    def __repr__(self) -> str:
        return f"ember.numpy.{self.name}"


mgrid = _Grid(sparse=False, name="mgrid")
ogrid = _Grid(sparse=True, name="ogrid")


class _AxisConcatenator:
    """``r_[...]`` and ``c_[...]``: slices, scalars and arrays joined along an axis.

    A leading string sets ``"axis"``, ``"axis,ndmin"`` or ``"axis,ndmin,trans1d"`` (where an
    item of lower rank than ``ndmin`` puts its own axes), or ``"r"``/``"c"`` for a row or
    column matrix result."""

    def __init__(self, axis: int, ndmin: int, trans1d: int, name: str):
        self.axis, self.ndmin, self.trans1d, self.name = axis, ndmin, trans1d, name

    def __getitem__(self, key: Any) -> Any:
        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d, matrix = self.axis, self.ndmin, self.trans1d, None
        if items and isinstance(items[0], str):
            directive, items = items[0], items[1:]
            if directive in ("r", "c"):
                matrix = 0 if directive == "r" else 1
            else:
                axis, ndmin, trans1d = self._parse(directive, axis, ndmin, trans1d)
        pieces = [self._piece(item, ndmin, trans1d) for item in items]
        if not pieces:
            return creation.zeros((0,))
        result = manipulation.concatenate(pieces, axis=axis)
        if matrix is not None and get_aval(result).ndim == 1:
            result = manipulation.expand_dims(result, matrix)
        return result

    def _parse(self, directive: str, axis: int, ndmin: int, trans1d: int) -> tuple[int, int, int]:
        fields = directive.split(",")
        try:
            numbers = [int(f) for f in fields[:3]]
        except ValueError:
            raise ValueError(
                f"{self.name}: could not understand directive {directive!r}{errors.where()}"
            ) from None
        return tuple(numbers + [axis, ndmin, trans1d][len(numbers) :])

    def _piece(self, item: Any, ndmin: int, trans1d: int) -> Any:
        if isinstance(item, str):
            raise ValueError(
                f"{self.name}: a string directive must be the first entry, got {item!r}"
                f"{errors.where()}"
            )
        array = (
            _grid_from_slice(item, self.name) if isinstance(item, slice) else creation.asarray(item)
        )
        rank = get_aval(array).ndim
        if rank >= ndmin:
            return array
        array = manipulation.reshape(array, (1,) * (ndmin - rank) + get_aval(array).shape)
        if trans1d == -1 or rank == 0:
            return array
        # NumPy moves the item's own axes to start at trans1d (counted from the end if < 0).
        added = ndmin - rank
        start = trans1d if trans1d >= 0 else trans1d + added + 1
        order = list(range(ndmin))
        return manipulation.transpose(array, order[:start] + order[added:] + order[start:added])

    def __repr__(self) -> str:
        return f"ember.numpy.{self.name}"


r_ = _AxisConcatenator(axis=0, ndmin=1, trans1d=-1, name="r_")
c_ = _AxisConcatenator(axis=-1, ndmin=2, trans1d=0, name="c_")


# --------------------------------------------------------------------------------------------
# Flat indices and coordinates


def _shape_arg(shape: Any, name: str) -> tuple[int, ...]:
    dims = (shape,) if np.ndim(shape) == 0 and not isinstance(shape, (list, tuple)) else shape
    return tuple(operator.index(core.concrete_or_error(d, f"{name}'s shape")) for d in dims)


def unravel_index(indices: Any, shape: Any) -> tuple[Any, ...]:
    """The coordinates, in an array of ``shape``, of the flat positions ``indices``."""
    dims = _shape_arg(shape, "unravel_index")
    flat = creation.asarray(indices)
    if not dtypes.is_integer(get_aval(flat).dtype):
        raise TypeError(
            f"unravel_index: only integer indices are permitted, got {get_aval(flat).dtype}"
            f"{errors.where()}"
        )
    size = int(np.prod(dims, dtype=np.int64))
    if not isinstance(flat, Tracer):
        values = np.asarray(flat)
        bad = values[(values < 0) | (values >= size)]
        if bad.size:
            raise ValueError(
                f"unravel_index: index {bad.flat[0]} is out of bounds for array with size "
                f"{size}{errors.where()}"
            )
    dtype = get_aval(flat).dtype
    remaining = flat
    coordinates: list[Any] = [None] * len(dims)
    for axis in reversed(range(len(dims))):
        extent = np.asarray(max(dims[axis], 1), dtype)
        coordinates[axis] = enp.remainder(remaining, extent)
        remaining = enp.floor_divide(remaining, extent)
    # Traced out-of-range positions clip to the first or last element, as in JAX.
    above = enp.greater(remaining, 0)
    below = enp.less(remaining, -1) if dtype.kind == "i" else False
    return tuple(
        enp.where(
            above, np.asarray(max(d - 1, 0), dtype), enp.where(below, np.asarray(0, dtype), c)
        )
        for d, c in zip(dims, coordinates)
    )


def ravel_multi_index(multi_index: Sequence[Any], dims: Sequence[int], mode: str = "raise",
                      order: str = "C", *, dtype: Any = None) -> Any:  # fmt: skip
    """The flat positions of the coordinates ``multi_index`` in an array of shape ``dims``.

    ``mode``: ``"raise"`` (coordinates must be concrete and in range), ``"wrap"`` or
    ``"clip"``; ``order``: ``"C"`` (row-major) or ``"F"``."""
    dims = _shape_arg(dims, "ravel_multi_index")
    if len(multi_index) != len(dims):
        raise ValueError(
            f"ravel_multi_index: multi_index must be a sequence of length {len(dims)} "
            f"(one per dimension), got {len(multi_index)}{errors.where()}"
        )
    coords = [creation.asarray(c) for c in multi_index]
    for c in coords:
        if not dtypes.is_integer(get_aval(c).dtype):
            raise errors.EmberTypeError(
                f"ravel_multi_index: only int indices permitted{errors.where()}"
            )
    out_dtype = check_dtype_arg(dtype) or dtypes.default_int()
    if not dtypes.is_integer(out_dtype):
        raise ValueError(
            f"ravel_multi_index: dtype={out_dtype} is not an integer type{errors.where()}"
        )
    if int(np.prod(dims, dtype=np.int64)) - 1 > np.iinfo(out_dtype).max:
        raise ValueError(
            f"ravel_multi_index: dtype={out_dtype} cannot hold the flat indices of shape {dims}; "
            f"pass a wider dtype={errors.where()}"
        )
    coords = [manipulation.astype(c, out_dtype) for c in coords]
    coords = [_apply_mode(c, d, mode) for c, d in zip(coords, dims)]
    if order == "C":
        strides = np.cumprod((1,) + dims[1:][::-1])[::-1]
    elif order == "F":
        strides = np.cumprod((1,) + dims[:-1])
    else:
        raise ValueError(
            f"ravel_multi_index: order must be 'C' or 'F', got {order!r}{errors.where()}"
        )
    total = creation.zeros((), out_dtype)
    for c, stride in zip(coords, strides):
        total = total + c * np.asarray(stride, out_dtype)
    return total


def _apply_mode(coord: Any, extent: int, mode: str) -> Any:
    dtype = get_aval(coord).dtype
    if mode == "raise":
        values = np.asarray(
            concrete_or_error(
                coord,
                "ravel_multi_index's multi_index in mode='raise' (use 'wrap' or 'clip' in jit)",
            )
        )
        if values.size and (values.min() < 0 or values.max() >= extent):
            raise ValueError(
                f"ravel_multi_index: invalid entry in coordinates array{errors.where()}"
            )
        return coord
    if mode == "wrap":
        return enp.remainder(coord, np.asarray(max(extent, 1), dtype))
    if mode == "clip":
        return enp.clip(coord, np.asarray(0, dtype), np.asarray(max(extent - 1, 0), dtype))
    raise ValueError(
        f"ravel_multi_index: mode must be 'raise', 'wrap' or 'clip', got {mode!r}{errors.where()}"
    )


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
