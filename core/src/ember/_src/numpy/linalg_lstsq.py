"""Least squares (``lstsq``, through the SVD with the pseudo-inverse's derivative) and
condition numbers (``cond``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import get_aval
from ember._src.lax.linalg_operands import (
    conj_transpose,
    identity_matrix,
    inexact_dtype,
)
from ember._src.numpy import creation, elementwise as enp, manipulation, reductions
from ember._src.numpy.contractions import matmul
from ember._src.numpy.linalg import (
    _float_matrix,
    inv,
    norm,
    svd,
    svdvals,
)
from ember._src.numpy.linalg_eig import _abs2, _const, _safe_divide
from ember._src.numpy.operands import dtype_of, promote_dtypes, shape_of
from ember._src.transforms.custom_derivatives import custom_jvp
from ember._src.transforms.jit import jit


def _lstsq_ratio(rcond: Any, dtype: np.dtype, m: int, n: int) -> Any:
    """The relative cutoff on singular values: NumPy's default eps * max(m, n); a negative
    rcond means machine precision."""
    eps = float(dtypes.finfo(dtype).eps)
    if rcond is None:
        return _const(eps * max(m, n), dtype)
    rcond = creation.asarray(rcond, dtype=dtype)
    return enp.where(enp.less(rcond, 0), _const(eps, dtype), rcond)


def _kept_singular_values(s: Any, ratio: Any) -> Any:
    return enp.greater_equal(s, ratio * s[0])


def _truncated_pinv(u: Any, s: Any, vh: Any, ratio: Any) -> Any:
    """The pseudo-inverse from a thin SVD, without the singular values below ratio * largest."""
    keep = _kept_singular_values(s, ratio)
    inverse = enp.where(keep, _safe_divide(_const(1, dtype_of(s)), s), _const(0, dtype_of(s)))
    return matmul(conj_transpose(vh) * inverse.astype(dtype_of(u))[None, :], conj_transpose(u))


@custom_jvp
def _lstsq_solution(a: Any, b: Any, ratio: Any) -> tuple[Any, Any]:
    u, s, vh = svd(a, full_matrices=False)
    return matmul(_truncated_pinv(u, s, vh, ratio), b), s


@_lstsq_solution.defjvp
def _lstsq_solution_jvp(primals, tangents):
    """The pseudo-inverse's derivative (exact while the kept rank does not change):
    dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P; singular values move by
    ds_i = Re(u_i^H dA v_i)."""
    (a, b, ratio), (da, db, _) = primals, tangents
    u, s, vh = svd(a, full_matrices=False)
    p = _truncated_pinv(u, s, vh, ratio)
    m, n = shape_of(a)
    dtype = dtype_of(a)
    dah, ph = conj_transpose(da), conj_transpose(p)
    dp = -matmul(p, matmul(da, p))
    dp = dp + matmul(matmul(p, ph), matmul(dah, identity_matrix(m, dtype) - matmul(a, p)))
    dp = dp + matmul(identity_matrix(n, dtype) - matmul(p, a), matmul(dah, matmul(ph, p)))
    ds = enp.real(reductions.sum(enp.conjugate(u) * matmul(da, conj_transpose(vh)), axis=0))
    x = matmul(p, b)
    return (x, s), (matmul(dp, b) + matmul(p, db), ds.astype(dtype_of(s)))


def _lstsq_operands(a: Any, b: Any) -> tuple[Any, Any]:
    a, b = promote_dtypes(creation.asarray(a), creation.asarray(b))
    dtype = inexact_dtype(dtype_of(a))
    a, b = manipulation.astype(a, dtype), manipulation.astype(b, dtype)
    if get_aval(a).ndim != 2:
        raise np.linalg.LinAlgError(
            f"lstsq: a must be a matrix, got shape {shape_of(a)}{errors.where()}"
        )
    if get_aval(b).ndim not in (1, 2):
        raise ValueError(
            f"lstsq: b must be a vector or a matrix, got shape {shape_of(b)}{errors.where()}"
        )
    if shape_of(a)[0] != shape_of(b)[0]:
        raise ValueError(
            f"lstsq: a and b need the same number of rows, got shapes {shape_of(a)} and "
            f"{shape_of(b)}{errors.where()}"
        )
    return a, b


def lstsq(
    a: Any, b: Any, rcond: float | None = None, *, numpy_resid: bool = False
) -> tuple[Any, Any, Any, Any]:
    """(x, residuals, rank, singular values) of the least-squares problem min |a x - b|,
    through the SVD. Residuals are the squared column norms of ``b - a x``, always computed
    unless ``numpy_resid`` asks for NumPy's empty array when rank < n or m <= n."""
    a, b = _lstsq_operands(a, b)
    vector = get_aval(b).ndim == 1
    columns = manipulation.reshape(b, (shape_of(b)[0], 1)) if vector else b
    m, n = shape_of(a)
    real = dtypes.real_dtype(dtype_of(a))
    if m == 0 or n == 0:
        x = creation.zeros((n, shape_of(columns)[1]), dtype_of(a))
        s, rank = creation.zeros((0,), real), creation.asarray(0, dtype=dtypes.default_int())
        resid = reductions.sum(_abs2(columns), axis=0)
    else:
        x, resid, rank, s = _lstsq_compiled(a, columns, _lstsq_ratio(rcond, real, m, n))
    if numpy_resid and _numpy_has_no_residuals(rank, m, n):
        resid = creation.zeros((0,), real)
    return (manipulation.reshape(x, (n,)) if vector else x), resid, rank, s


