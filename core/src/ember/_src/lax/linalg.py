"""``ember.lax.linalg``: JAX's lower-level linear algebra names over ember's factorisations
(the loops in ``lax.linalg_*``, which ``ember.numpy.linalg`` and ``ember.scipy.linalg`` wrap
too). Called eagerly, each runs as one program compiled once per shape."""

from __future__ import annotations

from typing import Any

from ember._src import errors
from ember._src.core import get_aval
from ember._src.lax.linalg_cholesky import cholesky_lower
from ember._src.lax.linalg_jacobi import eigh_differentiable, jacobi_svd
from ember._src.lax.linalg_lu import lu_pivoted_stack, solve_triangular
from ember._src.lax.linalg_operands import (
    batched,
    conj_if_complex,
    float_matrix,
    hermitian_from_triangle,
    right_hand_side,
    symmetrized,
    transpose_last_axes,
)
from ember._src.lax.linalg_qr import QRResult, householder_qr
from ember._src.lax.linalg_tridiagonal import tridiagonal_solve as tridiagonal_solve
from ember._src.primitives.shape import convert_element_type
from ember._src.transforms.jit import jit

_cholesky = jit(cholesky_lower, inline=True, static_argnums=1)


def cholesky(x: Any, *, symmetrize_input: bool = True) -> Any:
    """The lower Cholesky factor (NaN where ``x`` is not positive definite)."""
    return _cholesky(float_matrix(x, "cholesky"), bool(symmetrize_input))


def _eigh_impl(x: Any, lower: bool, symmetrize_input: bool) -> tuple[Any, Any]:
    x = symmetrized(x) if symmetrize_input else hermitian_from_triangle(x, lower)
    w, v = batched(eigh_differentiable, x)
    return v, w


_eigh = jit(_eigh_impl, inline=True, static_argnums=(1, 2))


def eigh(
    x: Any,
    *,
    lower: bool = True,
    symmetrize_input: bool = True,
    sort_eigenvalues: bool = True,
    subset_by_index: tuple[int, int] | None = None,
    implementation: Any = None,
) -> tuple[Any, Any]:
    """(v, w): eigenvectors then eigenvalues (ascending), JAX's order for ``lax.linalg``."""
    del sort_eigenvalues, implementation  # ember's eigenvalues always come sorted
    if subset_by_index is not None:
        raise NotImplementedError(f"eigh: subset_by_index= is not supported{errors.where()}")
    return _eigh(float_matrix(x, "eigh"), bool(lower), bool(symmetrize_input))


def lu(x: Any) -> tuple[Any, Any, Any]:
    """(lu, pivots, permutation) with ``x[permutation] = L @ U``."""
    return lu_pivoted_stack(float_matrix(x, "lu", square=False))


def _qr_impl(x: Any, full_matrices: bool) -> QRResult:
    return QRResult(*batched(lambda m: householder_qr(m, complete=full_matrices), x))


_qr = jit(_qr_impl, inline=True, static_argnums=1)


def qr(
    x: Any, *, pivoting: bool = False, full_matrices: bool = True, use_magma: Any = None
) -> tuple[Any, Any]:
    del use_magma
    if pivoting:
        raise NotImplementedError(f"qr: pivoting=True is not supported{errors.where()}")
    return _qr(float_matrix(x, "qr", square=False), bool(full_matrices))


_svd = jit(jacobi_svd, inline=True, static_argnums=(1, 2))


def svd(
    x: Any,
    *,
    full_matrices: bool = True,
    compute_uv: bool = True,
    subset_by_index: tuple[int, int] | None = None,
    algorithm: Any = None,
) -> Any:
    del algorithm
    if subset_by_index is not None:
        raise NotImplementedError(f"svd: subset_by_index= is not supported{errors.where()}")
    return _svd(float_matrix(x, "svd", square=False), bool(full_matrices), bool(compute_uv))


def triangular_solve(
    a: Any,
    b: Any,
    *,
    left_side: bool = False,
    lower: bool = False,
    transpose_a: bool = False,
    conjugate_a: bool = False,
    unit_diagonal: bool = False,
) -> Any:
    """x with ``op(a) @ x = b`` (left_side) or ``x @ op(a) = b``; op transposes and/or
    conjugates as asked. b is a matrix (or a stack matching a's)."""
    a = float_matrix(a, "triangular_solve")
    b = right_hand_side(b, get_aval(a).dtype)
    a = convert_element_type(a, get_aval(b).dtype)
    op = transpose_last_axes(a) if transpose_a else a
    op = conj_if_complex(op) if conjugate_a else op
    op_lower = lower != transpose_a
    if left_side:
        return solve_triangular(op, b, 0, op_lower, bool(unit_diagonal))
    # x op(a) = b  <=>  op(a)^T x^T = b^T
    x_t = solve_triangular(op, transpose_last_axes(b), 1, op_lower, bool(unit_diagonal))
    return transpose_last_axes(x_t)
