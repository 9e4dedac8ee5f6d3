"""Symmetric eigendecomposition (cyclic Jacobi) and the singular value decomposition built on
it (one-sided Jacobi): fixed sweeps of plane rotations, one compiled loop, written for one
matrix."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ember._src import dtypes
from ember._src.core import get_aval
from ember._src.execution.devices import device_put
from ember._src.lax.linalg_operands import (
    batched,
    conj_if_complex,
    conj_transpose,
    identity_matrix,
    main_diagonal,
    real_part,
    squares_safe_scale,
    static_fori,
    transpose_last_axes,
    where_broadcast,
)
from ember._src.lax.linalg_qr import householder_qr
from ember._src.lax.slicing import full
from ember._src.lax.sorting import sort_with_indices
from ember._src.primitives.arithmetic import sign
from ember._src.primitives.math_functions import sqrt
from ember._src.primitives.shape import reshape
from ember._src.primitives.slicing import concatenate
from ember._src.primitives.stop_gradient import stop_gradient

_JACOBI_SWEEPS = 12  # quadratic convergence: float32 is converged well before this


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


def _argsort(values: Any) -> Any:
    return sort_with_indices(values, 0, index_dtype=dtypes.default_int())[1]


def _jacobi_rotation(app: Any, aqq: Any, apq: Any, dtype: np.dtype) -> tuple[Any, Any]:
    """(c, w) of the unitary J = [[c, w], [-conj_if_complex(w), c]] that diagonalises the Hermitian
    2x2 [[app, apq], [conj_if_complex(apq), aqq]] as J^H B J (app, aqq real; c real).

    For a complex apq = |apq| e^{i phi}, J = P R P^H with P = diag(1, e^{-i phi}) and R the
    real rotation of the real symmetric P^H B P = [[app, |apq|], [|apq|, aqq]]: w = s e^{i phi}.
    """
    real_dtype = dtypes.real_dtype(dtype)
    one = np.asarray(1.0, real_dtype)
    magnitude = abs(apq) if dtype.kind == "c" else apq
    tiny = abs(magnitude) <= np.asarray(np.finfo(real_dtype).tiny, real_dtype)
    safe = where_broadcast(tiny, one, magnitude)
    theta = (aqq - app) / (2.0 * safe)
    t = sign(theta) / (abs(theta) + sqrt(theta * theta + one))
    t = where_broadcast(theta == 0, one, t)
    c = where_broadcast(tiny, one, one / sqrt(t * t + one))
    s = where_broadcast(tiny, np.asarray(0.0, real_dtype), t * c)
    if dtype.kind != "c":
        return c, s
    phase = where_broadcast(tiny, np.asarray(1.0, dtype), apq / safe.astype(dtype)).astype(dtype)
    return c, s.astype(dtype) * phase


def _rotate_columns(x: Any, p: Any, q: Any, c: Any, w: Any) -> Any:
    """x <- x J for J = [[c, w], [-conj_if_complex(w), c]] acting on columns p and q."""
    xp, xq = x[:, p], x[:, q]
    return x.at[:, p].set(c * xp - conj_if_complex(w) * xq).at[:, q].set(w * xp + c * xq)


def _rotation_schedule(n: int) -> tuple[Any, Any]:
    """The (p, q) planes of every sweep, in order, as two arrays of int32."""
    pairs = np.array([(p, q) for p in range(n) for q in range(p + 1, n)], np.int32)
    return (
        device_put(np.tile(pairs[:, 0], _JACOBI_SWEEPS)),
        device_put(np.tile(pairs[:, 1], _JACOBI_SWEEPS)),
    )


def eigh_single(a: Any) -> tuple[Any, Any]:
    """(eigenvalues ascending, eigenvectors as columns) of one Hermitian matrix (its
    Hermitian part is used)."""
    n = get_aval(a).shape[0]
    dtype = get_aval(a).dtype
    a = (a + conj_transpose(a)) * np.asarray(0.5, dtype)  # use the Hermitian part
    if n <= 1:  # already diagonal (or empty)
        return reshape(real_part(a), (n,)), full((n, n), 1, dtype)
    sp, sq = _rotation_schedule(n)

    def rotate(i, state):
        m, v = state
        p, q = sp[i], sq[i]
        app, aqq, apq = real_part(m[p, p]), real_part(m[q, q]), m[p, q]
        c, w = _jacobi_rotation(app, aqq, apq, dtype)
        # m <- J^H m J with J the rotation in the (p, q) plane
        row_p, row_q = m[p], m[q]
        m = m.at[p].set(c * row_p - w * row_q).at[q].set(conj_if_complex(w) * row_p + c * row_q)
        m = _rotate_columns(m, p, q, c, w)
        return m, _rotate_columns(v, p, q, c, w)

    m, v = static_fori(0, int(sp.shape[0]), rotate, (a, identity_matrix(n, dtype)))
    values = real_part(main_diagonal(m))
    order = _argsort(values)
    return values[order], v[:, order]


def _svd_single(a: Any) -> tuple[Any, Any]:
    """One-sided (Hestenes) Jacobi on a tall matrix: rotate column pairs until orthogonal;
    the column norms are the singular values (small ones accurate to working precision).
    Returns (u with orthogonal columns, v) with ``a @ v = u``, unsorted."""
    m, n = get_aval(a).shape
    dtype = get_aval(a).dtype
    if n <= 1:  # one column (or none) is orthogonal already
        return a, full((n, n), 1, dtype)
    sp, sq = _rotation_schedule(n)

    def rotate(i, state):
        u, v = state
        p, q = sp[i], sq[i]
        up, uq = u[:, p], u[:, q]
        alpha = real_part((conj_if_complex(up) * up).sum())
        beta = real_part((conj_if_complex(uq) * uq).sum())
        gamma = (conj_if_complex(up) * uq).sum()
        c, w = _jacobi_rotation(alpha, beta, gamma, dtype)
        return _rotate_columns(u, p, q, c, w), _rotate_columns(v, p, q, c, w)

    return static_fori(0, int(sp.shape[0]), rotate, (a, identity_matrix(n, dtype)))


def _svd_tall(a: Any, full_matrices: bool, compute_uv: bool = True) -> Any:
    """(U, s, Vh) of one tall (m >= n) matrix, s descending. Columns of U whose singular value
    is zero (and, for ``full_matrices``, the m - n extra ones) complete an orthonormal basis,
    taken from a Householder QR of the others."""
    m, n = get_aval(a).shape
    dtype = get_aval(a).dtype
    real_dtype = dtypes.real_dtype(dtype)
    if n == 0:  # no singular values; a full U is any orthonormal basis: the identity's
        sigma = full((0,), 0, real_dtype)
        if not compute_uv:
            return sigma
        u = identity_matrix(m, dtype) if full_matrices else full((m, 0), 0, dtype)
        return u, sigma, full((0, 0), 0, dtype)
    scale = squares_safe_scale(a)
    u, v = _svd_single(a / scale.astype(dtype))
    sigma = sqrt(real_part(conj_if_complex(u) * u).sum(axis=0))
    order = _argsort(-sigma)
    sigma, u, v = sigma[order], u[:, order], v[:, order]
    if not compute_uv:
        return sigma * scale
    keep = sigma > np.asarray(np.finfo(real_dtype).tiny, real_dtype)
    safe = where_broadcast(keep, sigma, np.asarray(1.0, real_dtype)).astype(dtype)
    u = where_broadcast(keep[None, :], u / safe[None, :], np.asarray(0.0, dtype)).astype(dtype)
    basis, _ = householder_qr(stop_gradient(u), complete=True)
    u = where_broadcast(keep[None, :], u, basis[:, :n]).astype(dtype)
    if full_matrices and m > n:
        u = concatenate([u, basis[:, n:]], 1)
    return u, sigma * scale, conj_transpose(v)


def jacobi_svd(a: Any, full_matrices: bool = True, compute_uv: bool = True) -> Any:
    """Singular values (descending, real) and, with ``compute_uv``, vectors (``a = u * s @
    vh``, u and vh unitary) of a matrix or a stack, in the dtype linear algebra works in."""
    m, n = get_aval(a).shape[-2:]
    if m < n:
        result = jacobi_svd(transpose_last_axes(a), full_matrices, compute_uv)
        if not compute_uv:
            return result
        u, s, vh = result
        return SVDResult(transpose_last_axes(vh), s, transpose_last_axes(u))
    result = batched(lambda x: _svd_tall(x, full_matrices, compute_uv), a)
    return SVDResult(*result) if compute_uv else result
