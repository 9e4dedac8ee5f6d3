"""``x.at[idx]``: functional updates of the elements ``x[idx]`` selects.

``set``, ``add``, ``multiply``, ``divide``, ``min``, ``max`` and ``get`` work for any index
``x[idx]`` accepts: the flat positions of the selected elements are found by indexing an iota
of ``x``'s shape the same way, and one ``scatter`` writes the values there (out-of-range
positions are dropped, XLA's semantics). ``x`` itself is never changed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy.advanced_indexing import as_operand
from ember._src.numpy.indexing import getitem
from ember._src.ops import elementwise as ew
from ember._src.ops.gather_scatter import (
    ScatterDimensionNumbers,
    scatter_add_p,
    scatter_max_p,
    scatter_min_p,
    scatter_mul_p,
    scatter_p,
)
from ember._src.ops.shape import broadcast_to_shape, convert_element_type, iota, reshape


class IndexUpdateHelper:
    """``x.at``: ``x.at[idx]`` names the elements an update applies to."""

    __slots__ = ("array",)

    def __init__(self, array: Any):
        self.array = array

    def __getitem__(self, index: Any) -> IndexUpdateRef:
        return IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


class IndexUpdateRef:
    """``x.at[idx]``: functional updates of the selected elements (``x`` is unchanged)."""

    __slots__ = ("array", "index")

    def __init__(self, array: Any, index: Any):
        self.array = array
        self.index = index

    def get(self) -> Any:
        return getitem(self.array, self.index)

    def set(self, values: Any) -> Any:
        return _scatter(scatter_p, self.array, self.index, values, "set")

    def add(self, values: Any) -> Any:
        return _scatter(scatter_add_p, self.array, self.index, values, "add")

    def multiply(self, values: Any) -> Any:
        return _scatter(scatter_mul_p, self.array, self.index, values, "multiply")

    mul = multiply

    def divide(self, values: Any) -> Any:
        aval = get_aval(self.array)
        if not dtypes.is_inexact(aval.dtype):
            raise TypeError(f"at[...].divide needs an inexact array, got {aval.str_short()}")
        reciprocal = ew.div(np.asarray(1, aval.dtype), convert_element_type(values, aval.dtype))
        return self.multiply(reciprocal)

    def min(self, values: Any) -> Any:
        return _scatter(scatter_min_p, self.array, self.index, values, "min")

    def max(self, values: Any) -> Any:
        return _scatter(scatter_max_p, self.array, self.index, values, "max")


_FLAT_SCATTER = ScatterDimensionNumbers(
    update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
)


def _positions(aval, index: Any) -> Any:
    """Flat positions of the elements ``x[index]`` selects.

    An index of one integer (array) per axis is turned into positions arithmetically, so that
    out-of-range entries become an out-of-range position, which the scatter then drops (as
    JAX does). Other indices go through ``getitem`` on an iota, which clamps traced
    out-of-range entries.
    """
    entries = index if isinstance(index, tuple) else (index,)
    if len(entries) == aval.ndim and all(_is_integer_index(e) for e in entries):
        flat = None
        invalid = None
        stride = 1
        for entry, size in reversed(list(zip(entries, aval.shape))):
            i = convert_element_type(as_operand(entry), dtypes.int32)
            i = ew.select_n(ew.lt(i, np.int32(0)), i, ew.add(i, np.int32(size)))
            bad = ew.bitwise_or(ew.lt(i, np.int32(0)), ew.ge(i, np.int32(size)))
            term = ew.mul(i, np.int32(stride))
            flat = term if flat is None else _add_broadcast(flat, term)
            invalid = bad if invalid is None else _or_broadcast(invalid, bad)
            stride *= size
        return ew.select_n(_fit(invalid, flat), flat, _fit(np.int32(aval.size), flat))
    return getitem(reshape(iota(dtypes.int32, (aval.size,), 0), aval.shape), index)


def _is_integer_index(entry: Any) -> bool:
    if isinstance(entry, (slice, type(None), type(Ellipsis), bool, np.bool_)):
        return False
    try:
        return dtypes.is_integer(get_aval(as_operand(entry)).dtype)
    except (TypeError, errors.EmberTypeError):
        return False


def _add_broadcast(a: Any, b: Any) -> Any:
    shape = np.broadcast_shapes(get_aval(a).shape, get_aval(b).shape)
    return ew.add(broadcast_to_shape(a, shape), broadcast_to_shape(b, shape))


def _or_broadcast(a: Any, b: Any) -> Any:
    shape = np.broadcast_shapes(get_aval(a).shape, get_aval(b).shape)
    return ew.bitwise_or(broadcast_to_shape(a, shape), broadcast_to_shape(b, shape))


def _fit(x: Any, like: Any) -> Any:
    return broadcast_to_shape(x, get_aval(like).shape)


def _scatter(primitive, x: Any, index: Any, values: Any, what: str) -> Any:
    aval = get_aval(x)
    positions = _positions(aval, index)
    pos_shape = get_aval(positions).shape
    values = convert_element_type(as_operand(values), aval.dtype)
    try:
        values = broadcast_to_shape(values, pos_shape)
    except (ValueError, TypeError):
        raise ValueError(
            f"at[...].{what}: values of shape {get_aval(values).shape} do not broadcast to the "
            f"indexed shape {pos_shape}{errors.where()}"
        ) from None
    count = int(np.prod(pos_shape, dtype=np.int64))
    flat = reshape(x, (aval.size,))
    out = primitive.bind(
        flat,
        reshape(positions, (count, 1)),
        reshape(values, (count,)),
        dimension_numbers=_FLAT_SCATTER,
        indices_are_sorted=False,
        unique_indices=False,
    )
    return reshape(out, aval.shape)
