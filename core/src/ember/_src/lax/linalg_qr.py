"""QR factorisation by Householder reflections: a loop over columns with static bounds (one
compiled program), written for one matrix."""

from __future__ import annotations

from typing import Any, NamedTuple

from ember._src.core import get_aval
from ember._src.lax.linalg_operands import (
    conj,
    identity,
    positions,
    real,
    select,
    static_fori,
)
from ember._src.primitives import elementwise as ew


class QRResult(NamedTuple):
    Q: Any
    R: Any


def _norm(x: Any) -> Any:
    return ew.sqrt(real(x * conj(x)).sum())


def householder_qr(a: Any, complete: bool = False) -> tuple[Any, Any]:
    """(q, r) with ``a = q @ r`` for one (m, n) matrix: q (m, m) and r (m, n) when
    ``complete``, else q (m, k) and r (k, n) with k = min(m, n)."""
    m, n = get_aval(a).shape
    k = min(m, n)
    dtype = get_aval(a).dtype
    rows = positions(m)

    def step(j, state):
        q, r = state
        x = select(rows >= j, r[:, j], 0.0).astype(dtype)
        norm_x = _norm(x)
        lead = r[j, j]
        sign = select(lead == 0, 1.0, lead / abs(lead)).astype(dtype)
        alpha = -sign * norm_x
        v = x - select(rows == j, alpha, 0.0).astype(dtype)
        v_norm = _norm(v)
        v = select(v_norm == 0, 0.0, v / select(v_norm == 0, 1.0, v_norm))
        v = v.astype(dtype)
        r = r - 2.0 * v[:, None] * (conj(v) @ r)[None, :]
        q = q - 2.0 * (q @ v)[:, None] * conj(v)[None, :]
        return q, r

    q, r = static_fori(0, k, step, (identity(m, dtype), a))
    r = select(rows[:, None] > positions(n)[None, :], 0.0, r).astype(dtype)
    return (q, r) if complete else (q[:, :k], r[:k])