def _lstsq_matrices(a: Any, b: Any, ratio: Any) -> tuple[Any, Any, Any, Any]:
    x, s = _lstsq_solution(a, b, ratio)
    rank = reductions.sum(_kept_singular_values(s, ratio), dtype=dtypes.default_int())
    return x, reductions.sum(_abs2(b - matmul(a, x)), axis=0), rank, s


_lstsq_compiled = jit(_lstsq_matrices, inline=True)


def _numpy_has_no_residuals(rank: Any, m: int, n: int) -> bool:
    if m <= n:
        return True
    if isinstance(rank, core.Tracer):
        raise errors.ConcretizationTypeError(
            f"lstsq with numpy_resid=True needs the rank as a concrete value when a has more "
            f"rows than columns; under jit pass numpy_resid=False{errors.where()}"
        )
    return int(rank) < n


_COND_ORDERS = (None, 1, -1, 2, -2, np.inf, -np.inf, "fro", "nuc")


def cond(x: Any, p: Any = None) -> Any:
    """The condition number ``norm(x, p) * norm(inv(x), p)``; for p in (None, 2, -2) the ratio
    of extreme singular values (any shape). nan from a singular matrix becomes inf."""
    if p not in _COND_ORDERS:
        raise ValueError(f"cond: p must be one of {_COND_ORDERS}, got {p!r}{errors.where()}")
    x = _float_matrix(x, "cond", square=p not in (None, 2, -2))
    if 0 in shape_of(x)[-2:]:
        raise ValueError(f"cond: the matrices are empty, shape {shape_of(x)}{errors.where()}")
    return _cond_compiled(x, p)


def _cond(x: Any, p: Any) -> Any:
    if p is None or p == 2:
        s = svdvals(x)
        return s[..., 0] / s[..., -1]
    if p == -2:
        s = svdvals(x)
        ratio = s[..., -1] / s[..., 0]
    else:
        ratio = norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1))
    had_nan = reductions.any(enp.isnan(x), axis=(-2, -1))
    became_nan = enp.logical_and(enp.isnan(ratio), enp.logical_not(had_nan))
    return enp.where(became_nan, _const(np.inf, dtype_of(ratio)), ratio)


_cond_compiled = jit(_cond, static_argnums=1, inline=True)
