"""``ember.lax.linalg``: JAX's lower-level linear algebra names. The factorisations bind the
primitives of ``lax.linalg_factor_primitives`` (cholesky, triangular_solve, lu, qr,
householder_product, tridiagonal_solve; qr binds geqrf or geqp3, which JAX does not export
either), which platforms may override; the others run ember's loops (``lax.linalg_*``).
Called eagerly, each runs as one program compiled once per shape."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.lax.linalg_algorithms import (
    EighImplementation,
    EigImplementation,
    SvdAlgorithm,
)
from ember._src.lax.linalg_cholesky import cholesky_rank_one_update
from ember._src.lax.linalg_factor_primitives import (
    cholesky_p,
    lu_p,
    lu_pivots_to_permutation_p,
    triangular_solve_p,
    tridiagonal_solve_p,
)
from ember._src.lax.linalg_operands import (
    batched,
    conj_transpose,
    float_matrix,
    right_hand_side,
    symmetrized,
    transpose_last_axes,
    where_broadcast,
)
from ember._src.lax.linalg_qdwh import qdwh_polar
from ember._src.lax.linalg_qr import QRResult
from ember._src.lax.linalg_qr_primitives import householder_product_p, qr_p
from ember._src.lax.linalg_spectral_primitives import (
    eig_p,
    eigh_p,
    hessenberg_p,
    schur_p,
    svd_p,
    tridiagonal_p,
)
from ember._src.lax.slicing import full
from ember._src.primitives.shape import convert_element_type
from ember._src.primitives.slicing import concatenate
from ember._src.transforms.jit import jit


def cholesky(x: Any, *, symmetrize_input: bool = True) -> Any:
    """The lower Cholesky factor (NaN for each matrix that is not positive definite);
    ``symmetrize_input`` factorises ``(x + x^H) / 2``, else only the lower triangle is read."""
    x = float_matrix(x, "cholesky")
    return cholesky_p.bind(symmetrized(x) if symmetrize_input else x)


def _eigh_impl(
    x: Any,
    lower: bool,
    symmetrize_input: bool,
    sort_eigenvalues: bool,
    subset_by_index: tuple[int, int] | None,
    implementation: Any,
) -> tuple[Any, Any]:
    v, w = eigh_p.bind(
        symmetrized(x) if symmetrize_input else x,
        lower=lower,
        sort_eigenvalues=sort_eigenvalues,
        subset_by_index=subset_by_index,
        algorithm=implementation,
    )
    return v, w


_eigh = jit(_eigh_impl, inline=True, static_argnums=(1, 2, 3, 4, 5))


def _index_range(subset_by_index: Any) -> tuple[int, int] | None:
    if subset_by_index is None:
        return None
    lo, hi = subset_by_index
    return int(lo), int(hi)


def eigh(
    x: Any,
    *,
    lower: bool = True,
    symmetrize_input: bool = True,
    sort_eigenvalues: bool = True,
    subset_by_index: tuple[int, int] | None = None,
    implementation: EighImplementation | None = None,
) -> tuple[Any, Any]:
    """(v, w): eigenvectors then eigenvalues (ascending), JAX's order for ``lax.linalg``.
    With ``symmetrize_input`` the Hermitian part ``(x + x^H) / 2`` is factorised, else only
    the ``lower`` (or upper) triangle is read. ``subset_by_index=(lo, hi)`` keeps the
    eigenvalues lo..hi-1 (ascending) and their vectors."""
    return _eigh(
        float_matrix(x, "eigh"),
        bool(lower),
        bool(symmetrize_input),
        bool(sort_eigenvalues),
        _index_range(subset_by_index),
        implementation,
    )


def lu(x: Any) -> tuple[Any, Any, Any]:
    """(lu, pivots, permutation) with ``x[permutation] = L @ U``: LAPACK's packed factors
    and zero-based int32 pivots."""
    return tuple(lu_p.bind(float_matrix(x, "lu", square=False)))


def qr(
    x: Any, *, pivoting: bool = False, full_matrices: bool = True, use_magma: Any = None
) -> tuple[Any, ...]:
    """(q, r), and the column permutation p (``x[..., :, p] = q r``) with ``pivoting``; q
    has m columns with ``full_matrices``, else min(m, n)."""
    x = float_matrix(x, "qr", square=False)
    outs = qr_p.bind(
        x, pivoting=bool(pivoting), full_matrices=bool(full_matrices), use_magma=use_magma
    )
    return tuple(outs) if pivoting else QRResult(*outs)


def svd(
    x: Any,
    *,
    full_matrices: bool = True,
    compute_uv: bool = True,
    subset_by_index: tuple[int, int] | None = None,
    algorithm: SvdAlgorithm | None = None,
) -> Any:
    """(u, s, vh) with ``x = u * s @ vh`` (s real, descending), or only s when not
    ``compute_uv``. ``subset_by_index=(lo, hi)`` keeps singular values lo..hi-1 and their
    vectors (with ``full_matrices=False``)."""
    result = svd_p.bind(
        float_matrix(x, "svd", square=False),
        full_matrices=bool(full_matrices),
        compute_uv=bool(compute_uv),
        subset_by_index=_index_range(subset_by_index),
        algorithm=algorithm,
    )
    if not compute_uv:
        return result[0]
    s, u, vh = result
    return u, s, vh


def eig(
    x: Any,
    *,
    compute_left_eigenvectors: bool = True,
    compute_right_eigenvectors: bool = True,
    enable_eigvec_derivs: bool = False,
    implementation: EigImplementation | None = None,
    use_magma: bool | None = None,
) -> list[Any]:
    """[w, vl, vr] of general square matrices (complex): eigenvalues, then the left
    eigenvectors (``vl^H x = w vl^H``) and the right ones (``x vr = vr w``) as asked for,
    each column of unit 2-norm with its largest entry real (LAPACK geev's normalisation).
    Eigenvector derivatives (which assume distinct eigenvalues) need
    ``enable_eigvec_derivs=True``; ``use_magma`` is JAX's deprecated GPU switch."""
    if use_magma is not None:
        warnings.warn(
            "use_magma is deprecated, please use implementation=EigImplementation.MAGMA instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        implementation = EigImplementation.MAGMA if use_magma else EigImplementation.LAPACK
    return eig_p.bind(
        float_matrix(x, "eig"),
        compute_left_eigenvectors=bool(compute_left_eigenvectors),
        compute_right_eigenvectors=bool(compute_right_eigenvectors),
        enable_eigvec_derivs=bool(enable_eigvec_derivs),
        implementation=implementation,
    )


def schur(
    x: Any,
    *,
    compute_schur_vectors: bool = True,
    sort_eig_vals: bool = False,
    select_callable: Any = None,
) -> Any:
    """(T, Z) with ``x = Z T Z^H``, Z unitary, or (T,) without ``compute_schur_vectors``. T is
    upper triangular for complex x and quasi upper triangular for real x (LAPACK gees's real
    form: a 2 x 2 block with equal diagonal entries for each complex conjugate pair).
    ``sort_eig_vals`` is not supported (as in JAX, where it is unused)."""
    return tuple(
        schur_p.bind(
            float_matrix(x, "schur"),
            compute_schur_vectors=bool(compute_schur_vectors),
            sort_eig_vals=bool(sort_eig_vals),
            select_callable=select_callable,
        )
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
    conjugates as asked, and only a's ``lower`` (or upper) triangle is read. b is a matrix
    (or a stack matching a's)."""
    a = float_matrix(a, "triangular_solve")
    b = right_hand_side(b, get_aval(a).dtype)
    a = convert_element_type(a, get_aval(b).dtype)
    return triangular_solve_p.bind(
        a,
        b,
        left_side=bool(left_side),
        lower=bool(lower),
        transpose_a=bool(transpose_a),
        conjugate_a=bool(conjugate_a),
        unit_diagonal=bool(unit_diagonal),
    )


# --------------------------------------------------------------------------------------------
# LAPACK's packed Householder forms: gehrd, sytrd, orgqr, ormqr


def hessenberg(a: Any) -> tuple[Any, Any]:
    """(a_out, taus) in LAPACK ``gehrd``'s packed form: the upper Hessenberg ``Q^H a Q`` on
    and above the first subdiagonal, the reflectors of ``Q = H_0 ... H_{n-2}`` below it;
    taus has shape (..., n - 1)."""
    a_out, taus = hessenberg_p.bind(float_matrix(a, "hessenberg"))
    return a_out, taus


def tridiagonal(a: Any, *, lower: bool = True) -> tuple[Any, Any, Any, Any]:
    """(arr, d, e, taus) in LAPACK ``sytrd``'s packed form for Hermitian ``a`` given by its
    ``lower`` (or upper) triangle: d and e the real diagonal and off-diagonal of the
    tridiagonal ``Q^H a Q``, the reflectors stored outside it in that triangle of arr."""
    arr, d, e, taus = tridiagonal_p.bind(float_matrix(a, "tridiagonal"), lower=bool(lower))
    return arr, d, e, taus


def _householder_operands(a: Any, taus: Any, what: str) -> tuple[Any, Any]:
    a = float_matrix(a, what, square=False)
    taus = convert_element_type(
        np.asarray(taus) if isinstance(taus, list) else taus, get_aval(a).dtype
    )
    m, n = get_aval(a).shape[-2:]
    t_shape = get_aval(taus).shape
    if t_shape[:-1] != get_aval(a).shape[:-2] or len(t_shape) < 1 or t_shape[-1] > min(m, n):
        raise ValueError(
            f"{what}: taus must have shape {get_aval(a).shape[:-2]} + (k,) with k <= "
            f"min(m, n) = {min(m, n)}, got {t_shape}{errors.where()}"
        )
    return a, taus


def householder_product(a: Any, taus: Any) -> Any:
    """The first n columns of ``Q = H_0 ... H_{k-1}`` for reflectors stored in (m, n) ``a``
    as ``geqrf`` leaves them (LAPACK ``orgqr``), m >= n; k = taus.shape[-1]."""
    a, taus = _householder_operands(a, taus, "householder_product")
    m, n = get_aval(a).shape[-2:]
    if m < n:
        raise ValueError(
            f"householder_product: a must have at least as many rows as columns, got "
            f"{get_aval(a).shape}{errors.where()}"
        )
    return householder_product_p.bind(a, taus)


def _full_q(a: Any, taus: Any) -> Any:
    """The (m, m) Q of reflectors stored in (m, n) ``a``: a padded to m columns (or cut to
    them) for ``householder_product``."""
    m, n = get_aval(a).shape[-2:]
    if n < m:
        batch = get_aval(a).shape[:-2]
        a = concatenate([a, full((*batch, m, m - n), 0, get_aval(a).dtype)], len(batch) + 1)
    return householder_product_p.bind(a[..., :, :m], taus)


def ormqr(a: Any, taus: Any, c: Any, *, left: bool = True, transpose: bool = False) -> Any:
    """``op(Q) @ c`` (left) or ``c @ op(Q)`` for the (m, m) ``Q = H_0 ... H_{k-1}`` stored in
    ``a`` and taus as ``geqrf`` leaves them (LAPACK ``ormqr``); op is the conjugate transpose
    when ``transpose``."""
    a, taus = _householder_operands(a, taus, "ormqr")
    c = right_hand_side(c, get_aval(a).dtype)
    m = get_aval(a).shape[-2]
    side = get_aval(c).shape[-2 if left else -1]
    if get_aval(c).ndim < 2 or side != m:
        raise ValueError(
            f"ormqr: c must have {m} {'rows' if left else 'columns'} to meet Q, got shape "
            f"{get_aval(c).shape}{errors.where()}"
        )
    q = convert_element_type(_full_q(a, taus), get_aval(c).dtype)
    q = conj_transpose(q) if transpose else q
    return q @ c if left else c @ q


# --------------------------------------------------------------------------------------------
# Updates and products


_cholesky_update = jit(
    lambda r, w: batched(cholesky_rank_one_update, r, w, core_ndims=(2, 1)), inline=True
)


def cholesky_update(r_matrix: Any, w_vector: Any) -> Any:
    """The upper Cholesky factor of ``R^T R + w w^T`` given the upper factor R of a real
    matrix: a rank-one update by Givens rotations, O(n^2)."""
    r = float_matrix(r_matrix, "cholesky_update")
    if get_aval(r).dtype.kind == "c":
        raise TypeError(f"cholesky_update: expected a real matrix{errors.where()}")
    w = right_hand_side(w_vector, get_aval(r).dtype)
    r = convert_element_type(r, get_aval(w).dtype)
    if get_aval(w).shape != get_aval(r).shape[:-1]:
        raise ValueError(
            f"cholesky_update: w_vector must have shape {get_aval(r).shape[:-1]}, got "
            f"{get_aval(w).shape}{errors.where()}"
        )
    return _cholesky_update(r, w)


def symmetric_product(
    a_matrix: Any,
    c_matrix: Any,
    *,
    alpha: float = 1.0,
    beta: float = 0.0,
    symmetrize_output: bool = False,
) -> Any:
    """``alpha a a^T + beta c`` (a of shape (..., m, n), c (..., m, m)); with
    ``symmetrize_output`` the upper triangle is the transpose of the lower one."""
    a = float_matrix(a_matrix, "symmetric_product", square=False)
    c = right_hand_side(c_matrix, get_aval(a).dtype)
    result = alpha * (a @ transpose_last_axes(a)) + beta * c
    if symmetrize_output:
        m = get_aval(result).shape[-1]
        strictly_lower = np.tril(np.ones((m, m), bool), -1)
        lower = where_broadcast(np.tril(np.ones((m, m), bool)), result, 0)
        result = lower + transpose_last_axes(where_broadcast(strictly_lower, result, 0))
    return result


def lu_pivots_to_permutation(pivots: Any, permutation_size: int) -> Any:
    """The permutation (int32, shape (..., permutation_size)) that swapping row ``j`` with
    ``pivots[..., j]`` in turn makes, as ``lu`` returns it next to its pivots."""
    pivots = convert_element_type(
        np.asarray(pivots) if isinstance(pivots, list) else pivots, np.int32
    )
    size = int(permutation_size)
    if get_aval(pivots).ndim < 1 or get_aval(pivots).shape[-1] > size:
        raise ValueError(
            f"lu_pivots_to_permutation: pivots must have shape (..., k) with k <= "
            f"permutation_size = {size}, got {get_aval(pivots).shape}{errors.where()}"
        )
    return lu_pivots_to_permutation_p.bind(pivots, permutation_size=size)


_qdwh = jit(qdwh_polar, inline=True, static_argnums=(1, 2))


def qdwh(
    x: Any,
    *,
    is_hermitian: bool = False,
    max_iterations: int | None = None,
    eps: float | None = None,
    dynamic_shape: tuple[int, int] | None = None,
) -> tuple[Any, Any, Any, Any]:
    """(u, h, num_iters, is_converged): the polar decomposition ``x = u h`` of one full-rank
    (m, n) matrix, m >= n, by the QDWH iteration (at most ``max_iterations`` steps, 10 by
    default; ``is_hermitian`` is accepted and unused, as in JAX)."""
    del is_hermitian
    if dynamic_shape is not None:
        raise NotImplementedError(f"qdwh: dynamic_shape= is not supported{errors.where()}")
    x = float_matrix(x, "qdwh", square=False)
    m, n = get_aval(x).shape[-2:]
    if get_aval(x).ndim != 2 or m < n:
        raise ValueError(
            f"qdwh: expected one (m, n) matrix with m >= n, got {get_aval(x).shape}{errors.where()}"
        )
    iterations = 10 if max_iterations is None else int(max_iterations)
    return _qdwh(x, iterations, None if eps is None else float(eps))


def _as_operand(x: Any) -> Any:
    return np.asarray(x) if isinstance(x, (list, tuple)) else x


def tridiagonal_solve(dl: Any, d: Any, du: Any, b: Any, *, perturb_singular: bool = False):
    """x with ``T @ x = b`` for the tridiagonal T of sub-, main and superdiagonals dl, d, du
    (shape (..., m); dl[0] and du[-1] lie outside T and are not read) and b of shape
    (..., m, n). ``perturb_singular`` (perturbing tiny pivots of a singular T) needs a
    platform's own solver (the CPU plugin's LAPACK)."""
    d = _as_operand(d)
    if not dtypes.is_inexact(get_aval(d).dtype):
        d = convert_element_type(d, dtypes.default_float())
    dtype = get_aval(d).dtype
    dl, du, b = (convert_element_type(_as_operand(v), dtype) for v in (dl, du, b))
    return tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=bool(perturb_singular))
