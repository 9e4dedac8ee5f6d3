"""Householder QR in LAPACK's packed form: ``geqrf`` (no pivoting) and ``geqp3`` (column
pivoting). R is left on and above the diagonal, reflector ``j``'s vector below it in column
``j`` (its 1 at row ``j`` implied), its scale in ``taus[j]``; ``Q = H_0 H_1 ... H_{k-1}``
(``householder_q`` builds it). The reflectors are ``larfg``'s (``linalg_householder.reflector``),
so R's diagonal has LAPACK's signs. Each function is written for one matrix (a loop with static
bounds, one compiled program) and vmapped over stacks by the callers."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src.core import get_aval
from ember._src.lax.linalg_householder import reflector
from ember._src.lax.linalg_operands import (
    conj_if_complex,
    positions,
    real_part,
    squares_safe_scale,
    static_fori,
    where_broadcast,
)
from ember._src.primitives.shape import convert_element_type


def _reflect_column(a: Any, taus: Any, j: Any) -> tuple[Any, Any]:
    """Step ``j`` of ``geqrf``: the reflector zeroing column ``j`` below the diagonal, applied
    (as ``H^H``) to the columns right of it, and stored in the zeros it made."""
    m, n = get_aval(a).shape
    dtype = get_aval(a).dtype
    rows, cols = positions(m), positions(n)
    v, tau, beta = reflector(a[:, j], j, rows > j)
    # H^H = I - conj(tau) v v^H, on the columns right of j only (column j becomes beta e_j)
    right = where_broadcast(cols > j, conj_if_complex(v) @ a, 0.0).astype(dtype)
    updated = a - (conj_if_complex(tau) * v)[:, None] * right[None, :]
    column = where_broadcast(rows > j, v, a[:, j]).astype(dtype)
    column = where_broadcast(rows == j, convert_element_type(beta, dtype), column)
    # one elementwise select, not an update of column j: XLA would copy the whole matrix
    a = where_broadcast((cols == j)[None, :], column[:, None], updated).astype(dtype)
    k = get_aval(taus).shape[0]
    return a, where_broadcast(positions(k) == j, tau, taus).astype(dtype)


def _scaled(a: Any) -> tuple[Any, Any]:
    """``a`` divided by a scale that keeps its squared column norms finite, and the scale:
    the reflectors do not change with it, R scales back."""
    scale = squares_safe_scale(a)
    return a / scale.astype(get_aval(a).dtype), scale


def _unscaled_r(packed: Any, scale: Any) -> Any:
    m, n = get_aval(packed).shape
    upper = positions(m)[:, None] <= positions(n)[None, :]
    dtype = get_aval(packed).dtype
    return where_broadcast(upper, packed * scale.astype(dtype), packed).astype(dtype)


def geqrf_packed(a: Any) -> tuple[Any, Any]:
    """(packed, taus) as LAPACK's ``geqrf`` returns them for one (m, n) matrix; taus has
    min(m, n) entries."""
    m, n = get_aval(a).shape
    k = min(m, n)
    taus = np.zeros((k,), get_aval(a).dtype)
    scaled, scale = _scaled(a)
    packed, taus = static_fori(0, k, lambda j, s: _reflect_column(*s, j), (scaled, taus))
    return _unscaled_r(packed, scale), taus


def _leading_first(jpvt: Any) -> Any:
    """The column order that puts the columns marked by a nonzero ``jpvt`` entry first (LAPACK's
    leading columns), each group in its original order."""
    n = get_aval(jpvt).shape[0]
    cols = positions(n)
    key = where_broadcast(jpvt != 0, 0, n).astype(np.int32) + cols
    # a column's place is the number of columns whose key is smaller (the keys are distinct)
    place = (key[None, :] < key[:, None]).astype(np.int32).sum(axis=1).astype(np.int32)
    return cols.at[place].set(cols)


def geqp3_packed(a: Any, jpvt: Any) -> tuple[Any, Any, Any]:
    """(packed, jpvt, taus) as LAPACK's ``geqp3`` returns them for one (m, n) matrix, with
    zero-based pivots: ``a[:, jpvt] = Q R``. Columns whose ``jpvt`` entry is nonzero are
    leading columns, factorised first in their order; then step ``j`` swaps in the remaining
    column of largest norm below row ``j`` (the first such on ties), so ``|R[j, j]|`` does not
    increase."""
    m, n = get_aval(a).shape
    k = min(m, n)
    dtype = get_aval(a).dtype
    rows, cols = positions(m), positions(n)
    order = _leading_first(jpvt)
    leading = (jpvt != 0).astype(np.int32).sum().astype(np.int32)
    scaled, scale = _scaled(a)

    def step(j, state):
        a, perm, taus = state
        below = where_broadcast((rows >= j)[:, None], a, 0.0).astype(dtype)
        norms = real_part(below * conj_if_complex(below)).sum(axis=0)
        norms = where_broadcast(cols < j, -1.0, norms)
        pivot = where_broadcast(j < leading, j, norms.argmax().astype(np.int32))
        at_j, at_pivot = (cols == j)[None, :], (cols == pivot)[None, :]
        a_j, a_pivot = a[:, j][:, None], a[:, pivot][:, None]
        a = where_broadcast(at_j, a_pivot, where_broadcast(at_pivot, a_j, a)).astype(dtype)
        perm_j, perm_pivot = perm[j], perm[pivot]
        perm = where_broadcast(cols == j, perm_pivot, where_broadcast(cols == pivot, perm_j, perm))
        perm = perm.astype(np.int32)
        a, taus = _reflect_column(a, taus, j)
        return a, perm, taus

    start = (scaled[:, order], order, np.zeros((k,), dtype))
    packed, perm, taus = static_fori(0, k, step, start)
    return _unscaled_r(packed, scale), perm, taus
