"""Householder reflectors in LAPACK's packed form: the Hessenberg and tridiagonal reductions
(``gehrd``, ``sytrd``) and the orthogonal factor they leave behind (``orgqr``, ``ormqr``).

A reflector is ``H = I - tau v v^H`` with ``v[p] = 1`` at its pivot row ``p``; the rest of
``v`` (rows below ``p``, or above it for ``sytrd``'s upper form) is stored in the reduced
matrix where the reduction made zeros. Each function is written for one matrix (a loop with
static bounds, so one compiled program) and vmapped over stacks by the callers."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src.core import get_aval
from ember._src.lax.linalg_operands import (
    conj_if_complex,
    hermitian_from_triangle,
    identity_matrix,
    positions,
    real_part,
    static_fori,
    where_broadcast,
)
from ember._src.primitives.arithmetic import imag
from ember._src.primitives.math_functions import sqrt
from ember._src.primitives.shape import convert_element_type


def _cast(x: Any, dtype: Any) -> Any:
    return convert_element_type(x, dtype)


def reflector(column: Any, pivot: Any, tail: Any) -> tuple[Any, Any, Any]:
    """(v, tau, beta) as LAPACK's ``larfg`` makes them: ``H^H`` maps the entries of ``column``
    at ``pivot`` and where ``tail`` holds to ``beta e_pivot``, ``beta`` real. ``v`` is 1 at the
    pivot, the scaled tail entries there and 0 elsewhere. A tail of zeros under a real pivot
    gives ``tau = 0`` (H = I), as LAPACK leaves it."""
    dtype = get_aval(column).dtype
    rows = positions(get_aval(column).shape[0])
    alpha = column[pivot]
    tail_values = where_broadcast(tail, column, 0.0).astype(dtype)
    tail_norm_sq = real_part(tail_values * conj_if_complex(tail_values)).sum()
    alpha_real = real_part(alpha)
    alpha_imag = imag(alpha) if dtype.kind == "c" else np.zeros((), alpha_real.dtype)
    norm = sqrt(alpha_real * alpha_real + alpha_imag * alpha_imag + tail_norm_sq)
    # beta takes the sign opposite to alpha's real part, so alpha - beta never cancels
    beta = where_broadcast(alpha_real >= 0, -norm, norm)
    identity = (tail_norm_sq == 0) & (alpha_imag == 0)
    safe_beta = where_broadcast(identity, 1.0, beta)
    tau = where_broadcast(identity, 0.0, (_cast(safe_beta, dtype) - alpha) / safe_beta)
    scale = where_broadcast(identity, 0.0, 1.0 / (alpha - _cast(safe_beta, dtype)))
    v = where_broadcast(rows == pivot, 1.0, tail_values * scale).astype(dtype)
    beta = where_broadcast(identity, alpha_real, beta)
    return v, tau.astype(dtype), beta


def _reflect_both_sides(a: Any, v: Any, tau: Any, columns: Any = True) -> Any:
    """``H^H a H`` for ``H = I - tau v v^H``, the left product only on ``columns`` (where
    earlier reflectors are stored, the reduced matrix is zero and must stay out of it)."""
    v_h = conj_if_complex(v)
    left = where_broadcast(columns, v_h @ a, 0.0).astype(get_aval(a).dtype)
    a = a - (conj_if_complex(tau) * v)[:, None] * left[None, :]
    return a - (tau * (a @ v))[:, None] * v_h[None, :]


def hessenberg_packed(a: Any) -> tuple[Any, Any]:
    """(a_out, taus) as ``gehrd`` returns them for one (n, n) matrix: the upper Hessenberg
    matrix ``Q^H a Q`` on and above the first subdiagonal, reflector ``j``'s vector below it
    in column ``j``, and ``Q = H_0 ... H_{n-2}``."""
    n = get_aval(a).shape[0]
    dtype = get_aval(a).dtype
    rows = positions(n)

    def step(j, state):
        a, taus = state
        v, tau, beta = reflector(a[:, j], j + 1, rows > j + 1)
        a = _reflect_both_sides(a, v, tau, rows >= j)
        # column j is now beta at j + 1 and zeros below: store v's tail in those zeros
        packed = where_broadcast(rows > j + 1, v, a[:, j]).astype(dtype)
        packed = where_broadcast(rows == j + 1, _cast(beta, dtype), packed).astype(dtype)
        return a.at[:, j].set(packed), taus.at[j].set(tau)

    taus = np.zeros((max(n - 1, 0),), dtype)
    return static_fori(0, n - 1, step, (a, taus))


def tridiagonal_packed(a: Any, lower: bool) -> tuple[Any, Any, Any, Any]:
    """(a_out, d, e, taus) as ``sytrd`` returns them for one Hermitian (n, n) matrix given by
    its ``lower`` (or upper) triangle: d the real diagonal, e the real off-diagonal of the
    tridiagonal ``Q^H a Q``; the reflectors' vectors below the subdiagonal (``lower``: ``Q =
    H_0 ... H_{n-2}``) or above the superdiagonal (upper: ``Q = H_{n-2} ... H_0``, reflector
    ``i`` in column ``i + 1``). The other triangle of ``a`` comes back as it was."""
    n = get_aval(a).shape[0]
    dtype = get_aval(a).dtype
    real_dtype = np.zeros((), dtype).real.dtype
    rows = positions(n)
    work = hermitian_from_triangle(a, lower)

    def step(k, state):
        work, packed, taus, e = state
        # lower: column j = k, pivot j + 1, tail below; upper: column i + 1, pivot i, tail
        # above, with i = n - 2 - k (sytrd's upper form works from the last column back)
        if lower:
            column, pivot, tail, index = k, k + 1, rows > k + 1, k
        else:
            index = n - 2 - k
            column, pivot, tail = index + 1, index, rows < index
        v, tau, beta = reflector(work[:, column], pivot, tail)
        work = _reflect_both_sides(work, v, tau)
        stored = where_broadcast(tail, v, packed[:, column]).astype(dtype)
        stored = where_broadcast(rows == pivot, _cast(beta, dtype), stored).astype(dtype)
        packed = packed.at[:, column].set(stored)
        return work, packed, taus.at[index].set(tau), e.at[index].set(beta)

    taus = np.zeros((max(n - 1, 0),), dtype)
    e = np.zeros((max(n - 1, 0),), real_dtype)
    work, packed, taus, e = static_fori(0, n - 1, step, (work, a, taus, e))
    d = real_part(work.diagonal())
    packed = where_broadcast(np.eye(n, dtype=bool), _cast(d, dtype), packed).astype(dtype)
    return packed, d, e, taus


def _reflector_vector(a: Any, j: Any) -> Any:
    """Reflector ``j``'s vector as ``geqrf`` and ``gehrd`` store it: 1 at row j, column j of
    ``a`` below."""
    rows = positions(get_aval(a).shape[0])
    dtype = get_aval(a).dtype
    return where_broadcast(rows == j, 1.0, where_broadcast(rows > j, a[:, j], 0.0)).astype(dtype)


def householder_q(a: Any, taus: Any, columns: int) -> Any:
    """The first ``columns`` columns of ``Q = H_0 H_1 ... H_{k-1}`` (k = len(taus)) for
    reflectors stored in one (m, n) matrix ``a`` as ``geqrf`` leaves them: ``orgqr``."""
    m = get_aval(a).shape[0]
    k = get_aval(taus).shape[0]
    dtype = get_aval(a).dtype

    def step(i, q):
        j = k - 1 - i  # H_0 (H_1 (... (H_{k-1} I))): the last reflector is applied first
        v = _reflector_vector(a, j)
        return q - (taus[j] * v)[:, None] * (conj_if_complex(v) @ q)[None, :]

    return static_fori(0, k, step, identity_matrix(m, dtype, columns))
