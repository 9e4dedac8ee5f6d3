"""Operators and methods of ``ember.Array`` and of tracers, defined by ember.numpy.

Both classes get the same set, so code behaves the same eagerly and under a transformation.
A tracer of a Ref (in a Pallas kernel) is indexed differently: ``x_ref[idx]`` reads it and
``x_ref[idx] = v`` writes it (``primitives/state.py``).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import Tracer, get_aval
from ember._src.lax import slicing
from ember._src.numpy import (
    advanced_indexing,
    array_api,
    contractions,
    creation,
    diagonals,
    elementwise,
    float_functions,
    indexing,
    manipulation,
    nonzero,
    partitioning,
    reductions,
    repetition,
    searching,
    selection,
    sorting,
    statistics,
)
from ember._src.numpy.index_update import IndexUpdateHelper
from ember._src.primitives.bits import bitcast_convert_type
from ember._src.primitives.state import ref_get, ref_set
from ember._src.runtime.array import Array
from ember._src.state_types import is_ref
from ember._src.transforms.jit import jit


def _swap(fn):
    def swapped(self: Any, other: Any) -> Any:
        return fn(other, self)

    return swapped


def _defer(fn):
    """Binary operators return NotImplemented for operand types ember doesn't know."""

    def operator_method(self: Any, other: Any) -> Any:
        if not _is_operand(other):
            return NotImplemented
        return fn(self, other)

    return operator_method


_OPERAND_TYPES = (Array, Tracer, int, float, complex, bool, np.ndarray, np.generic, list, tuple)


def _is_operand(x: Any) -> bool:
    return isinstance(x, _OPERAND_TYPES)


_BINARY = {
    "add": elementwise.add,
    "sub": elementwise.subtract,
    "mul": elementwise.multiply,
    "truediv": elementwise.true_divide,
    "floordiv": elementwise.floor_divide,
    "mod": elementwise.remainder,
    "pow": elementwise.power,
    "matmul": contractions.matmul,
    "and": elementwise.bitwise_and,
    "or": elementwise.bitwise_or,
    "xor": elementwise.bitwise_xor,
    "lshift": array_api.bitwise_left_shift,
    "rshift": array_api.bitwise_right_shift,
    "divmod": float_functions.divmod,
}

_COMPARISONS = {
    "eq": elementwise.equal,
    "ne": elementwise.not_equal,
    "lt": elementwise.less,
    "le": elementwise.less_equal,
    "gt": elementwise.greater,
    "ge": elementwise.greater_equal,
}


def _reshape_method(self: Any, *shape: Any, order: str = "C") -> Any:
    target = shape[0] if len(shape) == 1 else shape
    return manipulation.reshape(self, target, order)


def _transpose_method(self: Any, *axes: Any) -> Any:
    if not axes or (len(axes) == 1 and axes[0] is None):
        return manipulation.transpose(self)
    return manipulation.transpose(self, axes[0] if len(axes) == 1 else axes)


def _setitem(self: Any, index: Any, value: Any) -> None:
    raise TypeError(
        f"ember arrays are immutable: {type(self).__name__} does not support item assignment; "
        f"write x = x.at[index].set(value) instead"
    )


def _tracer_getitem(self: Tracer, index: Any) -> Any:
    if is_ref(self.aval):
        return ref_get(self, index)
    return indexing.getitem(self, index)


def _tracer_setitem(self: Tracer, index: Any, value: Any) -> None:
    if is_ref(self.aval):
        ref_set(self, index, value)
        return
    _setitem(self, index, value)


def _to_device(self: Any, device: Any, /, *, stream: Any = None) -> Any:
    """This array on ``device`` (the array API's method); a traced value stays where it is."""
    if stream is not None:
        raise ValueError("to_device: ember has no streams; pass stream=None")
    return creation.asarray(self, device=device)


def _compress_method(self: Any, condition: Any, axis: Any = None, *, out: None = None,
                     size: int | None = None, fill_value: Any = 0) -> Any:  # fmt: skip
    return selection.compress(condition, self, axis, out=out, size=size, fill_value=fill_value)


