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

from typing import Any, NamedTuple

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import creation, diagonals, elementwise as enp, manipulation, reductions
from ember._src.numpy.contractions import matmul
from ember._src.numpy.sorting import argsort
from ember._src.primitives.control_flow.loops import fori_loop
from ember._src.primitives.stop_gradient import stop_gradient
from ember._src.transforms.custom_derivatives import custom_jvp
from ember._src.transforms.jit import jit
from ember._src.transforms.staging import ShapeDtypeStruct, eval_shape
from ember._src.transforms.vmap import vmap
from ember._src.tree import util as tree_util

# --------------------------------------------------------------------------------------------
# Results, named as JAX names them (they unpack as tuples and are pytrees like any namedtuple)


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class QRResult(NamedTuple):
    Q: Any
    R: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


# --------------------------------------------------------------------------------------------
# Helpers


def _inexact_dtype(dtype: Any) -> np.dtype:
    """The dtype linear algebra works in for ``dtype``, as JAX chooses it: floating and complex
    stay; booleans and integers become float32, but 64-bit integers (which exist only with
    ``enable_x64``) float64."""
    dtype = np.dtype(dtype)
    if dtypes.is_inexact(dtype):
        return dtype
    return dtypes.canonicalize(np.float64 if dtype.itemsize == 8 else np.float32)


def _float_matrix(a: Any, what: str, square: bool = True) -> Any:
    a = creation.asarray(a)
    _check_matrix(get_aval(a).shape, what, square)
    dtype = _inexact_dtype(get_aval(a).dtype)
    return a if dtype == get_aval(a).dtype else manipulation.astype(a, dtype)


def _check_matrix(shape: tuple[int, ...], what: str, square: bool = True) -> None:
    if len(shape) < 2:
        raise np.linalg.LinAlgError(
            f"{what}: expected a matrix (or a stack), got shape {shape}{errors.where()}"
        )
    if square and shape[-1] != shape[-2]:
        raise np.linalg.LinAlgError(
            f"{what}: expected square matrices, got shape {shape}{errors.where()}"
        )


def _batched(fn, a: Any, *rest: Any, core_ndims: tuple[int, ...] = (2,)) -> Any:
    """Apply ``fn`` (written for one matrix) over leading batch axes with vmap."""
    batch = get_aval(a).ndim - core_ndims[0]
    if 0 in get_aval(a).shape[:batch]:
        return _no_matrices(fn, batch, a, *rest)
    for _ in range(batch):
        fn = vmap(fn)
    return fn(a, *rest)


def _no_matrices(fn, batch: int, *operands: Any) -> Any:
    """``fn`` over a stack of no matrices: empty results shaped as ``fn`` of one matrix would
    be (its body never runs, so it is only traced for the shapes)."""
    batch_shape = get_aval(operands[0]).shape[:batch]
    one = [ShapeDtypeStruct(get_aval(x).shape[batch:], get_aval(x).dtype) for x in operands]
    shapes = eval_shape(fn, *one)
    return tree_util.tree_map(lambda s: creation.zeros(batch_shape + s.shape, s.dtype), shapes)


def _iota(n: int) -> Any:
    return creation.arange(n, dtype=np.int32)


def _fori(lower: int, upper: int, body: Any, init: Any) -> Any:
    """``fori_loop`` over static bounds with an int32 index whatever ``enable_x64`` says (so
    the index shares a dtype with the int32 positions it is compared with and slices at). An
    empty range returns ``init`` without tracing ``body``, whose slices need a nonempty
    matrix."""
    if upper <= lower:
        return init
    return fori_loop(np.int32(lower), np.int32(upper), body, init)


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
    return _fori(0, n, step, (a, rows, parity0))


def lu_factor(a: Any) -> tuple[Any, Any]:
    """(packed LU, pivots as a permutation) with ``a[perm] = L @ U``."""
    a = _float_matrix(a, "lu_factor")
    lu, perm, _ = _batched(_lu_single, a)
    return lu, perm


