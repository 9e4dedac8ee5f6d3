"""Solves and determinants from the factorisation primitives, for the public wrappers
(``ember.numpy.linalg``, ``ember.scipy.linalg``): every one binds ``lu``, ``cholesky`` and
``triangular_solve``, so a platform's override of those speeds all of them up.

Operands are stacks whose batch axes already agree (the wrappers broadcast them); right-hand
sides are matrices of columns, (..., n, k)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src.core import get_aval
from ember._src.lax.linalg_factor_primitives import lu_p, triangular_solve_p
from ember._src.lax.linalg_operands import batched, main_diagonal, positions
from ember._src.lax.slicing import full


def triangular(
    a: Any,
    b: Any,
    *,
    lower: bool,
    left_side: bool = True,
    transpose_a: bool = False,
    conjugate_a: bool = False,
    unit_diagonal: bool = False,
) -> Any:
    """``triangular_solve`` with keyword defaults for the usual left-side solve."""
    return triangular_solve_p.bind(
        a,
        b,
        left_side=left_side,
        lower=lower,
        transpose_a=transpose_a,
        conjugate_a=conjugate_a,
        unit_diagonal=unit_diagonal,
    )


def permute_rows(b: Any, permutation: Any) -> Any:
    """``b[..., permutation, :]`` for each matrix of the stack."""
    return batched(lambda m, p: m[p], b, permutation, core_ndims=(2, 1))


def unpermute_rows(b: Any, permutation: Any) -> Any:
    """x with ``x[..., permutation, :] = b``: the inverse of ``permute_rows``."""

    def single(m: Any, p: Any) -> Any:
        return full(get_aval(m).shape, 0, get_aval(m).dtype).at[p].set(m)

    return batched(single, b, permutation, core_ndims=(2, 1))


def lu_solve(lu: Any, permutation: Any, b: Any, trans: int = 0) -> Any:
    """x with ``op(a) x = b`` from ``lu``'s packed factors and permutation of square ``a``
    (``a[permutation] = L U``); trans 0, 1, 2: op is the identity, the transpose, the
    conjugate transpose."""
    if trans == 0:
        y = triangular(lu, permute_rows(b, permutation), lower=True, unit_diagonal=True)
        return triangular(lu, y, lower=False)
    # a = P^T L U, so op(a) = op(U) op(L) P: op(U) is lower, op(L) upper with a unit diagonal
    conjugate = trans == 2
    y = triangular(lu, b, lower=False, transpose_a=True, conjugate_a=conjugate)
    w = triangular(lu, y, lower=True, transpose_a=True, conjugate_a=conjugate, unit_diagonal=True)
    return unpermute_rows(w, permutation)


def solve(a: Any, b: Any) -> Any:
    """x with ``a x = b`` for square ``a`` by LU with partial pivoting."""
    lu, _, permutation = lu_p.bind(a)
    return lu_solve(lu, permutation, b)


def pivot_parity(pivots: Any) -> Any:
    """The sign of the permutation the pivots make: -1 for each row actually swapped."""
    k = get_aval(pivots).shape[-1]
    swaps = (pivots != positions(k)).astype(np.int32).sum(axis=-1)
    return 1 - 2 * (swaps % 2)


def lu_det_parts(a: Any) -> tuple[Any, Any]:
    """(the diagonal of U, the parity of the row permutation) of square ``a``: its
    determinant is their product."""
    lu, pivots, _ = lu_p.bind(a)
    return main_diagonal(lu), pivot_parity(pivots)


def cholesky_solve(factor: Any, b: Any, lower: bool) -> Any:
    """x with ``a x = b`` from a's Cholesky factor: ``a = L L^H`` (lower) or ``U^H U``."""
    if lower:  # L y = b, then L^H x = y
        y = triangular(factor, b, lower=True)
        return triangular(factor, y, lower=True, transpose_a=True, conjugate_a=True)
    y = triangular(factor, b, lower=False, transpose_a=True, conjugate_a=True)
    return triangular(factor, y, lower=False)
