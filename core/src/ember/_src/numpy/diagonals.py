"""Diagonals and triangles: diag, diagflat, diagonal, trace, fill_diagonal, tri, vander, and
the index helpers diag_indices, tril_indices, triu_indices (and their ``*_from``) and
mask_indices; the triangles ``tril`` and ``triu``.

Offsets and sizes are static; the index helpers return arrays of the default integer type
(int64 under x64, as JAX) computed on the host.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import (
    creation,
    elementwise as enp,
    manipulation,
    reductions,
)
from ember._src.numpy.advanced_indexing import take
from ember._src.numpy.nonzero import nonzero
from ember._src.numpy.operands import (
    canonicalize_axis,
    check_dtype_arg,
)
from ember._src.primitives.shape import iota_along


def _static_int(value: Any, what: str) -> int:
    value = core.concrete_or_error(value, what)
    try:
        return operator.index(value)
    except TypeError:
        raise errors.EmberTypeError(
            f"{what} must be an integer, got {value!r}{errors.where()}"
        ) from None


def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """The ``offset`` diagonal of the planes spanned by ``axis1`` and ``axis2``, as a new
    last axis."""
    a = creation.asarray(a)
    ndim = get_aval(a).ndim
    if ndim < 2:
        raise ValueError(
            f"diagonal requires an array of at least two dimensions, got shape "
            f"{get_aval(a).shape}{errors.where()}"
        )
    first, second = canonicalize_axis(axis1, ndim, "axis1"), canonicalize_axis(axis2, ndim, "axis2")
    if first == second:
        raise ValueError(f"diagonal: axis1 and axis2 cannot be the same ({axis1}){errors.where()}")
    offset = _static_int(offset, "diagonal's offset")
    planes = manipulation.moveaxis(a, (first, second), (-2, -1))
    rows, cols = get_aval(planes).shape[-2:]
    start_row, start_col = (0, offset) if offset >= 0 else (-offset, 0)
    length = max(0, min(rows - start_row, cols - start_col))
    if length == 0:
        return creation.zeros((*get_aval(planes).shape[:-2], 0), get_aval(a).dtype)
    i = np.arange(length, dtype=np.int32)
    return planes[..., i + start_row, i + start_col]


def trace(a: Any, offset: Any = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
          out: None = None) -> Any:  # fmt: skip
    """The sum along a diagonal (see ``diagonal``)."""
    if out is not None:
        raise NotImplementedError("trace: the out argument is not supported")
    if not isinstance(offset, core.Tracer):
        return reductions.sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)
    # A traced offset (allowed, as in JAX): mask the chosen diagonal and sum the planes.
    a = creation.asarray(a)
    ndim = get_aval(a).ndim
    if ndim < 2:
        raise ValueError(
            f"trace: a must be at least 2-d, got shape {get_aval(a).shape}{errors.where()}"
        )
    first, second = canonicalize_axis(axis1, ndim, "axis1"), canonicalize_axis(axis2, ndim, "axis2")
    if first == second:
        raise ValueError(f"trace: axis1 and axis2 cannot be the same ({axis1}){errors.where()}")
    planes = manipulation.moveaxis(a, (first, second), (-2, -1))
    rows, cols = get_aval(planes).shape[-2:]
    distance = np.arange(cols, dtype=np.int32)[None, :] - np.arange(rows, dtype=np.int32)[:, None]
    on_diagonal = enp.equal(distance, manipulation.astype(offset, np.int32))
    masked = enp.where(on_diagonal, planes, np.zeros((), get_aval(a).dtype))
    return reductions.sum(masked, axis=(-2, -1), dtype=dtype)


def diag(v: Any, k: int = 0) -> Any:
    """For a 1-D ``v``, a square matrix with ``v`` on its ``k``-th diagonal; for a 2-D ``v``,
    its ``k``-th diagonal."""
    v = creation.asarray(v)
    k = _static_int(k, "diag's k")
    ndim = get_aval(v).ndim
    if ndim == 2:
        return diagonal(v, k)
    if ndim != 1:
        raise ValueError(
            f"diag: input must be 1-d or 2-d, got shape {get_aval(v).shape}{errors.where()}"
        )
    n = get_aval(v).shape[0] + abs(k)
    rows, cols = np.arange(n)[:, None], np.arange(n)[None, :]
    on_diagonal = cols - rows == k
    # The element of v that belongs at (row, col) on the diagonal: its row (k >= 0) or column.
    source = np.clip(rows if k >= 0 else cols, 0, max(get_aval(v).shape[0] - 1, 0))
    source = np.broadcast_to(source, (n, n)).astype(np.int32)
    if get_aval(v).shape[0] == 0:
        return creation.zeros((n, n), get_aval(v).dtype)
    picked = take(v, source, mode="clip")
    return enp.where(on_diagonal, picked, np.zeros((), get_aval(v).dtype))


def diagflat(v: Any, k: int = 0) -> Any:
    """A square matrix with the flattened ``v`` on its ``k``-th diagonal."""
    return diag(manipulation.ravel(creation.asarray(v)), k)


def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = None) -> Any:
    """An ``N`` x ``M`` array with ones at and below the ``k``-th diagonal, zeros above."""
    n = _static_int(N, "tri's N")
    m = n if M is None else _static_int(M, "tri's M")
    k = _static_int(k, "tri's k")
    if n < 0 or m < 0:
        raise ValueError(f"tri: negative dimensions are not allowed (N={n}, M={m}){errors.where()}")
    k = creation.diagonal_offset(k, n, m)
    dtype = check_dtype_arg(dtype) or dtypes.default_float()
    rows = iota_along(dtypes.int32, (n, m), 0)
    cols = iota_along(dtypes.int32, (n, m), 1)
    return manipulation.astype(enp.less_equal(cols, rows + np.int32(k)), dtype)


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Any:
    """The Vandermonde matrix of the 1-D ``x``: columns are powers of ``x``, decreasing
    unless ``increasing``."""
    x = creation.asarray(x)
    if get_aval(x).ndim != 1:
        raise ValueError(
            f"vander: x must be a one-dimensional array or sequence, got shape "
            f"{get_aval(x).shape}{errors.where()}"
        )
    n = get_aval(x).shape[0] if N is None else _static_int(N, "vander's N")
    if n < 0:
        raise ValueError(f"vander: N must be nonnegative, got {n}{errors.where()}")
    dtype = dtypes.promote([(get_aval(x).dtype, False), (dtypes.default_int(), True)])[0]
    x = manipulation.astype(x, dtype)
    rows = get_aval(x).shape[0]
    if n == 0:
        return creation.zeros((rows, 0), dtype)
    # Running products x**k = x**(k-1) * x, as NumPy computes them (and exact at x = 0 for
    # derivatives, unlike a power with an exponent of zero).
    columns = [creation.ones((rows,), dtype)]
    for _ in range(n - 1):
        columns.append(columns[-1] * x)
    powers = manipulation.stack(columns, axis=1)
    return powers if increasing else manipulation.flip(powers, 1)


def fill_diagonal(a: Any, val: Any, wrap: bool = False, *, inplace: bool = True) -> Any:
    """A copy of ``a`` with its main diagonal (``a[i, i, ..., i]``) set to ``val`` (repeated
    cyclically). ember arrays are immutable: pass ``inplace=False``."""
    if inplace:
        raise NotImplementedError(
            f"fill_diagonal: ember arrays are immutable, pass inplace=False to get an updated "
            f"copy{errors.where()}"
        )
    a = creation.asarray(a)
    shape = get_aval(a).shape
    if len(shape) < 2:
        raise ValueError(
            f"fill_diagonal: array must be at least 2-d, got shape {shape}{errors.where()}"
        )
    if len(shape) > 2 and len(set(shape)) != 1:
        raise ValueError(
            f"fill_diagonal: all dimensions of input must be of equal length, got shape "
            f"{shape}{errors.where()}"
        )
    positions = _diagonal_positions(shape, wrap)
    if not positions.size:
        return a
    values = manipulation.ravel(creation.asarray(val, dtype=get_aval(a).dtype))
    count = get_aval(values).size
    if count == 0:
        return a
    values = take(values, np.arange(positions.size, dtype=np.int32) % count, mode="clip")
    flat = manipulation.ravel(a).at[positions].set(values)
    return manipulation.reshape(flat, shape)


def _diagonal_positions(shape: tuple[int, ...], wrap: bool) -> np.ndarray:
    """Flat positions NumPy's fill_diagonal writes: every (stride)-th element, where
    ``wrap`` lets a tall matrix's diagonal restart below the first square block."""
    if len(shape) == 2:
        step = shape[1] + 1
        end = shape[0] * shape[1] if wrap else min(shape[0], shape[1]) * shape[1]
    else:
        step = 1 + int(np.sum(np.cumprod(shape[:-1])))
        end = int(np.prod(shape))
    return np.arange(0, end, step, dtype=np.int32)