def _lu_solve_single(lu: Any, perm: Any, b: Any) -> Any:
    n = get_aval(lu).shape[0]
    if n == 0:  # nothing to solve (and no row to permute)
        return b
    rows = _iota(n)
    y = b[perm]

    def forward(i, y):  # L y = P b, unit diagonal
        coeffs = enp.where(enp.less(rows, i), lu[i], 0.0).astype(get_aval(lu).dtype)
        return y.at[i].set(y[i] - matmul(coeffs, y))

    y = _fori(0, n, forward, y)

    def backward(j, x):  # U x = y, from the last row up
        i = n - 1 - j
        coeffs = enp.where(enp.greater(rows, i), lu[i], 0.0).astype(get_aval(lu).dtype)
        return x.at[i].set((x[i] - matmul(coeffs, x)) / lu[i, i])

    return _fori(0, n, backward, y)


def solve(a: Any, b: Any) -> Any:
    """The solution ``x`` of ``a @ x = b`` (``b`` a vector or a matrix of columns)."""
    a, b = _solve_operands(a, b)

    def single(a1, b1):
        lu, perm, _ = _lu_single(a1)
        return _lu_solve_single(lu, perm, b1)

    return _batched(single, a, b)


def _solve_operands(a: Any, b: Any) -> tuple[Any, Any]:
    """``a`` and ``b`` in their common inexact dtype (as JAX promotes them), with broadcast
    batch axes. As in NumPy 2 and JAX, a 1-d ``b`` is one vector for every matrix; otherwise
    ``b`` holds (a stack of) n-row matrices of columns."""
    a, b = _float_matrix(a, "solve"), creation.asarray(b)
    dtype = _inexact_dtype(dtypes.promote([_dtype_and_weak(a), _dtype_and_weak(b)])[0])
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    n = a_shape[-1]
    vector = len(b_shape) == 1
    if (b_shape if vector else b_shape[-2:-1]) != (n,):
        raise ValueError(
            f"solve: b of shape {b_shape} does not fit a of shape {a_shape}: b must be a "
            f"vector of {n} values or have {n} rows, shape (..., {n}, k){errors.where()}"
        )
    core = b_shape if vector else b_shape[-2:]
    try:
        batch = np.broadcast_shapes(a_shape[:-2], b_shape[: len(b_shape) - len(core)])
    except ValueError:
        raise ValueError(
            f"solve: the stacks of a {a_shape} and b {b_shape} do not broadcast{errors.where()}"
        ) from None
    a = manipulation.broadcast_to(manipulation.astype(a, dtype), batch + a_shape[-2:])
    return a, manipulation.broadcast_to(manipulation.astype(b, dtype), batch + core)


def _dtype_and_weak(x: Any) -> tuple[np.dtype, bool]:
    return get_aval(x).dtype, get_aval(x).weak_type


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

    return SlogdetResult(*_batched(single, a))


def det(a: Any) -> Any:
    a = _float_matrix(a, "det")

    def single(a1):
        lu, _, parity = _lu_single(a1)
        return parity * reductions.prod(_diag(lu))

    return _batched(single, a)


def _diag(m: Any) -> Any:
    """The main diagonals of a matrix or a stack (empty for empty matrices)."""
    return diagonals.diagonal(m, 0, -2, -1)


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

        return _fori(0, n, step, creation.zeros_like(a1))

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
    x = manipulation.astype(x, _inexact_dtype(get_aval(x).dtype))
    magnitude = enp.abs(x)
    if ord == 2:
        return enp.sqrt(
            reductions.sum(enp.real(x * enp.conjugate(x)), axis=axis, keepdims=keepdims)
        )
    if ord in (np.inf, "inf"):  # 0 for no elements, as in JAX
        return _max_or_zero(magnitude, axis=axis, keepdims=keepdims)
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
        return _extreme(sums, ord == 1, axis=-1, keepdims=keepdims)
    if ord in (np.inf, -np.inf):
        sums = reductions.sum(enp.abs(x), axis=-1, keepdims=keepdims)
        return _extreme(sums, ord == np.inf, axis=-2 if keepdims else -1, keepdims=keepdims)
    if ord in (2, -2, "nuc"):
        s = svdvals(x)
        if ord == "nuc":
            out = reductions.sum(s, axis=-1)
        else:
            out = _extreme(s, ord == 2, axis=-1)
        return manipulation.expand_dims(manipulation.expand_dims(out, -1), -1) if keepdims else out
    raise ValueError(f"matrix_norm: unsupported ord {ord!r}{errors.where()}")


