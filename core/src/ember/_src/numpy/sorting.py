"""NumPy's sorting and cumulative operations: sort, argsort, cumsum, cumprod (over the
lax-level ``sort_with_indices`` and ``cumulative``)."""

from __future__ import annotations

from typing import Any

from ember._src import dtypes, errors
from ember._src.lax.cumulative import cumulative, operand_and_axis
from ember._src.lax.sorting import sort_with_indices
from ember._src.numpy.operands import cast, check_dtype_arg, check_no_out
from ember._src.primitives.slicing import rev
from ember._src.primitives.sort import sort as lax_sort
from ember._src.transforms.jit import jit


def sort(a: Any, axis: Any = -1, *, kind: Any = None, order: Any = None, stable: bool = True,
         descending: bool = False) -> Any:  # fmt: skip
    """Sorted copy of ``a`` (NaNs last); ``axis=None`` sorts the flattened array."""
    if order is not None:
        raise NotImplementedError("sort(order=...) for structured arrays")
    a, axis = operand_and_axis(a, axis)
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
    a, axis = operand_and_axis(a, axis)
    return sort_with_indices(
        a, axis, descending=descending, stable=stable, index_dtype=dtypes.default_int()
    )[1]


def _cumsum_body(a: Any, axis: Any = None, dtype: Any = None) -> Any:
    return cumulative("cumsum", a, axis, dtype)


def _cumprod_body(a: Any, axis: Any = None, dtype: Any = None) -> Any:
    return cumulative("cumprod", a, axis, dtype)


# Called eagerly, each scan runs as one program compiled once per shape (see lax.cumulative).
_cumsum = jit(_cumsum_body, inline=True, static_argnums=(1, 2))
_cumprod = jit(_cumprod_body, inline=True, static_argnums=(1, 2))


def cumsum(a: Any, axis: Any = None, dtype: Any = None, out: None = None) -> Any:
    check_no_out(out, "jnp.cumsum")
    return _cumsum(a, axis, dtype)


def cumprod(a: Any, axis: Any = None, dtype: Any = None, out: None = None) -> Any:
    check_no_out(out, "jnp.cumprod")
    return _cumprod(a, axis, dtype)
