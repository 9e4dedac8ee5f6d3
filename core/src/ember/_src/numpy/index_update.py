"""``x.at[idx]``: functional updates of the elements ``x[idx]`` selects.

``set``, ``add``, ``subtract``, ``multiply``, ``divide``, ``power``, ``min``, ``max``,
``apply`` and ``get`` work for any index
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
from ember._src.primitives import arithmetic, bits, comparisons, math_functions, selection
from ember._src.primitives.gather_scatter import (
    ScatterDimensionNumbers,
    scatter_add_p,
    scatter_max_p,
    scatter_min_p,
    scatter_mul_p,
    scatter_p,
)
from ember._src.primitives.shape import (
    broadcast_to_shape,
    convert_element_type,
    iota_along,
    reshape,
)


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
    """``x.at[idx]``: functional updates of the selected elements (``x`` is unchanged).

    Every method takes JAX's keywords: ``mode`` for out-of-range indices (None or
    "promise_in_bounds": updates drop them and ``get`` clamps them; "clip": clamp into range;
    "drop"/"fill": updates drop them, ``get`` returns ``fill_value``), ``wrap_negative_indices``
    (False makes negative indices out of range), ``indices_are_sorted`` and
    ``unique_indices`` (promises passed on to XLA; ``unique_indices`` also makes ``set``'s
    derivative cheaper)."""

    __slots__ = ("array", "index")

    def __init__(self, array: Any, index: Any):
        self.array = array
        self.index = index

    def get(self, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None, fill_value: Any = None, out_sharding: Any = None,
            wrap_negative_indices: bool = True) -> Any:  # fmt: skip
        mode = _mode(mode)
        if mode is None and wrap_negative_indices:
            try:
                return getitem(self.array, self.index)  # as x[idx]: traced entries are clamped
            except IndexError:
                # A static index out of range: x[idx] refuses it as NumPy does, but at[].get()
                # is how a JAX program asks for the gather's own behaviour, which clamps it.
                mode = "promise_in_bounds"
        if mode == "promise_in_bounds":
            mode = "clip"  # what XLA's gather does with entries out of range
        aval = get_aval(self.array)
        positions, invalid = _positions(aval, self.index, mode, wrap_negative_indices, "get")
        flat = reshape(self.array, (aval.size,))
        if mode not in ("fill", "drop"):
            return getitem(flat, arithmetic.min(positions, np.int32(max(aval.size - 1, 0))))
        values = getitem(
            flat, selection.select_n(invalid, positions, arithmetic.mul(positions, np.int32(0)))
        )
        fill = _fill_value(aval.dtype, fill_value)
        return selection.select_n(invalid, values, broadcast_to_shape(fill, get_aval(values).shape))

    def set(self, values: Any, **options: Any) -> Any:
        return _scatter(scatter_p, self.array, self.index, values, "set", **options)

    def add(self, values: Any, **options: Any) -> Any:
        return _scatter(scatter_add_p, self.array, self.index, values, "add", **options)

    def subtract(self, values: Any, **options: Any) -> Any:
        return self.add(arithmetic.neg(_like_array(values, self.array)), **options)

    def multiply(self, values: Any, **options: Any) -> Any:
        return _scatter(scatter_mul_p, self.array, self.index, values, "multiply", **options)

    mul = multiply

    def divide(self, values: Any, **options: Any) -> Any:
        aval = get_aval(self.array)
        if not dtypes.is_inexact(aval.dtype):
            raise TypeError(f"at[...].divide needs an inexact array, got {aval.str_short()}")
        reciprocal = arithmetic.div(np.asarray(1, aval.dtype), _like_array(values, self.array))
        return self.multiply(reciprocal, **options)

    def power(self, values: Any, **options: Any) -> Any:
        """``x[idx] **= values`` (a repeated index is raised once, not compounded)."""
        raised = math_functions.pow(self._current(options), _like_array(values, self.array))
        return self.set(raised, **options)

    def min(self, values: Any, **options: Any) -> Any:
        return _scatter(scatter_min_p, self.array, self.index, values, "min", **options)

    def max(self, values: Any, **options: Any) -> Any:
        return _scatter(scatter_max_p, self.array, self.index, values, "max", **options)

    def apply(self, func: Any, **options: Any) -> Any:
        """``func`` applied to the selected elements, as ``set(func(get()))`` (JAX applies it
        once per repeat of a repeated index; ember once)."""
        return self.set(func(self._current(options)), **options)

    def _current(self, options: dict) -> Any:
        keep = ("mode", "wrap_negative_indices")
        return self.get(**{k: v for k, v in options.items() if k in keep and v != "drop"})


_MODES = (None, "promise_in_bounds", "clip", "drop", "fill")


def _mode(mode: Any) -> str | None:
    name = getattr(mode, "name", mode)  # lax.GatherScatterMode members too
    name = name.lower() if isinstance(name, str) else name
    if name == "fill_or_drop":
        name = "fill"
    if name not in _MODES:
        raise ValueError(
            f"at[...]: mode must be one of {', '.join(repr(m) for m in _MODES)}, got {mode!r}"
            f"{errors.where()}"
        )
    return name


def _fill_value(dtype: np.dtype, fill_value: Any) -> Any:
    if fill_value is not None:
        return convert_element_type(as_operand(fill_value), dtype)
    if dtypes.is_inexact(dtype):
        return np.asarray(np.nan, dtype)
    if dtype == np.bool_:
        return np.asarray(True)
    info = np.iinfo(dtype)
    return np.asarray(info.min if dtype.kind == "i" else info.max, dtype)


def _like_array(values: Any, array: Any) -> Any:
    return convert_element_type(as_operand(values), get_aval(array).dtype)


_FLAT_SCATTER = ScatterDimensionNumbers(
    update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
)


def _positions(aval, index: Any, mode: str | None, wrap_negative: bool, what: str):
    """Flat positions of the elements ``x[index]`` selects, and which are out of range.

    An index of one integer (array) per axis is turned into positions arithmetically, so that
    out-of-range entries become an out-of-range position, which the scatter then drops (as
    JAX does), or are clamped first (``mode="clip"``). Other indices go through ``getitem``
    on an iota, which clamps traced out-of-range entries (no mask: ``None``).
    """
    entries = index if isinstance(index, tuple) else (index,)
    if len(entries) == aval.ndim and all(_is_integer_index(e) for e in entries):
        flat = None
        invalid = None
        stride = 1
        for entry, size in reversed(list(zip(entries, aval.shape))):
            i = convert_element_type(as_operand(entry), dtypes.int32)
            if wrap_negative:
                i = selection.select_n(
                    comparisons.lt(i, np.int32(0)), i, arithmetic.add(i, np.int32(size))
                )
            if mode == "clip":
                i = arithmetic.max(arithmetic.min(i, np.int32(max(size - 1, 0))), np.int32(0))
            bad = bits.bitwise_or(comparisons.lt(i, np.int32(0)), comparisons.ge(i, np.int32(size)))
            term = arithmetic.mul(i, np.int32(stride))
            flat = term if flat is None else _add_broadcast(flat, term)
            invalid = bad if invalid is None else _or_broadcast(invalid, bad)
            stride *= size
        invalid = _fit(invalid, flat)
        return selection.select_n(invalid, flat, _fit(np.int32(aval.size), flat)), invalid
    if not wrap_negative or (mode in ("fill", "drop") and what == "get"):
        raise NotImplementedError(
            f"at[...].{what} with mode={mode!r}, wrap_negative_indices={wrap_negative} needs "
            f"one integer index (array) per axis{errors.where()}"
        )
    return getitem(reshape(iota_along(dtypes.int32, (aval.size,), 0), aval.shape), index), None


def _is_integer_index(entry: Any) -> bool:
    if isinstance(entry, (slice, type(None), type(Ellipsis), bool, np.bool_)):
        return False
    try:
        return dtypes.is_integer(get_aval(as_operand(entry)).dtype)
    except (TypeError, errors.EmberTypeError):
        return False


def _add_broadcast(a: Any, b: Any) -> Any:
    shape = np.broadcast_shapes(get_aval(a).shape, get_aval(b).shape)
    return arithmetic.add(broadcast_to_shape(a, shape), broadcast_to_shape(b, shape))


def _or_broadcast(a: Any, b: Any) -> Any:
    shape = np.broadcast_shapes(get_aval(a).shape, get_aval(b).shape)
    return bits.bitwise_or(broadcast_to_shape(a, shape), broadcast_to_shape(b, shape))


def _fit(x: Any, like: Any) -> Any:
    return broadcast_to_shape(x, get_aval(like).shape)


def _scatter(primitive, x: Any, index: Any, values: Any, what: str, *,
             indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None,
             out_sharding: Any = None, wrap_negative_indices: bool = True) -> Any:  # fmt: skip
    aval = get_aval(x)
    positions, _ = _positions(aval, index, _mode(mode), wrap_negative_indices, what)
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
        indices_are_sorted=bool(indices_are_sorted),
        unique_indices=bool(unique_indices),
    )
    return reshape(out, aval.shape)
