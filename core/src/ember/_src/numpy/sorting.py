"""Sorting and cumulative operations: sort, argsort, lax.top_k, cumsum, cumprod, cummax, cummin.

Cumulative operations are ``associative_scan``s (log-depth, and differentiable through their
parts); sorting uses the ``sort`` primitive, with an iota riding along for ``argsort``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy.advanced_indexing import take_along_axis
from ember._src.numpy.util import as_operand, canonicalize_axis, cast, check_dtype_arg, check_no_out
from ember._src.primitives.arithmetic import add, max as max_, min as min_, mul, sub
from ember._src.primitives.control_flow.associative_scan import associative_scan
from ember._src.primitives.shape import convert_element_type, iota, reshape
from ember._src.primitives.slicing import rev, slice_op
from ember._src.primitives.sort import sort as lax_sort
from ember._src.transforms.jit import jit


def _flatten_or_axis(a: Any, axis: Any) -> tuple[Any, int]:
    a = as_operand(a)
    aval = get_aval(a)
    if axis is None:
        return reshape(a, (aval.size,)), 0
    if aval.ndim == 0:
        raise np.exceptions.AxisError(f"axis {axis} is out of bounds for a 0-d array")
    return a, canonicalize_axis(axis, aval.ndim)


def sort(a: Any, axis: Any = -1, *, kind: Any = None, order: Any = None, stable: bool = True,
         descending: bool = False) -> Any:  # fmt: skip
    """Sorted copy of ``a`` (NaNs last); ``axis=None`` sorts the flattened array."""
    if order is not None:
        raise NotImplementedError("sort(order=...) for structured arrays")
    a, axis = _flatten_or_axis(a, axis)
    out = lax_sort(a, axis, is_stable=stable)
    return rev(out, (axis,)) if descending else out


def argsort(a: Any, axis: Any = -1, *, kind: Any = None, order: Any = None, stable: bool = True,
            descending: bool = False, dtype: Any = None) -> Any:  # fmt: skip
    """Indices that sort ``a`` along ``axis`` (stable by default; NaNs last), as ``dtype``
    (default: the default integer type, int64 under x64, as JAX)."""
    index_dtype = check_dtype_arg(dtype)
    if index_dtype is not None and index_dtype.kind not in "iu":
        raise errors.EmberTypeError(
            f"argsort: dtype must be an integer type, got {dtype!r}{errors.where()}"
        )
    idx = _argsort(a, axis, order, stable, descending)
    return idx if index_dtype is None else cast(idx, index_dtype)


def _argsort(a: Any, axis: Any, order: Any, stable: bool, descending: bool) -> Any:
    if order is not None:
        raise NotImplementedError("argsort(order=...) for structured arrays")
    a, axis = _flatten_or_axis(a, axis)
    shape = get_aval(a).shape
    index_dtype = dtypes.default_int()
    if descending:  # stable descending: sort the reversed array, map indices back
        positions = iota(index_dtype, shape, axis)
        _, idx = lax_sort((rev(a, (axis,)), positions), axis, is_stable=True, num_keys=1)
        flipped = sub(np.asarray(shape[axis] - 1, index_dtype)[()], idx)
        return rev(flipped, (axis,))
    _, idx = lax_sort((a, iota(index_dtype, shape, axis)), axis, is_stable=stable, num_keys=1)
    return idx


def top_k(operand: Any, k: int) -> tuple[Any, Any]:
    """The ``k`` largest entries along the last axis, and their indices (as lax.top_k)."""
    aval = get_aval(operand)
    if aval.dtype.kind == "c":
        raise ValueError(f"top_k is not compatible with complex inputs{errors.where()}")
    if not aval.ndim or not 0 <= k <= aval.shape[-1]:
        raise ValueError(f"top_k: k={k} for an operand of shape {aval.shape}{errors.where()}")
    axis = aval.ndim - 1
    order = argsort(operand, axis, descending=True, dtype=dtypes.int32)  # int32, as lax.top_k
    start, limit = (0,) * aval.ndim, (*aval.shape[:-1], k)
    indices = slice_op(order, start, limit)
    return take_along_axis(operand, indices, -1), indices


def _cumulative(name: str, combine, a: Any, axis: Any, dtype: Any, reverse: bool = False):
    a, axis = _flatten_or_axis(a, axis)
    if dtype is not None:
        a = convert_element_type(a, dtypes.canonicalize(np.dtype(dtype)))
    elif name in ("cumsum", "cumprod") and get_aval(a).dtype == dtypes.bool_:
        a = convert_element_type(a, dtypes.default_int())
    return associative_scan(combine, a, reverse=reverse, axis=axis)


def _cumsum_body(a: Any, axis: Any = None, dtype: Any = None) -> Any:
    return _cumulative("cumsum", add, a, axis, dtype)


def _cumprod_body(a: Any, axis: Any = None, dtype: Any = None) -> Any:
    return _cumulative("cumprod", mul, a, axis, dtype)


def _cummax_body(a: Any, axis: int = 0, reverse: bool = False) -> Any:
    return _cumulative("cummax", max_, a, axis, None, reverse)


def _cummin_body(a: Any, axis: int = 0, reverse: bool = False) -> Any:
    return _cumulative("cummin", min_, a, axis, None, reverse)


def _lax_cumsum_body(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    return _cumulative("cumsum", add, operand, axis, None, reverse)


def _lax_cumprod_body(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    return _cumulative("cumprod", mul, operand, axis, None, reverse)


# Called eagerly, each scan runs as one program compiled once per shape (an associative scan
# is a few dozen operations: dispatched one by one they would cost far more than the work).
# Arguments go by position, which the compiled call's fast path keys on directly.
_cumsum = jit(_cumsum_body, inline=True, static_argnums=(1, 2))
_cumprod = jit(_cumprod_body, inline=True, static_argnums=(1, 2))
_cummax = jit(_cummax_body, inline=True, static_argnums=(1, 2))
_cummin = jit(_cummin_body, inline=True, static_argnums=(1, 2))
_lax_cumsum = jit(_lax_cumsum_body, inline=True, static_argnums=(1, 2))
_lax_cumprod = jit(_lax_cumprod_body, inline=True, static_argnums=(1, 2))


def cumsum(a: Any, axis: Any = None, dtype: Any = None, out: None = None) -> Any:
    check_no_out(out, "jnp.cumsum")
    return _cumsum(a, axis, dtype)


def cumprod(a: Any, axis: Any = None, dtype: Any = None, out: None = None) -> Any:
    check_no_out(out, "jnp.cumprod")
    return _cumprod(a, axis, dtype)


def cummax(a: Any, axis: int = 0, reverse: bool = False) -> Any:
    return _cummax(a, axis, reverse)


def cummin(a: Any, axis: int = 0, reverse: bool = False) -> Any:
    return _cummin(a, axis, reverse)


def lax_cumsum(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    return _lax_cumsum(operand, axis, reverse)


def lax_cumprod(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    return _lax_cumprod(operand, axis, reverse)
