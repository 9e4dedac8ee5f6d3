"""LU factorisation with partial pivoting (the generic lowering of the ``lu`` primitive), the
permutation its pivots make, and forward and back substitution for one triangular system.
Loops over columns with static bounds, so they compile into one program; they work on one
matrix and are vmapped over stacks."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src.core import get_aval
from ember._src.lax.linalg_operands import positions, static_fori, where_broadcast
from ember._src.lax.slicing import full
from ember._src.primitives.arithmetic import imag, real
from ember._src.primitives.control_flow.loops import fori_loop


def lu_pivoted(a: Any) -> tuple[Any, Any, Any]:
    """(packed LU, pivots, permutation) of one (m, n) matrix: ``a[perm] = L @ U``; row ``i``
    was swapped with row ``pivots[i]``."""
    m, n = get_aval(a).shape
    k = min(m, n)
    rows, cols = positions(m), positions(n)
    dtype = get_aval(a).dtype

    def step(j, state):
        lu, piv, perm = state
        column = where_broadcast(rows >= j, _pivot_size(lu[:, j]), -1.0)
        p = column.argmax().astype(np.int32)
        row_j, row_p = lu[j], lu[p]
        lu = lu.at[j].set(row_p).at[p].set(row_j)
        perm_j, perm_p = perm[j], perm[p]
        perm = perm.at[j].set(perm_p).at[p].set(perm_j)
        piv = piv.at[j].set(p)
        pivot = lu[j, j]
        safe = where_broadcast(pivot == 0, 1, pivot).astype(dtype)
        below = rows > j
        factors = where_broadcast(below, lu[:, j] / safe, 0).astype(dtype)
        right = where_broadcast(cols > j, lu[j], 0).astype(dtype)
        lu = lu - factors[:, None] * right[None, :]
        lu = where_broadcast(below[:, None] & (cols == j)[None, :], factors[:, None], lu)
        return lu, piv, perm

    start = (a, full((k,), 0, np.int32), rows)
    return static_fori(0, k, step, start)


def _pivot_size(column: Any) -> Any:
    """How large a pivot candidate is, as LAPACK's ``i?amax`` measures it (|re| + |im| for
    complex entries), so that the same rows are chosen as by ``getrf``."""
    if get_aval(column).dtype.kind == "c":
        return abs(real(column)) + abs(imag(column))
    return abs(column)


def substitute(a: Any, b: Any, lower: bool, unit_diagonal: bool) -> Any:
    """x with ``a @ x = b`` for one triangular a (n, n) and b (n,) or (n, k)."""
    n = get_aval(a).shape[0]
    cols = positions(n)
    dtype = get_aval(b).dtype

    def row_update(i, x, solved):
        coeffs = where_broadcast(solved, a[i], 0).astype(dtype)
        value = x[i] - coeffs @ x
        if not unit_diagonal:
            value = value / a[i, i]
        return x.at[i].set(value.astype(dtype))

    def forward(i, x):
        return row_update(i, x, cols < i)

    def backward(j, x):
        i = n - 1 - j
        return row_update(i, x, cols > i)

    return fori_loop(0, n, forward if lower else backward, b)


def pivots_to_permutation(piv: Any, m: int) -> Any:
    """The permutation of ``range(m)`` that swapping row ``j`` with ``piv[j]`` in turn makes."""

    def swap(j, perm):
        p = piv[j]
        perm_j, perm_p = perm[j], perm[p]
        return perm.at[j].set(perm_p).at[p].set(perm_j)

    return fori_loop(0, get_aval(piv).shape[0], swap, positions(m))