# --------------------------------------------------------------------------------------------
# Index helpers


def diag_indices(n: int, ndim: int = 2) -> tuple[Any, ...]:
    """The indices of the main diagonal of an ``n`` x ... x ``n`` array of rank ``ndim``."""
    n, ndim = _static_int(n, "diag_indices' n"), _static_int(ndim, "diag_indices' ndim")
    if n < 0:
        raise ValueError(f"diag_indices: n must be nonnegative, got {n}{errors.where()}")
    if ndim < 0:
        raise ValueError(f"diag_indices: ndim must be nonnegative, got {ndim}{errors.where()}")
    return (creation.arange(n, dtype=dtypes.default_int()),) * ndim


def diag_indices_from(arr: Any) -> tuple[Any, ...]:
    """``diag_indices`` for the square (hyper-cubic) array ``arr``."""
    shape = get_aval(creation.asarray(arr)).shape
    if len(shape) < 2:
        raise ValueError(
            f"diag_indices_from: input array must be at least 2-d, got {shape}{errors.where()}"
        )
    if len(set(shape)) != 1:
        raise ValueError(
            f"diag_indices_from: all dimensions of input must be of equal length, got {shape}"
            f"{errors.where()}"
        )
    return diag_indices(shape[0], len(shape))


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Any, Any]:
    """Row and column indices of the lower triangle (on and below diagonal ``k``)."""
    return _triangle_indices("tril_indices", n, k, m, lower=True)


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Any, Any]:
    """Row and column indices of the upper triangle (on and above diagonal ``k``)."""
    return _triangle_indices("triu_indices", n, k, m, lower=False)


