"""The rank-one update of a Cholesky factor (``lax.linalg.cholesky_update``): one Givens
rotation per row, a loop with static bounds written for one matrix and vmapped over stacks.
The factorisation itself is the ``cholesky`` primitive (``linalg_factor_primitives``)."""

from __future__ import annotations

from typing import Any

from ember._src.core import get_aval
from ember._src.lax.linalg_operands import static_fori, where_broadcast
from ember._src.primitives.math_functions import sqrt


def _givens(x: Any, y: Any) -> tuple[Any, Any]:
    """(c, s) with ``c x - s y = hypot(x, y)`` and ``c y + s x = 0`` (c = 1, s = 0 when y is
    0), scaled by the larger magnitude so squaring cannot overflow."""
    scale = where_broadcast(abs(x) > abs(y), abs(x), abs(y))
    scale = where_broadcast(y == 0, 1.0, scale).astype(get_aval(x).dtype)
    x, y = x / scale, y / scale
    inverse_norm = 1 / sqrt(x * x + y * y)
    c = where_broadcast(y == 0, 1.0, x * inverse_norm).astype(get_aval(x).dtype)
    s = where_broadcast(y == 0, 0.0, -y * inverse_norm).astype(get_aval(x).dtype)
    return c, s


def cholesky_rank_one_update(r: Any, w: Any) -> Any:
    """The upper-triangular ``R'`` with ``R'^T R' = R^T R + w w^T`` for one real (n, n) upper
    Cholesky factor ``R`` and (n,) vector ``w``: one Givens rotation per row folds ``w`` in."""

    def step(k, state):
        r, w = state
        c, s = _givens(r[k, k], w[k])
        row = r[k]
        return r.at[k].set(c * row - s * w), c * w + s * row

    return static_fori(0, get_aval(r).shape[0], step, (r, w))[0]