def _extreme(values: Any, largest: bool, **kw: Any) -> Any:
    """The max (0 where there are no values) or the min (an error then) of magnitudes."""
    return _max_or_zero(values, **kw) if largest else reductions.min(values, **kw)


def _max_or_zero(values: Any, **kw: Any) -> Any:
    """The max of magnitudes, 0 where there are none (JAX's answer). With no elements at all,
    a sum gives those zeros in the max's shape without reducing an empty axis by max."""
    if get_aval(values).size == 0:
        return reductions.sum(values, **kw)
    return reductions.max(values, **kw)


def _norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """``numpy.linalg.norm``."""
    x = creation.asarray(x)
    x = manipulation.astype(x, _inexact_dtype(get_aval(x).dtype))
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
    return diagonals.diagonal(x, offset, -2, -1)


def outer(x1: Any, x2: Any, /) -> Any:
    """The outer product of two vectors (the array API's: unlike ``numpy.outer``, arrays of
    other ranks are an error, not flattened)."""
    x1, x2 = creation.asarray(x1), creation.asarray(x2)
    if get_aval(x1).ndim != 1 or get_aval(x2).ndim != 1:
        raise ValueError(
            f"outer: expected two vectors, got shapes {get_aval(x1).shape} and "
            f"{get_aval(x2).shape}{errors.where()}"
        )
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
    a = creation.asarray(a)
    _check_matrix(get_aval(a).shape, "matrix_power")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise errors.EmberTypeError(
            f"matrix_power: n must be an integer, got {n!r}{errors.where()}"
        )
    n = int(n)
    if n < 0:
        a = _float_matrix(a, "matrix_power")
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
    x = creation.asarray(x)
    if get_aval(x).ndim < 2:
        raise ValueError(
            f"matrix_transpose: expected a matrix (or a stack), got shape {get_aval(x).shape}"
            f"{errors.where()}"
        )
    return manipulation.swapaxes(x, -1, -2)


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
    if m == 0 or n == 0:  # the pseudo-inverse of an empty map is the empty map back
        return creation.zeros(get_aval(a).shape[:-2] + (n, m), get_aval(a).dtype)
    u, s, vh = svd(a, full_matrices=False)
    if rtol is None:
        rtol = max(m, n) * float(dtypes.finfo(get_aval(s).dtype).eps)
    cutoff = reductions.max(s, axis=-1, keepdims=True) * _tolerance(rtol, s)
    inverse = enp.where(enp.greater(s, cutoff), 1.0 / enp.where(enp.greater(s, 0), s, 1.0), 0.0)
    inverse = inverse.astype(get_aval(s).dtype)
    return matmul(_h(vh) * inverse[..., None, :], _h(u))


def _tolerance(value: Any, like: Any) -> Any:
    """A tolerance (host number, array or traced) in the dtype of the singular values ``like``,
    with a trailing axis: an array of tolerances holds one per matrix of the batch, so it
    broadcasts against the batch axes, not against the singular values of one matrix."""
    return creation.asarray(value).astype(get_aval(like).dtype)[..., None]


def matrix_rank(M: Any, rtol: Any = None, *, hermitian: bool = False, tol: Any = None) -> Any:
    """Number of singular values above the tolerance (``hermitian`` only lets JAX use a
    faster factorisation; the result is the same)."""
    a = _float_matrix(M, "matrix_rank", square=False)
    m, n = get_aval(a).shape[-2:]
    if m == 0 or n == 0:  # no singular values: rank 0 (as NumPy says)
        return creation.zeros(get_aval(a).shape[:-2], dtypes.default_int())
    s = svdvals(a)
    if tol is None:
        rtol = max(m, n) * float(dtypes.finfo(get_aval(s).dtype).eps) if rtol is None else rtol
        threshold = reductions.max(s, axis=-1, keepdims=True) * _tolerance(rtol, s)
    else:
        threshold = _tolerance(tol, s)
    return reductions.sum(enp.greater(s, threshold), axis=-1, dtype=dtypes.default_int())


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

    q, r = _fori(0, k, step, (_eye(m, dtype), a))
    r = enp.where(enp.greater(rows[:, None], _iota(n)[None, :]), 0.0, r).astype(dtype)
    return (q, r) if complete else (q[:, :k], r[:k])


