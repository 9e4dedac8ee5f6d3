"""QR factorisation by Householder reflections: a loop over columns with static bounds (one
compiled program), written for one matrix."""

from __future__ import annotations

from typing import Any, NamedTuple

from ember._src.core import get_aval
from ember._src.lax.linalg_operands import (
    conj_if_complex,
    identity_matrix,
    positions,
    real_part,
    squares_safe_scale,
    static_fori,
    where_broadcast,
)
from ember._src.primitives.math_functions import sqrt


class QRResult(NamedTuple):
    Q: Any
    R: Any


def _norm(x: Any) -> Any:
    return sqrt(real_part(x * conj_if_complex(x)).sum())


def householder_qr(a: Any, complete: bool = False) -> tuple[Any, Any]:
    """(q, r) with ``a = q @ r`` for one (m, n) matrix: q (m, m) and r (m, n) when
    ``complete``, else q (m, k) and r (k, n) with k = min(m, n)."""
    m, n = get_aval(a).shape
    k = min(m, n)
    dtype = get_aval(a).dtype
    rows = positions(m)

    def step(j, state):
        q, r = state
        x = where_broadcast(rows >= j, r[:, j], 0.0).astype(dtype)
        norm_x = _norm(x)
        lead = r[j, j]
        sign = where_broadcast(lead == 0, 1.0, lead / abs(lead)).astype(dtype)
        alpha = -sign * norm_x
        v = x - where_broadcast(rows == j, alpha, 0.0).astype(dtype)
        v_norm = _norm(v)
        v = where_broadcast(v_norm == 0, 0.0, v / where_broadcast(v_norm == 0, 1.0, v_norm))
        v = v.astype(dtype)
        r = r - 2.0 * v[:, None] * (conj_if_complex(v) @ r)[None, :]
        q = q - 2.0 * (q @ v)[:, None] * conj_if_complex(v)[None, :]
        return q, r

    scale = squares_safe_scale(a)  # Q is the same for a scaled matrix; R scales back
    q, r = static_fori(0, k, step, (identity_matrix(m, dtype), a / scale.astype(dtype)))
    r = where_broadcast(rows[:, None] > positions(n)[None, :], 0.0, r).astype(dtype)
    r = r * scale.astype(dtype)
    return (q, r) if complete else (q[:, :k], r[:k])
