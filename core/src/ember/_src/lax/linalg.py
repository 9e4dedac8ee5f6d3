"""``ember.lax.linalg``: JAX's lower-level linear algebra names over ember's factorisations
(the same loops that back ``ember.numpy.linalg`` and ``ember.scipy.linalg``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as enp, linalg as nla, manipulation
from ember._src.numpy.extras import where
from ember._src.primitives.control_flow.loops import fori_loop
from ember._src.scipy import linalg as sla
from ember._src.transforms.jit import jit
from ember._src.transforms.vmap import vmap


def cholesky(x: Any, *, symmetrize_input: bool = True) -> Any:
    """The lower Cholesky factor (NaN where ``x`` is not positive definite)."""
    return nla.cholesky(x, symmetrize_input=symmetrize_input)


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
    x = nla._float_matrix(x, "eigh")
    if symmetrize_input:
        w, v = nla.eigh(x)
    else:
        w, v = nla.eigh(sla._hermitian_from_triangle(x, lower), symmetrize_input=False)
    return v, w


def lu(x: Any) -> tuple[Any, Any, Any]:
    """(lu, pivots, permutation) with ``x[permutation] = L @ U``."""
    return sla._lu_compiled(nla._float_matrix(x, "lu", square=False))


def qr(
    x: Any, *, pivoting: bool = False, full_matrices: bool = True, use_magma: Any = None
) -> tuple[Any, Any]:
    del use_magma
    if pivoting:
        raise NotImplementedError(f"qr: pivoting=True is not supported{errors.where()}")
    return nla.qr(x, mode="complete" if full_matrices else "reduced")


def svd(
    x: Any,
    *,
    full_matrices: bool = True,
    compute_uv: bool = True,
    subset_by_index: tuple[int, int] | None = None,
    algorithm: Any = None,
) -> Any:
    del algorithm
    return nla.svd(
        x, full_matrices=full_matrices, compute_uv=compute_uv, subset_by_index=subset_by_index
    )


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
    a = nla._float_matrix(a, "triangular_solve")
    b = sla._rhs(b, get_aval(a).dtype)
    a = a.astype(get_aval(b).dtype)
    op = manipulation.swapaxes(a, -1, -2) if transpose_a else a
    op = enp.conjugate(op) if conjugate_a else op
    op_lower = lower != transpose_a
    if left_side:
        return sla._solve_triangular(op, b, 0, op_lower, bool(unit_diagonal))
    # x op(a) = b  <=>  op(a)^T x^T = b^T
    x_t = sla._solve_triangular(
        op, manipulation.swapaxes(b, -1, -2), 1, op_lower, bool(unit_diagonal)
    )
    return manipulation.swapaxes(x_t, -1, -2)


def _thomas(dl: Any, d: Any, du: Any, b: Any) -> Any:
    """Tridiagonal solve by forward elimination and back substitution (no pivoting)."""
    n = get_aval(d).shape[0]
    if n == 0:
        return b

    def eliminate(i, state):
        c, y = state  # c: modified superdiagonal, y: modified right-hand side
        denominator = d[i] - dl[i] * c[i - 1]
        c = c.at[i].set(du[i] / denominator)
        return c, y.at[i].set((b[i] - dl[i] * y[i - 1]) / denominator)

    c0 = creation.zeros_like(d).at[0].set(du[0] / d[0])
    y0 = creation.zeros_like(b).at[0].set(b[0] / d[0])
    c, y = fori_loop(1, n, eliminate, (c0, y0))

    def substitute(j, x):
        i = n - 2 - j
        return x.at[i].set(y[i] - c[i] * x[i + 1])

    return fori_loop(0, n - 1, substitute, y)


def _tridiagonal_impl(dl: Any, d: Any, du: Any, b: Any) -> Any:
    fn = _thomas
    for _ in range(get_aval(d).ndim - 1):
        fn = vmap(fn)
    return fn(dl, d, du, b)


_tridiagonal = jit(_tridiagonal_impl, inline=True)


def tridiagonal_solve(dl: Any, d: Any, du: Any, b: Any, *, perturb_singular: bool = False):
    """x with ``T @ x = b`` for the tridiagonal T of sub-, main and superdiagonals dl, d, du
    (shape (..., n); dl[0] and du[-1] are ignored) and b of shape (..., n, k)."""
    if perturb_singular:
        raise NotImplementedError(
            f"tridiagonal_solve: perturb_singular=True is not supported{errors.where()}"
        )
    d = creation.asarray(d)
    if not dtypes.is_inexact(get_aval(d).dtype):
        d = d.astype(dtypes.default_float())
    dtype = get_aval(d).dtype
    dl, du = (creation.asarray(v).astype(dtype) for v in (dl, du))
    b = creation.asarray(b).astype(dtype)
    shape = get_aval(d).shape
    if get_aval(dl).shape != shape or get_aval(du).shape != shape:
        raise ValueError(
            f"tridiagonal_solve: dl, d and du must have one shape, got {get_aval(dl).shape}, "
            f"{shape} and {get_aval(du).shape}{errors.where()}"
        )
    if get_aval(b).ndim != len(shape) + 1 or get_aval(b).shape[:-1] != shape:
        raise ValueError(
            f"tridiagonal_solve: b must have shape {shape} + (k,), got {get_aval(b).shape}"
            f"{errors.where()}"
        )
    # dl[0] and du[-1] lie outside the matrix: zero them so they cannot leak in
    n = shape[-1]
    dl = where(np.arange(n) == 0, 0, dl).astype(dtype)
    du = where(np.arange(n) == n - 1, 0, du).astype(dtype)
    return _tridiagonal(dl, d, du, b)
