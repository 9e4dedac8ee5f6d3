"""Splitting arrays into pieces: split, array_split, hsplit, vsplit, dsplit.

The pieces' sizes must be static (shapes are static under ``jit``): the number of sections
and the split points are Python integers, or concrete arrays of them.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ember._src import errors
from ember._src.core import get_aval
from ember._src.numpy import creation
from ember._src.numpy.concrete import concrete_or_error
from ember._src.numpy.operands import canonicalize_axis
from ember._src.primitives.slicing import slice_op


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    """``ary`` cut along ``axis`` into equal sections, or at the given indices."""
    return _split("split", ary, indices_or_sections, axis, equal=True)


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    """Like ``split``, but a number of sections need not divide the axis: the first pieces
    are one longer."""
    return _split("array_split", ary, indices_or_sections, axis, equal=False)


def hsplit(ary: Any, indices_or_sections: Any) -> list[Any]:
    """Split along the second axis (the first for 1-D arrays)."""
    ary = creation.asarray(ary)
    ndim = get_aval(ary).ndim
    if ndim == 0:
        raise ValueError(f"hsplit only works on arrays of 1 or more dimensions{errors.where()}")
    return _split("hsplit", ary, indices_or_sections, 1 if ndim > 1 else 0, equal=True)


def vsplit(ary: Any, indices_or_sections: Any) -> list[Any]:
    """Split along the first axis of an array of rank >= 2."""
    return _split_min_rank("vsplit", ary, indices_or_sections, axis=0, rank=2)


def dsplit(ary: Any, indices_or_sections: Any) -> list[Any]:
    """Split along the third axis of an array of rank >= 3."""
    return _split_min_rank("dsplit", ary, indices_or_sections, axis=2, rank=3)


def _split_min_rank(name: str, ary: Any, sections: Any, axis: int, rank: int) -> list[Any]:
    ary = creation.asarray(ary)
    if get_aval(ary).ndim < rank:
        raise ValueError(
            f"{name} only works on arrays of {rank} or more dimensions, got shape "
            f"{get_aval(ary).shape}{errors.where()}"
        )
    return _split(name, ary, sections, axis, equal=True)


def _split(name: str, ary: Any, sections: Any, axis: Any, equal: bool) -> list[Any]:
    ary = creation.asarray(ary)
    shape = get_aval(ary).shape
    axis = canonicalize_axis(axis, len(shape))
    bounds = _piece_bounds(name, sections, shape[axis], equal)
    return [_piece(ary, axis, start, stop) for start, stop in bounds]


def _piece_bounds(name: str, sections: Any, size: int, equal: bool) -> list[tuple[int, int]]:
    """(start, stop) of each piece along the split axis, with Python's slicing rules."""
    points = np.asarray(concrete_or_error(sections, f"{name}'s indices_or_sections"))
    if points.ndim == 0:
        count = operator.index(points[()])
        if count <= 0:
            raise ValueError(
                f"{name}: the number of sections must be larger than 0, got {count}{errors.where()}"
            )
        if equal and size % count:
            raise ValueError(
                f"{name}: array split does not result in an equal division (an axis of "
                f"length {size} into {count} sections){errors.where()}"
            )
        # The first size % count pieces get one extra element.
        lengths = [size // count + (i < size % count) for i in range(count)]
        stops = np.cumsum(lengths).tolist()
        return list(zip([0, *stops[:-1]], stops))
    if points.ndim != 1 or (points.size and points.dtype.kind not in "iu"):
        raise TypeError(
            f"{name}: indices_or_sections must be an integer or a 1-D sequence of integers, "
            f"got {sections!r}{errors.where()}"
        )
    edges = [0, *(int(p) for p in points), size]
    return [slice(start, stop).indices(size)[:2] for start, stop in zip(edges, edges[1:])]


def _piece(ary: Any, axis: int, start: int, stop: int) -> Any:
    shape = get_aval(ary).shape
    starts = [0] * len(shape)
    limits = list(shape)
    starts[axis], limits[axis] = start, max(start, stop)
    return slice_op(ary, starts, limits)