def tril_indices_from(arr: Any, k: int = 0) -> tuple[Any, Any]:
    rows, cols = _matrix_shape("tril_indices_from", arr)
    return tril_indices(rows, k, cols)


def triu_indices_from(arr: Any, k: int = 0) -> tuple[Any, Any]:
    rows, cols = _matrix_shape("triu_indices_from", arr)
    return triu_indices(rows, k, cols)


def _matrix_shape(name: str, arr: Any) -> tuple[int, int]:
    shape = arr.shape if hasattr(arr, "shape") else np.shape(arr)
    if len(shape) != 2:
        raise ValueError(
            f"{name}: input array must be 2-d, got shape {tuple(shape)}{errors.where()}"
        )
    return shape[0], shape[1]


def _triangle_indices(name: str, n: Any, k: Any, m: Any, lower: bool) -> tuple[Any, Any]:
    n = _static_int(n, f"{name}'s n")
    k = _static_int(k, f"{name}'s k")
    m = n if m is None else _static_int(m, f"{name}'s m")
    if n < 0 or m < 0:
        raise ValueError(
            f"{name}: negative dimensions are not allowed (n={n}, m={m}){errors.where()}"
        )
    rows, cols = np.nonzero(np.tri(n, m, k, bool) if lower else ~np.tri(n, m, k - 1, bool))
    index_dtype = dtypes.default_int()
    return creation.asarray(rows.astype(index_dtype)), creation.asarray(cols.astype(index_dtype))


def mask_indices(n: int, mask_func: Callable[[Any, int], Any], k: int = 0, *,
                 size: int | None = None) -> tuple[Any, Any]:  # fmt: skip
    """Indices of the nonzero entries of ``mask_func(ones((n, n)), k)`` (e.g. ``triu``);
    pass a static ``size=`` to call it under ``jit``."""
    n = _static_int(n, "mask_indices' n")
    mask = mask_func(creation.ones((n, n), np.int32), k)
    if size is None and isinstance(mask, core.Tracer):
        raise errors.ConcretizationTypeError(
            f"mask_indices: the number of indices depends on mask_func's traced result; pass a "
            f"static size=...{errors.where()}"
        )
    return nonzero(mask, size=size)


def _triangle(m: Any, k: int, lower: bool) -> Any:
    m = creation.asarray(m)
    rows, cols = get_aval(m).shape[-2:]
    i = np.arange(rows)[:, None]
    j = np.arange(cols)[None, :]
    keep = (j - i <= k) if lower else (j - i >= k)
    return enp.where(keep, m, np.zeros((), get_aval(m).dtype))


def tril(m: Any, k: int = 0) -> Any:
    return _triangle(m, k, lower=True)


def triu(m: Any, k: int = 0) -> Any:
    return _triangle(m, k, lower=False)
