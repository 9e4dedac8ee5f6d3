"""LU factorisation with partial pivoting, and the triangular solves built on it (forward and
back substitution). Loops over columns with static bounds, so they compile into one program;
they work on one matrix and are vmapped over stacks."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes
from ember._src.core import get_aval
from ember._src.lax.linalg_operands import (
    conj_if_complex,
    positions,
    static_fori,
    transpose_last_axes,
    where_broadcast,
)
from ember._src.lax.slicing import full, full_like
from ember._src.primitives.arithmetic import imag, real
from ember._src.primitives.control_flow.loops import fori_loop
from ember._src.transforms.jit import jit
from ember._src.transforms.vmap import vmap


def lu_square(a: Any) -> tuple[Any, Any, Any]:
    """(packed LU, permutation, parity) of one square matrix: ``a[perm] = L @ U``, L's unit
    diagonal implied; parity is the sign of the permutation."""
    n = get_aval(a).shape[0]
    rows = positions(n)

    def step(k, state):
        lu, perm, parity = state
        column = where_broadcast(rows >= k, abs(lu[:, k]), -1.0)
        p = column.argmax().astype(np.int32)
        # swap rows k and p
        row_k, row_p = lu[k], lu[p]
        lu = lu.at[k].set(row_p).at[p].set(row_k)
        pk, pp = perm[k], perm[p]
        perm = perm.at[k].set(pp).at[p].set(pk)
        parity = where_broadcast(p == k, parity, -parity)
        pivot = lu[k, k]
        safe = where_broadcast(pivot == 0, 1.0, pivot).astype(get_aval(lu).dtype)
        below = rows > k
        factors = where_broadcast(below, lu[:, k] / safe, 0.0).astype(get_aval(lu).dtype)
        right = (rows > k).astype(get_aval(lu).dtype)
        update = factors[:, None] * (lu[k] * right)[None, :]
        lu = lu - update
        lu = where_broadcast(below[:, None] & (rows == k)[None, :], factors[:, None], lu)
        return lu, perm, parity

    parity0 = np.asarray(1.0, dtypes.real_dtype(get_aval(a).dtype))
    return static_fori(0, n, step, (a, rows, parity0))


def lu_solve_square(lu: Any, perm: Any, b: Any) -> Any:
    """x with ``a @ x = b`` from ``lu_square(a)``'s packed LU and permutation."""
    n = get_aval(lu).shape[0]
    if n == 0:  # nothing to solve (and no row to permute)
        return b
    rows = positions(n)
    y = b[perm]

    def forward(i, y):  # L y = P b, unit diagonal
        coeffs = where_broadcast(rows < i, lu[i], 0.0).astype(get_aval(lu).dtype)
        return y.at[i].set(y[i] - coeffs @ y)

    y = static_fori(0, n, forward, y)

    def backward(j, x):  # U x = y, from the last row up
        i = n - 1 - j
        coeffs = where_broadcast(rows > i, lu[i], 0.0).astype(get_aval(lu).dtype)
        return x.at[i].set((x[i] - coeffs @ x) / lu[i, i])

    return static_fori(0, n, backward, y)


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


def _lu_pivoted_stack(a: Any) -> tuple[Any, Any, Any]:
    single = lu_pivoted
    for _ in range(get_aval(a).ndim - 2):
        single = vmap(single)
    return single(a)


# Called eagerly, the factorisation runs as one program compiled once per shape.
lu_pivoted_stack = jit(_lu_pivoted_stack, inline=True)


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


def triangular_operator(a: Any, code: int) -> Any:
    """op(a) for LAPACK's trans code: a (0), a^T (1) or a^H (2)."""
    if code == 0:
        return a
    t = transpose_last_axes(a)
    return conj_if_complex(t) if code == 2 else t


def _solve_triangular_impl(a: Any, b: Any, code: int, lower: bool, unit: bool) -> Any:
    op = triangular_operator(a, code)
    # op(a) of a lower-triangular a is upper-triangular when transposed
    op_lower = lower != (code != 0)
    single = lambda a1, b1: substitute(a1, b1, op_lower, unit)
    for _ in range(get_aval(op).ndim - 2):
        single = vmap(single)
    return single(op, b)


# solve_triangular(a, b, trans code, lower, unit_diagonal): x with ``op(a) @ x = b``, a and b
# of one dtype, b's stack matching a's.
solve_triangular = jit(_solve_triangular_impl, static_argnums=(2, 3, 4), inline=True)


def pivots_to_permutation(piv: Any, m: int) -> Any:
    """The permutation of ``range(m)`` that swapping row ``j`` with ``piv[j]`` in turn makes."""

    def swap(j, perm):
        p = piv[j]
        perm_j, perm_p = perm[j], perm[p]
        return perm.at[j].set(perm_p).at[p].set(perm_j)

    return fori_loop(0, get_aval(piv).shape[0], swap, positions(m))


def lu_pivoted_solve(packed: Any, piv: Any, b: Any, code: int) -> Any:
    """x with ``op(a) @ x = b`` from ``lu_pivoted(a)``'s packed LU and pivots (one matrix)."""
    n = get_aval(packed).shape[0]
    perm = pivots_to_permutation(piv, n)
    if code == 0:
        y = substitute(packed, b[perm], lower=True, unit_diagonal=True)
        return substitute(packed, y, lower=False, unit_diagonal=False)
    op = triangular_operator(packed, code)  # op(U) is lower, op(L) is upper with a unit diagonal
    z = substitute(op, b, lower=True, unit_diagonal=False)
    w = substitute(op, z, lower=False, unit_diagonal=True)
    return full_like(w, 0).at[perm].set(w)