def _choose_method(self: Any, choices: Any, out: None = None, mode: str = "raise") -> Any:
    return selection.choose(self, choices, out=out, mode=mode)


def _round_operator(self: Any, ndigits: int | None = None) -> Any:
    """``round(x)``: rounded to an integer array (as JAX), or to ``ndigits`` decimals."""
    out = elementwise.round(self, ndigits or 0)
    return out if ndigits is not None else manipulation.astype(out, dtypes.default_int())


def _contains(self: Any, value: Any) -> Any:
    return reductions.any(elementwise.equal(self, value))


def _view(self: Any, dtype: Any = None, type: Any = None) -> Any:
    """The same bits read as ``dtype`` (NumPy's ``view``); a different item size changes the
    length of the last axis, as in NumPy."""
    if type is not None:
        raise NotImplementedError(
            f"view(type=...) is not supported by ember arrays{errors.where()}"
        )
    if dtype is None:
        return self
    target, aval = np.dtype(dtype), get_aval(self)
    if aval.dtype == np.bool_:
        return _view(manipulation.astype(self, np.uint8), target)
    if target == np.bool_:
        return manipulation.astype(_view(self, np.uint8), np.bool_)
    source = aval.dtype
    if target.itemsize == source.itemsize:
        return bitcast_convert_type(self, target)
    if aval.ndim == 0:
        raise ValueError(
            f"view: a 0-d array of {source} cannot be viewed as {target} (item sizes differ)"
            f"{errors.where()}"
        )
    *lead, last = aval.shape
    if target.itemsize < source.itemsize:  # each item becomes several: the last axis grows
        parts = _split_items(bitcast_convert_type(self, _unsigned(source)), target.itemsize)
        pieces = bitcast_convert_type(parts, target)
        return manipulation.reshape(pieces, (*lead, last * (source.itemsize // target.itemsize)))
    ratio = target.itemsize // source.itemsize
    if last % ratio:
        raise ValueError(
            f"view: the last axis ({last}) of {source} items does not divide into {target} "
            f"items of {ratio} each{errors.where()}"
        )
    grouped = manipulation.reshape(self, (*lead, last // ratio, ratio))
    joined = _join_items(bitcast_convert_type(grouped, _unsigned(source)), target.itemsize)
    return bitcast_convert_type(joined, target)


def _unsigned(dtype: np.dtype | int) -> np.dtype:
    return np.dtype(f"u{dtype if isinstance(dtype, int) else dtype.itemsize}")


def _split_items(words: Any, size: int) -> Any:
    """Unsigned ``words`` cut into little-endian pieces of ``size`` bytes (a new last axis),
    the order in which they lie in memory on the machines ember runs on."""
    width = get_aval(words).dtype.itemsize
    mask = np.asarray(2 ** (8 * size) - 1, words.dtype)
    pieces = [
        elementwise.bitwise_and(
            array_api.bitwise_right_shift(words, np.asarray(8 * size * k, words.dtype)), mask
        ).astype(_unsigned(size))
        for k in range(width // size)
    ]
    return manipulation.stack(pieces, axis=-1)


def _join_items(pieces: Any, size: int) -> Any:
    """The inverse of ``_split_items``: the last axis of little-endian pieces joined into
    unsigned words of ``size`` bytes."""
    count = get_aval(pieces).shape[-1]
    wide = _unsigned(size)
    piece_bits = 8 * get_aval(pieces).dtype.itemsize
    word = None
    for k in range(count):
        part = array_api.bitwise_left_shift(
            pieces[..., k].astype(wide), np.asarray(piece_bits * k, wide)
        )
        word = part if word is None else elementwise.bitwise_or(word, part)
    return word


_METHODS = {
    "reshape": _reshape_method,
    "transpose": _transpose_method,
    "T": property(lambda self: manipulation.transpose(self)),
    "mT": property(lambda self: manipulation.swapaxes(self, -1, -2)),
    "astype": lambda self, dtype, copy=True, device=None: manipulation.astype(
        self, dtype, device=device
    ),
    "ravel": manipulation.ravel,
    "flatten": manipulation.ravel,
    "squeeze": manipulation.squeeze,
    "swapaxes": manipulation.swapaxes,
    "sum": reductions.sum,
    "prod": reductions.prod,
    "mean": reductions.mean,
    "var": reductions.var,
    "std": reductions.std,
    "max": reductions.max,
    "min": reductions.min,
    "all": reductions.all,
    "any": reductions.any,
    "argmax": reductions.argmax,
    "argmin": reductions.argmin,
    "dot": contractions.dot,
    "clip": elementwise.clip,
    "round": elementwise.round,
    "__getitem__": indexing.getitem,
    "__neg__": elementwise.negative,
    "__pos__": elementwise.positive,
    "__abs__": elementwise.absolute,
    "__invert__": elementwise.bitwise_not,
    "__setitem__": _setitem,
    "to_device": _to_device,
    "diagonal": diagonals.diagonal,
    "trace": diagonals.trace,
    "argpartition": partitioning.argpartition,
    "compress": _compress_method,
    "choose": _choose_method,
    "copy": lambda self: creation.array(self, copy=True),
    "real": property(elementwise.real),
    "imag": property(elementwise.imag),
    "conj": elementwise.conjugate,
    "conjugate": elementwise.conjugate,
    "sort": sorting.sort,
    "argsort": sorting.argsort,
    "cumsum": sorting.cumsum,
    "cumprod": sorting.cumprod,
    "take": advanced_indexing.take,
    "repeat": repetition.repeat,
    "nonzero": nonzero.nonzero,
    "searchsorted": searching.searchsorted,
    "ptp": statistics.ptp,
    "view": _view,
    "__round__": _round_operator,
    "__contains__": _contains,
}


# Iterating a concrete array runs one compiled program per block of rows (shapes are cached),
# not one compiled slice per index, which made ``for row in x`` compile len(x) programs.
_ITER_BLOCK = 100
_unstack_rows = jit(slicing.unstack)
_row_block = jit(slicing.dynamic_slice_in_dim, static_argnums=2)


def _iter_rows(x: Array) -> Any:
    n = x.shape[0]
    for start in range(0, n, _ITER_BLOCK):
        block = x if n <= _ITER_BLOCK else _row_block(x, start, min(_ITER_BLOCK, n - start))
        yield from _unstack_rows(block)


def _array_iter(self: Array) -> Any:
    if not self.shape:
        raise TypeError("iteration over a 0-d array")
    return _iter_rows(self)


def _array_namespace(self: Any, /, *, api_version: str | None = None) -> Any:
    """The array-API namespace of ember arrays: ``ember.numpy``."""
    if api_version not in (None, "2024.12", "2023.12", "2022.12"):
        raise ValueError(f"unsupported array API version {api_version!r}")
    return sys.modules["ember.numpy"]


def install(cls: type) -> None:
    """Give ``cls`` (Array or Tracer) its operators and methods (called by ``assembly``)."""
    for name, fn in _BINARY.items():
        setattr(cls, f"__{name}__", _defer(fn))
        setattr(cls, f"__r{name}__", _defer(_swap(fn)))
    for name, fn in _COMPARISONS.items():
        setattr(cls, f"__{name}__", _defer(fn))
    for name, fn in _METHODS.items():
        setattr(cls, name, fn)
    cls.__array_namespace__ = _array_namespace
    cls.at = property(IndexUpdateHelper, doc="Functional updates: x.at[idx].set(v), .add(v), ...")
    # Defining __eq__ would otherwise make instances unhashable implicitly; keep that explicit.
    cls.__hash__ = Tracer.__hash__ if cls is Tracer else None
    if cls is Tracer:  # a Ref's tracer is read and written by indexing
        cls.__getitem__ = _tracer_getitem
        cls.__setitem__ = _tracer_setitem
    if cls is Array:  # concrete rows are read in blocks (see _iter_rows)
        cls.__iter__ = _array_iter
