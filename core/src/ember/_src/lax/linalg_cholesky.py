"""Cholesky factorisation (the generic lowering of the ``cholesky`` primitive on CPU) and the
rank-one update of a factor (``lax.linalg.cholesky_update``): loops with static bounds (one
compiled program each), written for one matrix and vmapped over stacks."""

from __future__ import annotations

from typing import Any

from ember._src.core import get_aval
from ember._src.lax.linalg_operands import (
    conj_if_complex,
    positions,
    real_part,
    static_fori,
    where_broadcast,
)
from ember._src.lax.slicing import full_like
from ember._src.primitives.math_functions import sqrt
from ember._src.primitives.shape import convert_element_type


def cholesky_single(a: Any) -> Any:
    """The lower-triangular ``L`` with ``L @ L^H = a`` for one (n, n) matrix, column by column
    (Cholesky-Banachiewicz), reading only a's lower triangle and the real part of its
    diagonal. A pivot that is not positive gives NaN from there on (the caller turns that into
    NaN for the whole matrix)."""
    n = get_aval(a).shape[0]
    rows = positions(n)
    dtype = get_aval(a).dtype

    def step(j, lower):
        left = where_broadcast(rows < j, lower[j], 0.0).astype(dtype)
        pivot = real_part(a[j, j]) - real_part(left * conj_if_complex(left)).sum()
        d = convert_element_type(sqrt(pivot), dtype)  # NaN when the pivot is negative
        column = (a[:, j] - lower @ conj_if_complex(left)) / d
        column = where_broadcast(rows > j, column, 0.0).astype(dtype)
        column = where_broadcast(rows == j, d, column).astype(dtype)
        return lower.at[:, j].set(column)

    return static_fori(0, n, step, full_like(a, 0))


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
