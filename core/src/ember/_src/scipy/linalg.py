"""``ember.scipy.linalg``: SciPy's dense linear algebra, written over ``ember.numpy.linalg``
and the factorisation primitives of ``lax`` (``lu``, ``cholesky``, ``triangular_solve``,
``qr``), which platforms override (the CPU plugin with LAPACK). LU records LAPACK-style pivots
(row ``j`` swapped with row ``piv[j]``, 0-based, as JAX returns them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.lax import linalg as lax_linalg, linalg_factor_solves as factor_solves
from ember._src.lax.linalg_factor_primitives import lu_p, lu_pivots_to_permutation_p
from ember._src.lax.linalg_operands import (
    float_matrix,
    hermitian_from_triangle,
    main_diagonal,
    positions,
    right_hand_side,
)
from ember._src.lax.linalg_qr_primitives import qr_p
from ember._src.numpy import (
    creation,
    diagonals,
    dtype_functions,
    elementwise as enp,
    linalg as nla,
    manipulation,
    reductions,
)
from ember._src.numpy.contractions import matmul
from ember._src.numpy.nonzero import where
from ember._src.numpy.operands import promote_to_inexact
from ember._src.primitives.control_flow.loops import fori_loop
from ember._src.scipy.linalg_schur import complex_schur_from_real
from ember._src.transforms.autodiff import jvp
from ember._src.transforms.jit import jit
from ember._src.transforms.vmap import vmap

# --------------------------------------------------------------------------------------------
# Helpers


def _matrix(a: Any, what: str, square: bool = True) -> Any:
    return float_matrix(creation.asarray(a), what, square=square)


def _shape(x: Any) -> tuple[int, ...]:
    return get_aval(x).shape


def _dtype(x: Any) -> np.dtype:
    return get_aval(x).dtype


def _h(x: Any) -> Any:
    """Conjugate transpose of the last two axes."""
    return manipulation.swapaxes(enp.conjugate(x), -1, -2)


def _check_rhs(a: Any, b: Any, what: str) -> None:
    n = _shape(a)[-1]
    bshape = _shape(b)
    vector = len(bshape) == len(_shape(a)) - 1
    rows = bshape[-1] if vector else (bshape[-2] if len(bshape) >= 2 else None)
    if rows != n:
        raise ValueError(
            f"{what}: the right-hand side of shape {bshape} does not match the matrix of shape "
            f"{_shape(a)}{errors.where()}"
        )


def _as_columns(a: Any, b: Any) -> tuple[Any, Any, bool]:
    """(a, b) with b a stack of matrices of columns and both stacks broadcast to one batch
    shape, and whether b was a vector (the solution is made one again)."""
    vector = len(_shape(b)) == len(_shape(a)) - 1
    if vector:
        b = b[..., None]
    batch = np.broadcast_shapes(_shape(a)[:-2], _shape(b)[:-2])
    a = manipulation.broadcast_to(a, batch + _shape(a)[-2:])
    return a, manipulation.broadcast_to(b, batch + _shape(b)[-2:]), vector


def _vector_again(x: Any, vector: bool) -> Any:
    return x[..., 0] if vector else x


def _per_matrix(single, a: Any) -> Any:
    """Apply ``single`` (written for one matrix) over a's leading batch axes."""
    for _ in range(len(_shape(a)) - 2):
        single = vmap(single)
    return single(a)


def _batched_solve(single, a: Any, b: Any) -> Any:
    """Apply ``single(a2d, b)`` over a's leading batch axes (b shares them)."""
    for _ in range(len(_shape(a)) - 2):
        single = vmap(single)
    return single(a, b)


# --------------------------------------------------------------------------------------------
# Triangular solves


def _trans_code(trans: Any) -> int:
    codes = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}
    if isinstance(trans, (int, np.integer, str)) and trans in codes:
        return codes[trans]
    raise ValueError(
        f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}{errors.where()}"
    )


