"""``ember.numpy.linalg``, written over ember's own operations.

Factorisations are loops over columns (``fori_loop`` with static bounds, so they compile
into one XLA loop each and differentiate through reverse-mode like any ``scan``):

- LU with partial pivoting backs ``solve``, ``inv``, ``det`` and ``slogdet``;
- ``cholesky`` is the column-by-column Cholesky–Banachiewicz recurrence;
- ``qr`` is Householder's; ``eigh`` is cyclic Jacobi (a fixed number of sweeps, far past
  convergence) with the analytic derivative (a custom_jvp); ``svd`` is one-sided (Hestenes)
  Jacobi, so small singular values stay accurate.

Stacks of matrices (leading batch axes) are handled by ``vmap``. These are exact algorithms,
not approximations, but not LAPACK: the CPU plugin may later override them with LAPACK
kernels through its lowering hook.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.api import vmap
from ember._src.core import get_aval
from ember._src.jit import jit
from ember._src.numpy import creation, elementwise as enp, manipulation, reductions
from ember._src.numpy.contractions import matmul
from ember._src.numpy.sorting import argsort
from ember._src.ops.control_flow.loops import fori_loop
from ember._src.ops.custom_derivatives import custom_jvp
from ember._src.ops.elementwise import stop_gradient

# --------------------------------------------------------------------------------------------
# Helpers


def _float_matrix(a: Any, what: str, square: bool = True) -> Any:
    a = creation.asarray(a)
    aval = get_aval(a)
    if aval.ndim < 2:
        raise np.linalg.LinAlgError(
            f"{what}: expected a matrix (or a stack), got shape {aval.shape}{errors.where()}"
        )
    if square and aval.shape[-1] != aval.shape[-2]:
        raise np.linalg.LinAlgError(
            f"{what}: expected square matrices, got shape {aval.shape}{errors.where()}"
        )
    if not dtypes.is_inexact(aval.dtype):
        a = manipulation.astype(a, dtypes.default_float())
    return a


def _batched(fn, a: Any, *rest: Any, core_ndims: tuple[int, ...] = (2,)) -> Any:
    """Apply ``fn`` (written for one matrix) over leading batch axes with vmap."""
    batch = get_aval(a).ndim - core_ndims[0]
    for _ in range(batch):
        fn = vmap(fn)
    return fn(a, *rest)


def _iota(n: int) -> Any:
    return creation.arange(n, dtype=np.int32)


def _eye(n: int, dtype: Any) -> Any:
    return creation.eye(n, dtype=dtype)


# --------------------------------------------------------------------------------------------
# LU with partial pivoting


def _lu_single(a: Any) -> tuple[Any, Any, Any]:
    """(packed LU, permutation, parity) of one square matrix."""
    n = get_aval(a).shape[0]
    rows = _iota(n)

    def step(k, state):
        lu, perm, parity = state
        column = enp.abs(lu[:, k])
        column = enp.where(enp.greater_equal(rows, k), column, -1.0)
        p = reductions.argmax(column).astype(np.int32)
        # swap rows k and p
        row_k, row_p = lu[k], lu[p]
        lu = lu.at[k].set(row_p).at[p].set(row_k)
        pk, pp = perm[k], perm[p]
        perm = perm.at[k].set(pp).at[p].set(pk)
        parity = enp.where(enp.equal(p, k), parity, -parity)
        pivot = lu[k, k]
        safe = enp.where(enp.equal(pivot, 0), 1.0, pivot).astype(get_aval(lu).dtype)
        below = enp.greater(rows, k)
        factors = enp.where(below, lu[:, k] / safe, 0.0).astype(get_aval(lu).dtype)
        right = enp.greater(rows, k).astype(get_aval(lu).dtype)
        update = factors[:, None] * (lu[k] * right)[None, :]
        lu = lu - update
        lu = enp.where(below[:, None] & enp.equal(rows, k)[None, :], factors[:, None], lu)
        return lu, perm, parity

    parity0 = np.asarray(1.0, dtypes.real_dtype(get_aval(a).dtype))
    return fori_loop(0, n, step, (a, rows, parity0))


def lu_factor(a: Any) -> tuple[Any, Any]:
    """(packed LU, pivots as a permutation) with ``a[perm] = L @ U``."""
    a = _float_matrix(a, "lu_factor")
    lu, perm, _ = _batched(_lu_single, a)
    return lu, perm


def _lu_solve_single(lu: Any, perm: Any, b: Any) -> Any:
    n = get_aval(lu).shape[0]
    rows = _iota(n)
    y = b[perm]

    def forward(i, y):  # L y = P b, unit diagonal
        coeffs = enp.where(enp.less(rows, i), lu[i], 0.0).astype(get_aval(lu).dtype)
        return y.at[i].set(y[i] - matmul(coeffs, y))

    y = fori_loop(0, n, forward, y)

    def backward(j, x):  # U x = y, from the last row up
        i = n - 1 - j
        coeffs = enp.where(enp.greater(rows, i), lu[i], 0.0).astype(get_aval(lu).dtype)
        return x.at[i].set((x[i] - matmul(coeffs, x)) / lu[i, i])

    return fori_loop(0, n, backward, y)


def solve(a: Any, b: Any) -> Any:
    """The solution ``x`` of ``a @ x = b`` (``b`` a vector or a matrix of columns)."""
    a = _float_matrix(a, "solve")
    b = manipulation.astype(creation.asarray(b), get_aval(a).dtype)

    def single(a1, b1):
        lu, perm, _ = _lu_single(a1)
        return _lu_solve_single(lu, perm, b1)

    return _batched(single, a, b)


def inv(a: Any) -> Any:
    a = _float_matrix(a, "inv")
    n = get_aval(a).shape[-1]

    def single(a1):
        lu, perm, _ = _lu_single(a1)
        return _lu_solve_single(lu, perm, _eye(n, get_aval(a1).dtype))

    return _batched(single, a)


def slogdet(a: Any, *, method: str | None = None) -> tuple[Any, Any]:
    """(sign, log|det|) of square matrices. ``method`` names JAX's factorisation ('lu' or
    'qr'); ember always factorises by LU, which gives the same values."""
    if method not in (None, "lu", "qr"):
        raise ValueError(
            f"Unknown slogdet method {method!r}. Supported methods are 'lu' (None), and 'qr'."
            f"{errors.where()}"
        )
    a = _float_matrix(a, "slogdet")

    def single(a1):
        lu, _, parity = _lu_single(a1)
        diagonal = _diag(lu)
        sign = parity * reductions.prod(enp.sign(diagonal))
        return sign, reductions.sum(enp.log(enp.abs(diagonal)))

    return _batched(single, a)


def det(a: Any) -> Any:
    a = _float_matrix(a, "det")

    def single(a1):
        lu, _, parity = _lu_single(a1)
        return parity * reductions.prod(_diag(lu))

    return _batched(single, a)


def _diag(m: Any) -> Any:
    n = min(get_aval(m).shape[-2:])
    return m[_iota_np(n), _iota_np(n)]


def _iota_np(n: int) -> np.ndarray:
    return np.arange(n, dtype=np.int32)


# --------------------------------------------------------------------------------------------
# Cholesky


def cholesky(a: Any, *, upper: bool = False, symmetrize_input: bool = True) -> Any:
    """The lower-triangular ``L`` with ``L @ L^H = a`` (``upper=True``: its transpose).
    ``symmetrize_input`` factorises ``(a + a^H) / 2``, as JAX does by default; without it
    only the lower triangle of ``a`` is read."""
    a = _float_matrix(a, "cholesky")
    if symmetrize_input:
        a = _symmetrized(a)

    def single(a1):
        n = get_aval(a1).shape[0]
        rows = _iota(n)
        dtype = get_aval(a1).dtype

        def step(j, lower):
            left = enp.where(enp.less(rows, j), lower[j], 0.0).astype(dtype)
            d = enp.sqrt(a1[j, j] - reductions.sum(left * enp.conjugate(left)))
            column = (a1[:, j] - matmul(lower, enp.conjugate(left))) / d
            column = enp.where(enp.greater(rows, j), column, 0.0).astype(dtype)
            column = enp.where(enp.equal(rows, j), d, column).astype(dtype)
            return lower.at[:, j].set(column)

        return fori_loop(0, n, step, creation.zeros_like(a1))

    lower = _batched(single, a)
    return manipulation.swapaxes(enp.conjugate(lower), -1, -2) if upper else lower


def _symmetrized(a: Any) -> Any:
    """``(a + a^H) / 2``: the Hermitian part, so rounding asymmetry cannot skew a result."""
    half = np.asarray(0.5, get_aval(a).dtype)
    return (a + enp.conjugate(manipulation.swapaxes(a, -1, -2))) * half


# --------------------------------------------------------------------------------------------
# Norms and small helpers


def _vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    x = creation.asarray(x)
    if not dtypes.is_inexact(get_aval(x).dtype):
        x = manipulation.astype(x, dtypes.default_float())
    magnitude = enp.abs(x)
    if ord == 2:
        return enp.sqrt(
            reductions.sum(enp.real(x * enp.conjugate(x)), axis=axis, keepdims=keepdims)
        )
    if ord in (np.inf, "inf"):
        return reductions.max(magnitude, axis=axis, keepdims=keepdims)
    if ord in (-np.inf, "-inf"):
        return reductions.min(magnitude, axis=axis, keepdims=keepdims)
    if ord == 0:
        nonzero = enp.not_equal(magnitude, 0).astype(get_aval(magnitude).dtype)
        return reductions.sum(nonzero, axis=axis, keepdims=keepdims)
    if ord == 1:
        return reductions.sum(magnitude, axis=axis, keepdims=keepdims)
    p = np.asarray(ord, get_aval(magnitude).dtype)
    total = reductions.sum(enp.power(magnitude, p), axis=axis, keepdims=keepdims)
    return enp.power(total, np.asarray(1.0, p.dtype) / p)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    x = _float_matrix(x, "matrix_norm", square=False)
    axes = (-2, -1)
    if ord == "fro":
        return vector_norm(x, axis=axes, keepdims=keepdims)
    if ord in (1, -1):
        sums = reductions.sum(enp.abs(x), axis=-2, keepdims=keepdims)
        pick = reductions.max if ord == 1 else reductions.min
        return pick(sums, axis=-1, keepdims=keepdims)
    if ord in (np.inf, -np.inf):
        sums = reductions.sum(enp.abs(x), axis=-1, keepdims=keepdims)
        pick = reductions.max if ord == np.inf else reductions.min
        return pick(sums, axis=-2 if keepdims else -1, keepdims=keepdims)
    if ord in (2, -2, "nuc"):
        s = svdvals(x)
        if ord == "nuc":
            out = reductions.sum(s, axis=-1)
        else:
            out = (reductions.max if ord == 2 else reductions.min)(s, axis=-1)
        return manipulation.expand_dims(manipulation.expand_dims(out, -1), -1) if keepdims else out
    raise ValueError(f"matrix_norm: unsupported ord {ord!r}")


def _norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """``numpy.linalg.norm``."""
    x = creation.asarray(x)
    ndim = get_aval(x).ndim
    if axis is None:
        if ord is None:
            return vector_norm(x, axis=None, keepdims=keepdims)
        axis = tuple(range(ndim))
    if isinstance(axis, int) or (isinstance(axis, tuple) and len(axis) == 1):
        return vector_norm(x, axis=axis, keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axis) == 2:
        moved = manipulation.moveaxis(x, axis, (-2, -1))
        out = matrix_norm(moved, ord="fro" if ord is None else ord)
        if keepdims:
            for a in sorted(a % ndim for a in axis):
                out = manipulation.expand_dims(out, a)
        return out
    raise ValueError(f"norm: axis must be an int or a pair, got {axis!r}")


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    return reductions.sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    x = creation.asarray(x)
    shape = get_aval(x).shape
    rows, cols = shape[-2], shape[-1]
    start_row, start_col = (0, offset) if offset >= 0 else (-offset, 0)
    length = max(0, min(rows - start_row, cols - start_col))
    i = np.arange(length, dtype=np.int32)
    return x[..., i + start_row, i + start_col]


def outer(x1: Any, x2: Any, /) -> Any:
    x1, x2 = creation.asarray(x1), creation.asarray(x2)
    return manipulation.reshape(x1, (-1, 1)) * manipulation.reshape(x2, (1, -1))


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    x1, x2 = (
        manipulation.moveaxis(creation.asarray(x1), axis, -1),
        manipulation.moveaxis(creation.asarray(x2), axis, -1),
    )
    if get_aval(x1).shape[-1] != 3 or get_aval(x2).shape[-1] != 3:
        raise ValueError(f"cross: vectors of length 3 are needed{errors.where()}")
    a0, a1, a2 = x1[..., 0], x1[..., 1], x1[..., 2]
    b0, b1, b2 = x2[..., 0], x2[..., 1], x2[..., 2]
    out = manipulation.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return manipulation.moveaxis(out, -1, axis)


def matrix_power(a: Any, n: int) -> Any:
    a = _float_matrix(a, "matrix_power") if n < 0 else creation.asarray(a)
    if n < 0:
        a, n = inv(a), -n
    size = get_aval(a).shape[-1]
    result = manipulation.broadcast_to(_eye(size, get_aval(a).dtype), get_aval(a).shape)
    base = a
    while n:
        if n & 1:
            result = matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


def matrix_transpose(x: Any, /) -> Any:
    return manipulation.swapaxes(creation.asarray(x), -1, -2)


def svdvals(x: Any) -> Any:
    return svd(x, compute_uv=False)


def pinv(a: Any, rtol: Any = None, hermitian: bool = False, *, rcond: Any = None) -> Any:
    """Moore-Penrose pseudo-inverse; ``rcond`` is the older name of ``rtol``. ``hermitian``
    only lets JAX use a faster factorisation; the result is the same."""
    if rcond is not None:
        if rtol is not None:
            raise ValueError(f"pinv: only one of rtol and rcond may be specified.{errors.where()}")
        rtol = rcond
    a = _float_matrix(a, "pinv", square=False)
    m, n = get_aval(a).shape[-2:]
    u, s, vh = svd(a, full_matrices=False)
    if rtol is None:
        rtol = max(m, n) * float(dtypes.finfo(get_aval(s).dtype).eps)
    cutoff = reductions.max(s, axis=-1, keepdims=True) * _real_scalar(rtol, s)
    inverse = enp.where(enp.greater(s, cutoff), 1.0 / enp.where(enp.greater(s, 0), s, 1.0), 0.0)
    inverse = inverse.astype(get_aval(s).dtype)
    return matmul(_h(vh) * inverse[..., None, :], _h(u))


def _real_scalar(value: Any, like: Any) -> Any:
    """A tolerance (host number, array or traced) in the dtype of the singular values."""
    return creation.asarray(value).astype(get_aval(like).dtype)


def matrix_rank(M: Any, rtol: Any = None, *, hermitian: bool = False, tol: Any = None) -> Any:
    """Number of singular values above the tolerance (``hermitian`` only lets JAX use a
    faster factorisation; the result is the same)."""
    a = _float_matrix(M, "matrix_rank", square=False)
    s = svdvals(a)
    m, n = get_aval(a).shape[-2:]
    if tol is None:
        rtol = max(m, n) * float(dtypes.finfo(get_aval(s).dtype).eps) if rtol is None else rtol
        threshold = reductions.max(s, axis=-1, keepdims=True) * _real_scalar(rtol, s)
    else:
        threshold = _real_scalar(tol, s)
    return reductions.sum(enp.greater(s, threshold), axis=-1, dtype=np.int32)


# --------------------------------------------------------------------------------------------
# QR (Householder)


def _qr_single(a: Any, complete: bool = False) -> tuple[Any, Any]:
    m, n = get_aval(a).shape
    k = min(m, n)
    dtype = get_aval(a).dtype
    rows = _iota(m)

    def step(j, state):
        q, r = state
        x = enp.where(enp.greater_equal(rows, j), r[:, j], 0.0).astype(dtype)
        norm_x = enp.sqrt(reductions.sum(enp.real(x * enp.conjugate(x))))
        lead = r[j, j]
        sign = enp.where(enp.equal(lead, 0), 1.0, lead / enp.abs(lead)).astype(dtype)
        alpha = -sign * norm_x
        v = x - enp.where(enp.equal(rows, j), alpha, 0.0).astype(dtype)
        v_norm = enp.sqrt(reductions.sum(enp.real(v * enp.conjugate(v))))
        v = enp.where(enp.equal(v_norm, 0), 0.0, v / enp.where(enp.equal(v_norm, 0), 1.0, v_norm))
        v = v.astype(dtype)
        r = r - 2.0 * v[:, None] * matmul(enp.conjugate(v), r)[None, :]
        q = q - 2.0 * matmul(q, v)[:, None] * enp.conjugate(v)[None, :]
        return q, r

    q, r = fori_loop(0, k, step, (_eye(m, dtype), a))
    r = enp.where(enp.greater(rows[:, None], _iota(n)[None, :]), 0.0, r).astype(dtype)
    return (q, r) if complete else (q[:, :k], r[:k])


def qr(a: Any, mode: str = "reduced") -> Any:
    """Householder QR: ``a = q @ r``; ``mode`` is "reduced", "complete" or "r"."""
    a = _float_matrix(a, "qr", square=False)
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    q, r = _batched(lambda x: _qr_single(x, complete=mode == "complete"), a)
    return r if mode == "r" else (q, r)


# --------------------------------------------------------------------------------------------
# eigh (cyclic Jacobi) and the SVD built on it

_JACOBI_SWEEPS = 12  # quadratic convergence: float32 is converged well before this


def _is_complex(x: Any) -> bool:
    return get_aval(x).dtype.kind == "c"


def _conj(x: Any) -> Any:
    return enp.conjugate(x) if _is_complex(x) else x


def _h(x: Any) -> Any:
    """The conjugate transpose of a matrix (or a stack)."""
    return _conj(matrix_transpose(x))


def _jacobi_rotation(app: Any, aqq: Any, apq: Any, dtype: np.dtype) -> tuple[Any, Any]:
    """(c, w) of the unitary J = [[c, w], [-conj(w), c]] that diagonalises the Hermitian
    2x2 [[app, apq], [conj(apq), aqq]] as J^H B J (app, aqq real; c real).

    For a complex apq = |apq| e^{i phi}, J = P R P^H with P = diag(1, e^{-i phi}) and R the
    real rotation of the real symmetric P^H B P = [[app, |apq|], [|apq|, aqq]]: w = s e^{i phi}.
    """
    real = dtypes.real_dtype(dtype)
    one = np.asarray(1.0, real)
    magnitude = enp.abs(apq) if dtype.kind == "c" else apq
    tiny = enp.abs(magnitude) <= np.asarray(np.finfo(real).tiny, real)
    safe = enp.where(tiny, one, magnitude)
    theta = (aqq - app) / (2.0 * safe)
    t = enp.sign(theta) / (enp.abs(theta) + enp.sqrt(theta * theta + one))
    t = enp.where(enp.equal(theta, 0), one, t)
    c = enp.where(tiny, one, one / enp.sqrt(t * t + one))
    s = enp.where(tiny, np.asarray(0.0, real), t * c)
    if dtype.kind != "c":
        return c, s
    phase = enp.where(tiny, np.asarray(1.0, dtype), apq / safe.astype(dtype)).astype(dtype)
    return c, s.astype(dtype) * phase


def _rotate_columns(x: Any, p: Any, q: Any, c: Any, w: Any) -> Any:
    """x <- x J for J = [[c, w], [-conj(w), c]] acting on columns p and q."""
    xp, xq = x[:, p], x[:, q]
    return x.at[:, p].set(c * xp - _conj(w) * xq).at[:, q].set(w * xp + c * xq)


def _eigh_single(a: Any) -> tuple[Any, Any]:
    n = get_aval(a).shape[0]
    dtype = get_aval(a).dtype
    a = (a + _h(a)) * np.asarray(0.5, dtype)  # use the Hermitian part
    if n == 1:
        return manipulation.reshape(enp.real(a), (1,)), creation.ones((1, 1), dtype)
    pairs = np.array([(p, q) for p in range(n) for q in range(p + 1, n)], np.int32)
    schedule_p = np.tile(pairs[:, 0], _JACOBI_SWEEPS)
    schedule_q = np.tile(pairs[:, 1], _JACOBI_SWEEPS)
    sp, sq = creation.asarray(schedule_p), creation.asarray(schedule_q)

    def rotate(i, state):
        m, v = state
        p, q = sp[i], sq[i]
        app, aqq, apq = enp.real(m[p, p]), enp.real(m[q, q]), m[p, q]
        c, w = _jacobi_rotation(app, aqq, apq, dtype)
        # m <- J^H m J with J the rotation in the (p, q) plane
        row_p, row_q = m[p], m[q]
        m = m.at[p].set(c * row_p - w * row_q).at[q].set(_conj(w) * row_p + c * row_q)
        m = _rotate_columns(m, p, q, c, w)
        return m, _rotate_columns(v, p, q, c, w)

    m, v = fori_loop(0, len(schedule_p), rotate, (a, _eye(n, dtype)))
    values = enp.real(_diag(m))
    order = argsort(values)
    return values[order], v[:, order]


@custom_jvp
def _eigh_differentiable(a: Any) -> tuple[Any, Any]:
    return _eigh_single(a)


@_eigh_differentiable.defjvp
def _eigh_jvp(primals, tangents):
    """dw_i = Re(v_i^H dA v_i); dV = V (F * V^H dA V), F_ij = 1 / (w_j - w_i) off the diagonal
    (JAX's rule; for complex input the eigenvectors' phases are a gauge this fixes by
    v_i^H dv_i = 0). Differentiating through the Jacobi rotations instead would divide by
    vanishing off-diagonal entries."""
    (a,), (da,) = primals, tangents
    w, v = _eigh_single(a)
    dtype = get_aval(da).dtype
    da = (da + _h(da)) * np.asarray(0.5, dtype)
    vdv = matmul(_h(v), matmul(da, v))
    gaps = w[None, :] - w[:, None]
    same = enp.equal(gaps, 0)
    f = enp.where(same, 0.0, 1.0 / enp.where(same, 1.0, gaps)).astype(get_aval(w).dtype)
    dw = enp.real(_diag(vdv))
    dv = matmul(v, f.astype(dtype) * vdv)
    return (w, v), (dw, dv)


def eigh(a: Any, UPLO: str = "L", symmetrize_input: bool = True) -> tuple[Any, Any]:
    """Eigenvalues (ascending, real) and eigenvectors (columns) of symmetric or Hermitian
    matrices."""
    a = _float_matrix(a, "eigh")
    return _batched(_eigh_differentiable, a)


def eigvalsh(a: Any, UPLO: str | None = "L", *, symmetrize_input: bool = True) -> Any:
    return eigh(a, UPLO, symmetrize_input)[0]


def _svd_single(a: Any) -> tuple[Any, Any, Any]:
    """One-sided (Hestenes) Jacobi on a tall matrix: rotate column pairs until orthogonal;
    the column norms are the singular values (small ones accurate to working precision).
    Returns (u with orthogonal columns, sigma, v) with ``a @ v = u``, unsorted."""
    m, n = get_aval(a).shape
    dtype = get_aval(a).dtype
    if n == 1:
        return a, creation.ones((1, 1), dtype)
    pairs = np.array([(p, q) for p in range(n) for q in range(p + 1, n)], np.int32)
    sp = creation.asarray(np.tile(pairs[:, 0], _JACOBI_SWEEPS))
    sq = creation.asarray(np.tile(pairs[:, 1], _JACOBI_SWEEPS))

    def rotate(i, state):
        u, v = state
        p, q = sp[i], sq[i]
        up, uq = u[:, p], u[:, q]
        alpha = enp.real(reductions.sum(_conj(up) * up))
        beta = enp.real(reductions.sum(_conj(uq) * uq))
        gamma = reductions.sum(_conj(up) * uq)
        c, w = _jacobi_rotation(alpha, beta, gamma, dtype)
        return _rotate_columns(u, p, q, c, w), _rotate_columns(v, p, q, c, w)

    return fori_loop(0, int(sp.shape[0]), rotate, (a, _eye(n, dtype)))


def _svd_tall(a: Any, full_matrices: bool, compute_uv: bool = True) -> Any:
    """(U, s, Vh) of one tall (m >= n) matrix, s descending. Columns of U whose singular value
    is zero (and, for ``full_matrices``, the m - n extra ones) complete an orthonormal basis,
    taken from a Householder QR of the others."""
    m, n = get_aval(a).shape
    dtype = get_aval(a).dtype
    real = dtypes.real_dtype(dtype)
    u, v = _svd_single(a)
    sigma = enp.sqrt(reductions.sum(enp.real(_conj(u) * u), axis=0))
    order = argsort(-sigma)
    sigma, u, v = sigma[order], u[:, order], v[:, order]
    if not compute_uv:
        return sigma
    keep = enp.greater(sigma, np.asarray(np.finfo(real).tiny, real))
    safe = enp.where(keep, sigma, np.asarray(1.0, real)).astype(dtype)
    u = enp.where(keep[None, :], u / safe[None, :], np.asarray(0.0, dtype)).astype(dtype)
    basis, _ = _qr_single(stop_gradient(u), complete=True)
    u = enp.where(keep[None, :], u, basis[:, :n]).astype(dtype)
    if full_matrices and m > n:
        u = manipulation.concatenate([u, basis[:, n:]], axis=1)
    return u, sigma, _h(v)


def svd(
    a: Any,
    full_matrices: bool = True,
    compute_uv: bool = True,
    hermitian: bool = False,
    subset_by_index: tuple[int, int] | None = None,
):
    """Singular values (descending, real) and vectors (``a = u * s @ vh``, u and vh unitary) by
    one-sided Jacobi rotations. ``subset_by_index`` is TPU-only in JAX and not supported."""
    if subset_by_index is not None:
        raise NotImplementedError(f"svd: subset_by_index= is not supported{errors.where()}")
    a = _float_matrix(a, "svd", square=False)
    m, n = get_aval(a).shape[-2:]
    if m < n:
        result = svd(matrix_transpose(a), full_matrices, compute_uv)
        if not compute_uv:
            return result
        u, s, vh = result
        return matrix_transpose(vh), s, matrix_transpose(u)
    return _batched(lambda x: _svd_tall(x, full_matrices, compute_uv), a)


# --------------------------------------------------------------------------------------------
# Called eagerly, each factorisation runs as one program compiled once per shape. Without this
# every eager call would trace its loops anew, and a new loop body is a new XLA compilation
# (hundreds of milliseconds). Under a transformation they are traced in place as before.

solve = jit(solve, inline=True)
inv = jit(inv, inline=True)
slogdet = jit(slogdet, inline=True, static_argnames="method")
det = jit(det, inline=True)
cholesky = jit(cholesky, inline=True, static_argnames=("upper", "symmetrize_input"))
qr = jit(qr, inline=True, static_argnames="mode")
eigh = jit(eigh, inline=True, static_argnames=("UPLO", "symmetrize_input"))
eigvalsh = jit(eigvalsh, inline=True, static_argnames=("UPLO", "symmetrize_input"))
svd = jit(
    svd,
    inline=True,
    static_argnames=("full_matrices", "compute_uv", "hermitian", "subset_by_index"),
)
svdvals = jit(svdvals, inline=True)
pinv = jit(pinv, inline=True, static_argnames="hermitian")
_norm_compiled = jit(_norm, inline=True, static_argnames=("ord", "axis", "keepdims"))
_vector_norm_compiled = jit(
    lambda x, axis, keepdims, ord: _vector_norm(x, axis=axis, keepdims=keepdims, ord=ord),
    inline=True,
    static_argnums=(1, 2, 3),
)
matrix_norm = jit(matrix_norm, inline=True, static_argnames=("keepdims", "ord"))


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """Vector or matrix norm, as ``numpy.linalg.norm`` (one compiled program eagerly)."""
    return _norm_compiled(x, ord, _static_axis(axis), keepdims)


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    """The array API's vector norm (one compiled program eagerly)."""
    return _vector_norm_compiled(x, _static_axis(axis), keepdims, ord)


def _static_axis(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, list) else axis


matrix_rank = jit(matrix_rank, inline=True, static_argnames="hermitian")