def qr(a: Any, mode: str = "reduced") -> Any:
    """Householder QR: ``a = q @ r``; ``mode`` is "reduced", "complete" or "r"."""
    a = _float_matrix(a, "qr", square=False)
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(
            f"qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}{errors.where()}"
        )
    q, r = _batched(lambda x: _qr_single(x, complete=mode == "complete"), a)
    return r if mode == "r" else QRResult(q, r)


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
    if n <= 1:  # already diagonal (or empty)
        return manipulation.reshape(enp.real(a), (n,)), creation.ones((n, n), dtype)
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

    m, v = _fori(0, len(schedule_p), rotate, (a, _eye(n, dtype)))
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


def eigh(a: Any, UPLO: str | None = None, symmetrize_input: bool = True) -> EighResult:
    """Eigenvalues (ascending, real) and eigenvectors (columns) of symmetric or Hermitian
    matrices. With ``symmetrize_input`` (JAX's default) the Hermitian part ``(a + a^H) / 2``
    is factorised; without it only the triangle ``UPLO`` names ('L', the default, or 'U')
    is read, as LAPACK does."""
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {UPLO!r}{errors.where()}")
    a = _float_matrix(a, "eigh")
    a = _symmetrized(a) if symmetrize_input else _hermitian_from_triangle(a, UPLO != "U")
    return EighResult(*_batched(_eigh_differentiable, a))


def _hermitian_from_triangle(a: Any, lower: bool) -> Any:
    """The Hermitian matrix whose ``lower`` (or upper) triangle is that of ``a``; the other
    triangle of ``a`` is never read (the diagonal's imaginary part neither)."""
    n = get_aval(a).shape[-1]
    strictly = np.tril(np.ones((n, n), bool), -1) if lower else np.triu(np.ones((n, n), bool), 1)
    zero = np.asarray(0, get_aval(a).dtype)
    triangle = enp.where(strictly, a, zero)
    diagonal = enp.where(np.eye(n, dtype=bool), enp.real(a).astype(get_aval(a).dtype), zero)
    return triangle + _h(triangle) + diagonal


def eigvalsh(a: Any, UPLO: str | None = None, *, symmetrize_input: bool = True) -> Any:
    return eigh(a, UPLO, symmetrize_input)[0]


def _svd_single(a: Any) -> tuple[Any, Any, Any]:
    """One-sided (Hestenes) Jacobi on a tall matrix: rotate column pairs until orthogonal;
    the column norms are the singular values (small ones accurate to working precision).
    Returns (u with orthogonal columns, sigma, v) with ``a @ v = u``, unsorted."""
    m, n = get_aval(a).shape
    dtype = get_aval(a).dtype
    if n <= 1:  # one column (or none) is orthogonal already
        return a, creation.ones((n, n), dtype)
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

    return _fori(0, int(sp.shape[0]), rotate, (a, _eye(n, dtype)))


def _svd_tall(a: Any, full_matrices: bool, compute_uv: bool = True) -> Any:
    """(U, s, Vh) of one tall (m >= n) matrix, s descending. Columns of U whose singular value
    is zero (and, for ``full_matrices``, the m - n extra ones) complete an orthonormal basis,
    taken from a Householder QR of the others."""
    m, n = get_aval(a).shape
    dtype = get_aval(a).dtype
    real = dtypes.real_dtype(dtype)
    if n == 0:  # no singular values; a full U is any orthonormal basis: the identity's
        sigma = creation.zeros((0,), real)
        if not compute_uv:
            return sigma
        u = _eye(m, dtype) if full_matrices else creation.zeros((m, 0), dtype)
        return u, sigma, creation.zeros((0, 0), dtype)
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
        return SVDResult(matrix_transpose(vh), s, matrix_transpose(u))
    result = _batched(lambda x: _svd_tall(x, full_matrices, compute_uv), a)
    return SVDResult(*result) if compute_uv else result


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
    """The array API's vector norm (one compiled program eagerly). Integers and booleans give
    the default float, as in JAX (where ``norm`` keeps JAX's inexact dtype for them instead)."""
    x = creation.asarray(x)
    if not dtypes.is_inexact(get_aval(x).dtype):
        x = manipulation.astype(x, dtypes.default_float())
    return _vector_norm_compiled(x, _static_axis(axis), keepdims, ord)


def _static_axis(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, list) else axis


matrix_rank = jit(matrix_rank, inline=True, static_argnames="hermitian")