def solve_triangular(
    a: Any,
    b: Any,
    trans: int | str = 0,
    lower: bool = False,
    unit_diagonal: bool = False,
    overwrite_b: bool = False,
    debug: Any = None,
    check_finite: bool = True,
) -> Any:
    """x with ``op(a) @ x = b``, reading only the ``lower`` (or upper) triangle of ``a``."""
    del overwrite_b, debug, check_finite
    code = _trans_code(trans)
    a = _matrix(a, "solve_triangular")
    b = right_hand_side(b, _dtype(a))
    a = manipulation.astype(a, _dtype(b))
    _check_rhs(a, b, "solve_triangular")
    a, b, vector = _as_columns(a, b)
    x = factor_solves.triangular(
        a,
        b,
        lower=bool(lower),
        transpose_a=code != 0,
        conjugate_a=code == 2,
        unit_diagonal=bool(unit_diagonal),
    )
    return _vector_again(x, vector)


# --------------------------------------------------------------------------------------------
# LU with partial pivoting (rectangular)


def lu_factor(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> tuple[Any, Any]:
    """(lu, piv): L below the diagonal (unit diagonal implied), U on and above it; row ``i``
    was swapped with row ``piv[i]``."""
    del overwrite_a, check_finite
    lu, piv, _ = lu_p.bind(_matrix(a, "lu_factor", square=False))
    return lu, piv


def _split_lu(lu: Any) -> tuple[Any, Any]:
    m, n = _shape(lu)[-2:]
    k = min(m, n)
    dtype = _dtype(lu)
    lower = np.tril(np.ones((m, k), bool), -1)
    l_factor = where(lower, lu[..., :, :k], 0).astype(dtype) + np.eye(m, k, dtype=dtype)
    upper = np.triu(np.ones((k, n), bool))
    return l_factor, where(upper, lu[..., :k, :], 0).astype(dtype)


def lu(
    a: Any, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True
) -> tuple[Any, ...]:
    """(p, l, u) with ``a = p @ l @ u``; ``permute_l=True`` gives (p @ l, u)."""
    del overwrite_a, check_finite
    a = _matrix(a, "lu", square=False)
    packed, _, perm = lu_p.bind(a)
    l_factor, u_factor = _split_lu(packed)
    m = _shape(a)[-2]
    # a[perm] = l @ u, so a = P^T l u with P's row i the unit vector e_perm[i]
    p = manipulation.swapaxes(
        manipulation.astype(enp.equal(perm[..., :, None], positions(m)), _dtype(a)), -1, -2
    )
    if permute_l:
        return matmul(p, l_factor), u_factor
    return p, l_factor, u_factor


def lu_solve(
    lu_and_piv: tuple[Any, Any],
    b: Any,
    trans: int = 0,
    overwrite_b: bool = False,
    check_finite: bool = True,
) -> Any:
    """x with ``op(a) @ x = b`` from ``lu_factor(a)``; trans 0, 1, 2 mean a, a^T, a^H."""
    del overwrite_b, check_finite
    if trans not in (0, 1, 2):
        raise ValueError(f"lu_solve: trans must be 0, 1 or 2, got {trans!r}{errors.where()}")
    packed, piv = lu_and_piv
    packed = _matrix(packed, "lu_solve")
    b = right_hand_side(b, _dtype(packed))
    _check_rhs(packed, b, "lu_solve")
    packed = manipulation.astype(packed, _dtype(b))
    n = _shape(packed)[-1]
    permutation = lu_pivots_to_permutation_p.bind(
        creation.asarray(piv).astype(np.int32), permutation_size=n
    )
    vector = len(_shape(b)) == len(_shape(packed)) - 1
    b = b[..., None] if vector else b
    batch = np.broadcast_shapes(_shape(packed)[:-2], _shape(b)[:-2])
    packed = manipulation.broadcast_to(packed, batch + (n, n))
    permutation = manipulation.broadcast_to(permutation, batch + (n,))
    b = manipulation.broadcast_to(b, batch + _shape(b)[-2:])
    x = factor_solves.lu_solve(packed, permutation, b, int(trans))
    return _vector_again(x, vector)


# --------------------------------------------------------------------------------------------
# Cholesky and solves


def cholesky(a: Any, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The Cholesky factor of a Hermitian positive-definite ``a``: lower (``a = L L^H``) or,
    by default, upper (``a = U^H U``)."""
    del overwrite_a, check_finite
    return nla.cholesky(a, upper=not lower)


def cho_factor(
    a: Any, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True
) -> tuple[Any, bool]:
    """(c, lower) for ``cho_solve``; the other triangle of c is zero (as JAX returns it)."""
    del overwrite_a, check_finite
    return cholesky(a, lower=lower), lower


def cho_solve(
    c_and_lower: tuple[Any, bool], b: Any, overwrite_b: bool = False, check_finite: bool = True
) -> Any:
    """x with ``a @ x = b`` from ``cho_factor(a)``."""
    del overwrite_b, check_finite
    c, lower = c_and_lower
    c = _matrix(c, "cho_solve")
    b = right_hand_side(b, _dtype(c))
    _check_rhs(c, b, "cho_solve")
    c = manipulation.astype(c, _dtype(b))
    lower = bool(lower)
    c, b, vector = _as_columns(c, b)
    return _vector_again(factor_solves.cholesky_solve(c, b, bool(lower)), vector)


_ASSUME_A = ("gen", "general", "sym", "symmetric", "her", "hermitian", "pos", "positive definite")


def solve(
    a: Any,
    b: Any,
    lower: bool = False,
    overwrite_a: bool = False,
    overwrite_b: bool = False,
    debug: bool = False,
    check_finite: bool = True,
    assume_a: str = "gen",
) -> Any:
    """x with ``a @ x = b``. ``assume_a='pos'`` solves by Cholesky from the ``lower`` (or upper)
    triangle; the other kinds by LU with partial pivoting."""
    del overwrite_a, overwrite_b, debug, check_finite
    if assume_a not in _ASSUME_A:
        raise ValueError(
            f"solve: assume_a must be one of {_ASSUME_A}, got {assume_a!r}{errors.where()}"
        )
    a = _matrix(a, "solve")
    b = right_hand_side(b, _dtype(a))
    a = manipulation.astype(a, _dtype(b))
    _check_rhs(a, b, "solve")
    if assume_a in ("pos", "positive definite"):
        full = hermitian_from_triangle(a, lower)
        return cho_solve((nla.cholesky(full, symmetrize_input=False), True), b)
    return nla.solve(a, b)


def inv(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    del overwrite_a, check_finite
    return nla.inv(a)


def det(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    del overwrite_a, check_finite
    return nla.det(a)


def eigh(
    a: Any,
    b: Any = None,
    lower: bool = True,
    eigvals_only: bool = False,
    overwrite_a: bool = False,
    overwrite_b: bool = False,
    turbo: bool = True,
    eigvals: None = None,
    type: int = 1,
    check_finite: bool = True,
) -> Any:
    """Eigenvalues (ascending) and eigenvectors of the Hermitian matrix whose ``lower`` (or
    upper) triangle ``a`` holds. The generalised problem (``b``) is not supported, as in JAX."""
    del overwrite_a, overwrite_b, turbo, check_finite
    if b is not None:
        raise NotImplementedError(
            f"eigh: only the standard problem (b=None) is supported{errors.where()}"
        )
    if eigvals is not None:
        raise NotImplementedError(f"eigh: eigvals= is not supported{errors.where()}")
    del type
    full = hermitian_from_triangle(_matrix(a, "eigh"), bool(lower))
    w, v = nla.eigh(full, symmetrize_input=False)
    return w if eigvals_only else (w, v)


_QR_MODES = ("full", "r", "economic")


def qr(
    a: Any,
    overwrite_a: bool = False,
    lwork: Any = None,
    mode: str = "full",
    pivoting: bool = False,
    check_finite: bool = True,
) -> tuple[Any, ...]:
    """Householder QR. ``mode``: 'full' (q square), 'economic' (q with min(m, n) columns) or
    'r' (a one-tuple ``(r,)``, as SciPy and JAX return it). With ``pivoting``, also the
    column permutation p (``a[:, p] = q r``) last in the tuple."""
    del overwrite_a, lwork, check_finite
    if mode not in _QR_MODES:
        raise ValueError(f"qr: mode must be one of {_QR_MODES}, got {mode!r}{errors.where()}")
    if pivoting:
        full = mode != "economic"
        a = _matrix(a, "qr", square=False)
        q, r, perm = qr_p.bind(a, pivoting=True, full_matrices=full, use_magma=None)
        return (r, perm) if mode == "r" else (q, r, perm)
    if mode == "r":
        return (nla.qr(a, mode="complete")[1],)
    q, r = nla.qr(a, mode="complete" if mode == "full" else "reduced")
    return q, r


def qr_multiply(
    a: Any,
    c: Any,
    mode: str = "right",
    pivoting: bool = False,
    conjugate: bool = False,
    overwrite_a: bool = False,
    overwrite_c: bool = False,
) -> tuple[Any, ...]:
    """(Q @ c, R) for ``mode='left'`` or (c @ Q, R) for ``mode='right'``, Q the economic
    factor of a (min(m, n) columns), ``conj(Q)`` with ``conjugate``. A 1-D c is a column
    (left) or a row (right), and the product comes back 1-D. With ``pivoting``, Q and R
    factor a's columns permuted by p, returned third."""
    del overwrite_a, overwrite_c
    if mode not in ("right", "left"):
        raise ValueError(f"mode must be 'right' or 'left', got {mode!r}{errors.where()}")
    a, c = promote_to_inexact(creation.asarray(a), creation.asarray(c))
    a = _matrix(a, "qr_multiply", square=False)
    vector = len(_shape(c)) == 1
    if vector:
        c = c[:, None] if mode == "left" else c[None, :]
    m, n = _shape(a)[-2:]
    k = min(m, n)
    if mode == "left" and _shape(c)[-2] != k:
        raise ValueError(
            f"Array shapes are not compatible for Q @ c operation: a has shape {_shape(a)} so "
            f"Q has {k} columns, but c has {_shape(c)[-2]} rows (expected {k}).{errors.where()}"
        )
    if mode == "right" and _shape(c)[-1] != m:
        raise ValueError(
            f"Array shapes are not compatible for c @ Q operation: a has shape {_shape(a)} so "
            f"Q has {m} rows, but c has {_shape(c)[-1]} columns (expected {m}).{errors.where()}"
        )
    if pivoting:
        q, r, perm = qr(a, mode="economic", pivoting=True)
    else:
        q, r = nla.qr(a, mode="reduced")
    if conjugate:
        q = enp.conjugate(q)
    product = matmul(q, c) if mode == "left" else matmul(c, q)
    if vector:
        product = product.ravel()
    return (product, r, perm) if pivoting else (product, r)


def svd(
    a: Any,
    full_matrices: bool = True,
    compute_uv: bool = True,
    overwrite_a: bool = False,
    check_finite: bool = True,
    lapack_driver: str = "gesdd",
) -> Any:
    del overwrite_a, check_finite
    if lapack_driver not in ("gesdd", "gesvd"):
        raise ValueError(
            f"svd: lapack_driver must be 'gesdd' or 'gesvd', got {lapack_driver!r}{errors.where()}"
        )
    return nla.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def polar(
    a: Any,
    side: str = "right",
    *,
    method: str = "qdwh",
    eps: float | None = None,
    max_iterations: int | None = None,
) -> tuple[Any, Any]:
    """(u, p): ``a = u @ p`` (side='right') or ``a = p @ u`` (side='left'), u with orthonormal
    columns and p Hermitian positive semi-definite. Computed from the SVD for either method."""
    del eps, max_iterations
    if side not in ("right", "left"):
        raise ValueError(f"polar: side must be 'right' or 'left', got {side!r}{errors.where()}")
    if method not in ("qdwh", "svd"):
        raise ValueError(f"polar: method must be 'qdwh' or 'svd', got {method!r}{errors.where()}")
    a = _matrix(a, "polar", square=False)
    u_svd, s, vh = nla.svd(a, full_matrices=False)
    unitary = matmul(u_svd, vh)
    s = s.astype(_dtype(a))
    if side == "right":
        return unitary, matmul(_h(vh) * s[..., None, :], vh)
    return unitary, matmul(u_svd * s[..., None, :], _h(u_svd))


def hessenberg(
    a: Any, *, calc_q: bool = False, overwrite_a: bool = False, check_finite: bool = True
) -> Any:
    """h (and q with ``a = q @ h @ q^H`` when ``calc_q``), h upper Hessenberg: LAPACK's
    ``gehrd`` (the ``hessenberg`` primitive) and ``orghr`` from its reflectors."""
    del overwrite_a, check_finite
    a = _matrix(a, "hessenberg")
    if len(_shape(a)) != 2:
        raise ValueError(f"hessenberg: expected one matrix, got {_shape(a)}{errors.where()}")
    h, q = _hessenberg_compiled(a)
    return (h, q) if calc_q else h


def _hessenberg_and_q(a: Any) -> tuple[Any, Any]:
    packed, taus = lax_linalg.hessenberg(a)
    n = _shape(a)[0]
    h = diagonals.triu(packed, -1) if n else packed
    if n <= 1:
        return h, creation.eye(n, dtype=_dtype(a))
    # Q = H_0 ... H_{n-2}, reflector j stored below the subdiagonal of column j: the
    # orthogonal factor of the (n-1) x (n-1) lower-right block, bordered by e_0
    q_block = lax_linalg.householder_product(packed[1:, :-1], taus)
    q = creation.eye(n, dtype=_dtype(a))
    return h, q.at[1:, 1:].set(q_block)


_hessenberg_compiled = jit(_hessenberg_and_q, inline=True)


# --------------------------------------------------------------------------------------------
# Special matrices


def block_diag(*arrs: Any) -> Any:
    """The block-diagonal matrix of the given scalars, vectors (one row) and matrices."""
    if not arrs:
        return creation.zeros((1, 0))
    blocks = [manipulation.atleast_2d(creation.asarray(x)) for x in arrs]
    for x in blocks:
        if len(_shape(x)) > 2:
            raise ValueError(
                f"block_diag: arguments must have dimension <= 2, got shape {_shape(x)}"
                f"{errors.where()}"
            )
    dtype = dtype_functions.result_type(*blocks)
    width = sum(_shape(x)[1] for x in blocks)
    rows, left = [], 0
    for x in blocks:
        m, n = _shape(x)
        pieces = [creation.zeros((m, left), dtype), x.astype(dtype)]
        pieces.append(creation.zeros((m, width - left - n), dtype))
        rows.append(manipulation.concatenate(pieces, axis=1))
        left += n
    return manipulation.concatenate(rows, axis=0)


def toeplitz(c: Any, r: Any = None) -> Any:
    """The Toeplitz matrix with first column ``c`` and first row ``r`` (default ``conj(c)``);
    ``r[0]`` is ignored. Leading axes of c and r are batch axes, as in JAX."""
    c = creation.asarray(c)
    r = enp.conjugate(c) if r is None else creation.asarray(r)
    dtype = dtype_functions.result_type(c, r)
    c = manipulation.atleast_1d(c).astype(dtype)
    r = manipulation.atleast_1d(r).astype(dtype)
    m, n = _shape(c)[-1], _shape(r)[-1]
    batch = np.broadcast_shapes(_shape(c)[:-1], _shape(r)[:-1])
    c = manipulation.broadcast_to(c, (*batch, m))
    r = manipulation.broadcast_to(r, (*batch, n))
    # values[n - 1 + i - j] is entry (i, j): the row reversed, then the column
    values = manipulation.concatenate([manipulation.flip(r[..., 1:], axis=-1), c], axis=-1)
    index = (n - 1) + np.arange(m)[:, None] - np.arange(n)[None, :]
    return values[..., index]


def hankel(c: Any, r: Any = None) -> Any:
    """The Hankel matrix with first column ``c`` and last row ``r`` (default zeros);
    ``r[0]`` is ignored."""
    c = manipulation.ravel(creation.asarray(c))
    r = creation.zeros_like(c) if r is None else manipulation.ravel(creation.asarray(r))
    dtype = dtype_functions.result_type(c, r)
    m, n = _shape(c)[0], _shape(r)[0]
    values = manipulation.concatenate([c.astype(dtype), r[1:].astype(dtype)])
    return values[np.arange(m)[:, None] + np.arange(n)[None, :]]


def circulant(c: Any) -> Any:
    """The circulant matrix with first column ``c`` (leading axes are batch axes)."""
    c = manipulation.atleast_1d(creation.asarray(c))
    n = _shape(c)[-1]
    return c[..., (np.arange(n)[:, None] - np.arange(n)[None, :]) % n]


# --------------------------------------------------------------------------------------------
# Matrix exponential: Pade approximation with scaling and squaring (Higham 2005)

_PADE = {
    3: (120.0, 60.0, 12.0, 1.0),
    5: (30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0),
    7: (17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0),
    9: (
        17643225600.0,
        8821612800.0,
        2075673600.0,
        302702400.0,
        30270240.0,
        1577520.0,
        70560.0,
        2520.0,
        56.0,
        1.0,
    ),
    13: (
        64764752532480000.0,
        32382376266240000.0,
        7771770303897600.0,
        1187353796428800.0,
        129060195264000.0,
        10559470521600.0,
        670442572800.0,
        33522128640.0,
        1323241920.0,
        40840800.0,
        960960.0,
        16380.0,
        182.0,
        1.0,
    ),
}
# The 1-norm below which each degree is accurate to the unit roundoff (Higham's theta_m).
_THETA_DOUBLE = {3: 1.495585217958292e-2, 5: 2.539398330063230e-1, 7: 9.504178996162932e-1,
                 9: 2.097847961257068e0, 13: 5.371920351148152e0}  # fmt: skip
_THETA_SINGLE = {3: 4.258730016922831e-1, 5: 1.880152677804762e0, 7: 3.925724783138660e0}


def _pade(a: Any, degree: int) -> tuple[Any, Any]:
    """(u, v): the odd and even parts of the degree-``degree`` Pade numerator at ``a``."""
    b = _PADE[degree]
    dtype = _dtype(a)
    eye = creation.eye(_shape(a)[0], dtype=dtype)
    a2 = matmul(a, a)
    if degree < 13:
        powers = [eye, a2]
        while len(powers) < (degree + 1) // 2:
            powers.append(matmul(powers[-1], a2))
        odd = sum(b[2 * k + 1] * p for k, p in enumerate(powers))
        even = sum(b[2 * k] * p for k, p in enumerate(powers))
        return matmul(a, odd), even
    a4 = matmul(a2, a2)
    a6 = matmul(a4, a2)
    odd = matmul(a6, b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2
    even = matmul(a6, b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2
    return matmul(a, odd + b[1] * eye), even + b[0] * eye


def _expm_single(a: Any, max_squarings: int) -> Any:
    dtype = _dtype(a)
    single = dtypes.real_dtype(dtype) == np.float32 or dtypes.real_dtype(dtype) == np.float16
    thetas = _THETA_SINGLE if single else _THETA_DOUBLE
    degrees = sorted(thetas)
    top = degrees[-1]
    norm = reductions.max(reductions.sum(enp.abs(a), axis=0))
    # scale by 2^-s so that the top degree is accurate, then square s times
    squarings = enp.maximum(0, enp.ceil(enp.log2(norm / thetas[top])))
    squarings = where(enp.isfinite(squarings), squarings, 0).astype(np.int32)
    branch = reductions.sum(
        manipulation.stack([enp.greater_equal(norm, thetas[d]) for d in degrees[:-1]]).astype(
            np.int32
        )
    )

    # Every degree is evaluated, each on a zero matrix unless it is the chosen one: the
    # unchosen ones stay well conditioned (Pade at 0 is the identity), so no inf or NaN from
    # them can reach the result or its derivative.
    scaled = a / enp.exp2(squarings.astype(dtypes.real_dtype(dtype))).astype(dtype)
    result = creation.zeros_like(a)
    for k, degree in enumerate(degrees):
        chosen = enp.equal(branch, k)
        m = where(chosen, scaled if degree == top else a, 0).astype(dtype)
        u, v = _pade(m, degree)
        result = where(chosen, nla.solve(v - u, v + u), result)

    def square(i, r):
        return where(enp.less(i, squarings), matmul(r, r), r)

    result = fori_loop(0, max_squarings, square, result)
    return where(enp.greater(squarings, max_squarings), np.nan, result).astype(dtype)


def _expm_impl(a: Any, max_squarings: int) -> Any:
    return _per_matrix(lambda m: _expm_single(m, max_squarings), a)


_expm = jit(_expm_impl, static_argnums=1, inline=True)


def expm(A: Any, *, upper_triangular: bool = False, max_squarings: int = 16) -> Any:
    """The matrix exponential by Pade approximation with scaling and squaring; NaN where more
    than ``max_squarings`` squarings would be needed. ``upper_triangular`` is a hint only."""
    del upper_triangular
    a = _matrix(A, "expm")
    return _expm(a, int(max_squarings))


def expm_frechet(A: Any, E: Any, *, method: str | None = None, compute_expm: bool = True) -> Any:
    """The Frechet derivative of expm at A in the direction E (forward-mode differentiation
    of ``expm``, as JAX computes it); ``(expm(A), derivative)`` with ``compute_expm``."""
    del method
    a, e = creation.asarray(A), creation.asarray(E)
    for name, x in (("A", a), ("E", e)):
        if len(_shape(x)) < 2 or _shape(x)[-2] != _shape(x)[-1]:
            raise ValueError(
                f"expected {name} to be a (batched) square matrix, got {name}.shape={_shape(x)}"
                f"{errors.where()}"
            )
    if _shape(a) != _shape(e):
        raise ValueError(
            f"expected A and E to be the same shape, got A.shape={_shape(a)} "
            f"E.shape={_shape(e)}{errors.where()}"
        )
    a = _matrix(a, "expm_frechet")
    e = e.astype(_dtype(a))
    expm_a, derivative = jvp(expm, (a,), (e,))
    return (expm_a, derivative) if compute_expm else derivative


# --------------------------------------------------------------------------------------------
# Square root through the complex Schur form


def _triangular_sqrt(t: Any) -> Any:
    """The upper-triangular r with ``r @ r = t`` (principal square roots on the diagonal),
    filled one superdiagonal at a time: before superdiagonal d is filled, ``(r @ r)[i, i+d]``
    is exactly the sum over the entries between i and i + d that the recurrence needs."""
    n = _shape(t)[0]
    dtype = _dtype(t)
    offset = np.arange(n)[None, :] - np.arange(n)[:, None]
    root = enp.sqrt(main_diagonal(t))
    r = where(np.eye(n, dtype=bool), root[:, None], 0).astype(dtype)
    denominator = root[:, None] + root[None, :]
    safe = where(enp.equal(denominator, 0), 1, denominator).astype(dtype)

    def fill(d, r):
        entries = (t - matmul(r, r)) / safe
        return where(enp.equal(offset, d), entries, r).astype(dtype)

    return fori_loop(1, n, fill, r)


def _sqrtm_single(a: Any) -> Any:
    if _shape(a)[0] == 1:
        return enp.sqrt(a.astype(dtypes.complex_dtype(_dtype(a))))
    t, z = lax_linalg.schur(a)
    if not dtypes.issubdtype(_dtype(a), np.complexfloating):
        # as SciPy (and JAX's answers) for real input: the real Schur form keeps real
        # eigenvalues exactly real, so a negative one takes the principal root +i sqrt(|x|)
        # instead of whichever side of the branch cut rounding puts it on
        complex_dtype = dtypes.complex_dtype(_dtype(a))
        t, z = complex_schur_from_real(t.astype(complex_dtype), z.astype(complex_dtype))
    r = _triangular_sqrt(t)
    return matmul(matmul(z, r), _h(z))


_sqrtm = jit(lambda a: _per_matrix(_sqrtm_single, a), inline=True)


def sqrtm(A: Any, blocksize: int = 1) -> Any:
    """The principal square root of a square matrix, complex (as JAX returns it), from the
    complex Schur form (of the real Schur form, for real input)."""
    if blocksize != 1:
        raise NotImplementedError(f"sqrtm: only blocksize=1 is supported{errors.where()}")
    return _sqrtm(_matrix(A, "sqrtm"))


# --------------------------------------------------------------------------------------------
# Matrix functions by the Schur-Parlett recurrence


def _parlett(t: Any, diagonal: Any) -> Any:
    """The upper-triangular f(t) given f on t's diagonal. f(t) commutes with t, which fixes
    each superdiagonal entry from the ones below it: with entry (i, j) still zero,
    ``(t f - f t)[i, j] = f[i, j] (t[j, j] - t[i, i])``. Equal diagonal entries (a defective
    or repeated eigenvalue) leave the entry zero, as JAX does."""
    n = _shape(t)[0]
    dtype = _dtype(t)
    offset = np.arange(n)[None, :] - np.arange(n)[:, None]
    d = main_diagonal(t)
    gap = d[None, :] - d[:, None]
    usable = enp.not_equal(gap, 0)
    safe = where(usable, gap, 1).astype(dtype)
    f = where(np.eye(n, dtype=bool), diagonal[:, None], 0).astype(dtype)

    def fill(k, f):
        entries = where(usable, (matmul(t, f) - matmul(f, t)) / safe, 0)
        return where(enp.equal(offset, k), entries, f).astype(dtype)

    return fori_loop(1, n, fill, f)


def _funm_error(t: Any) -> Any:
    """SciPy's estimate of funm's relative error: eps scaled by how close eigenvalues come."""
    n = _shape(t)[0]
    real = dtypes.real_dtype(_dtype(t))
    eps = np.asarray(np.finfo(real).eps, real)
    d = main_diagonal(t)
    gaps = enp.abs(d[None, :] - d[:, None])
    strict = np.triu(np.ones((n, n), bool), 1)
    smallest = reductions.min(where(strict, gaps, np.inf)) if n > 1 else eps
    smallest = where(enp.equal(smallest, 0) | ~enp.isfinite(smallest), eps, smallest)
    above = reductions.max(reductions.sum(enp.abs(where(strict, t, 0)), axis=0))
    return enp.minimum(1, enp.maximum(eps, eps / smallest * above)).astype(real)


def funm(A: Any, func: Any, disp: bool = True) -> Any:
    """``func`` applied to a square matrix (complex result) by the Schur-Parlett method;
    ``func`` acts elementwise on the eigenvalues. With ``disp=False``, also SciPy's estimate
    of the relative error. Repeated eigenvalues are not handled (as in JAX)."""
    a = _matrix(A, "funm")
    if len(_shape(a)) != 2:
        raise ValueError(f"funm: expected one matrix, got shape {_shape(a)}{errors.where()}")
    a = a.astype(dtypes.complex_dtype(_dtype(a)))
    if _shape(a)[0] == 1:
        t, z = a, creation.ones_like(a)
    else:
        t, z = _schur_compiled(a)
    f = _parlett(t, creation.asarray(func(main_diagonal(t))).astype(_dtype(t)))
    result = matmul(matmul(z, f), _h(z))
    return result if disp else (result, _funm_error(t))


_schur_compiled = jit(lambda a: tuple(lax_linalg.schur(a)), inline=True)
