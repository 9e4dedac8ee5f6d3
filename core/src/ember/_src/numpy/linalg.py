"""``ember.numpy.linalg``, written over ember's own operations.

The factorisations live one layer down, in ``lax``; this module gives them NumPy's signatures
and results:

- the ``lu`` primitive (partial pivoting) and ``triangular_solve`` back ``solve``, ``inv``,
  ``det`` and ``slogdet``; ``cholesky`` and ``qr`` bind their primitives. Platforms override
  these primitives (the CPU plugin with LAPACK); their generic lowerings are ember's loops.
- ``eigh`` and ``svd`` (and everything built on the SVD: ``pinv``, ``matrix_rank``,
  ``norm(ord=2|-2|'nuc')``, ``cond``, ``lstsq``) bind the ``eigh`` and ``svd`` primitives
  (``lax.linalg``): cyclic and one-sided Jacobi generically, LAPACK where a platform
  overrides them, with JAX's analytic derivatives.

Stacks of matrices (leading batch axes) are handled by the primitives or by ``vmap``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.lax import linalg as lax_linalg, linalg_factor_solves as factor_solves
from ember._src.lax.linalg_factor_primitives import cholesky_p, lu_p
from ember._src.lax.linalg_jacobi import SVDResult
from ember._src.lax.linalg_operands import (
    check_matrix,
    conj_transpose,
    float_matrix,
    identity_matrix,
    inexact_dtype,
    symmetrized,
)
from ember._src.lax.linalg_qr import QRResult
from ember._src.lax.linalg_qr_primitives import qr_p
from ember._src.numpy import creation, diagonals, elementwise as enp, manipulation, reductions
from ember._src.numpy.contractions import matmul
from ember._src.transforms.jit import jit

# --------------------------------------------------------------------------------------------
# Results, named as JAX names them (they unpack as tuples and are pytrees like any namedtuple)


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


# --------------------------------------------------------------------------------------------
# Helpers


def _float_matrix(a: Any, what: str, square: bool = True) -> Any:
    return float_matrix(creation.asarray(a), what, square)


# --------------------------------------------------------------------------------------------
# LU with partial pivoting


def lu_factor(a: Any) -> tuple[Any, Any]:
    """(packed LU, pivots as a permutation) with ``a[perm] = L @ U``."""
    a = _float_matrix(a, "lu_factor")
    lu, _, permutation = lu_p.bind(a)
    return lu, permutation


def solve(a: Any, b: Any) -> Any:
    """The solution ``x`` of ``a @ x = b`` (``b`` a vector or a matrix of columns)."""
    a, b = _solve_operands(a, b)
    vector = get_aval(b).ndim == get_aval(a).ndim - 1
    x = factor_solves.solve(a, b[..., None] if vector else b)
    return x[..., 0] if vector else x


def _solve_operands(a: Any, b: Any) -> tuple[Any, Any]:
    """``a`` and ``b`` in their common inexact dtype (as JAX promotes them), with broadcast
    batch axes. As in NumPy 2 and JAX, a 1-d ``b`` is one vector for every matrix; otherwise
    ``b`` holds (a stack of) n-row matrices of columns."""
    a, b = _float_matrix(a, "solve"), creation.asarray(b)
    dtype = inexact_dtype(dtypes.promote([_dtype_and_weak(a), _dtype_and_weak(b)])[0])
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
    shape = get_aval(a).shape
    identity = identity_matrix(shape[-1], get_aval(a).dtype)
    return factor_solves.solve(a, manipulation.broadcast_to(identity, shape))


def slogdet(a: Any, *, method: str | None = None) -> tuple[Any, Any]:
    """(sign, log|det|) of square matrices. ``method`` names JAX's factorisation ('lu' or
    'qr'); ember always factorises by LU, which gives the same values."""
    if method not in (None, "lu", "qr"):
        raise ValueError(
            f"Unknown slogdet method {method!r}. Supported methods are 'lu' (None), and 'qr'."
            f"{errors.where()}"
        )
    a = _float_matrix(a, "slogdet")
    diagonal, parity = factor_solves.lu_det_parts(a)
    parity = manipulation.astype(parity, get_aval(diagonal).dtype)
    sign = parity * reductions.prod(enp.sign(diagonal), axis=-1)
    return SlogdetResult(sign, reductions.sum(enp.log(enp.abs(diagonal)), axis=-1))


def det(a: Any) -> Any:
    a = _float_matrix(a, "det")
    diagonal, parity = factor_solves.lu_det_parts(a)
    parity = manipulation.astype(parity, get_aval(diagonal).dtype)
    return parity * reductions.prod(diagonal, axis=-1)


# --------------------------------------------------------------------------------------------
# Cholesky


def cholesky(a: Any, *, upper: bool = False, symmetrize_input: bool = True) -> Any:
    """The lower-triangular ``L`` with ``L @ L^H = a`` (``upper=True``: its transpose).
    ``symmetrize_input`` factorises ``(a + a^H) / 2``, as JAX does by default; without it
    only the lower triangle of ``a`` is read."""
    a = _float_matrix(a, "cholesky")
    lower = cholesky_p.bind(symmetrized(a) if symmetrize_input else a)
    return manipulation.swapaxes(enp.conjugate(lower), -1, -2) if upper else lower


# --------------------------------------------------------------------------------------------
# Norms and small helpers


def _vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    x = creation.asarray(x)
    x = manipulation.astype(x, inexact_dtype(get_aval(x).dtype))
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
    x = manipulation.astype(x, inexact_dtype(get_aval(x).dtype))
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
    check_matrix(get_aval(a).shape, "matrix_power")
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
    result = manipulation.broadcast_to(identity_matrix(size, get_aval(a).dtype), get_aval(a).shape)
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
    return matmul(conj_transpose(vh) * inverse[..., None, :], conj_transpose(u))


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


def qr(a: Any, mode: str = "reduced") -> Any:
    """Householder QR: ``a = q @ r``; ``mode`` is "reduced", "complete" or "r"."""
    a = _float_matrix(a, "qr", square=False)
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(
            f"qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}{errors.where()}"
        )
    q, r = qr_p.bind(a, pivoting=False, full_matrices=mode == "complete", use_magma=None)
    return r if mode == "r" else QRResult(q, r)


# --------------------------------------------------------------------------------------------
# eigh (cyclic Jacobi) and the SVD built on it


def eigh(a: Any, UPLO: str | None = None, symmetrize_input: bool = True) -> EighResult:
    """Eigenvalues (ascending, real) and eigenvectors (columns) of symmetric or Hermitian
    matrices. With ``symmetrize_input`` (JAX's default) the Hermitian part ``(a + a^H) / 2``
    is factorised; without it only the triangle ``UPLO`` names ('L', the default, or 'U')
    is read, as LAPACK does."""
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {UPLO!r}{errors.where()}")
    v, w = lax_linalg.eigh(
        _float_matrix(a, "eigh"), lower=UPLO != "U", symmetrize_input=symmetrize_input
    )
    return EighResult(w, v)


def eigvalsh(a: Any, UPLO: str | None = None, *, symmetrize_input: bool = True) -> Any:
    return eigh(a, UPLO, symmetrize_input)[0]


def svd(
    a: Any,
    full_matrices: bool = True,
    compute_uv: bool = True,
    hermitian: bool = False,
    subset_by_index: tuple[int, int] | None = None,
):
    """Singular values (descending, real) and vectors (``a = u * s @ vh``, u and vh unitary).
    ``subset_by_index=(lo, hi)`` keeps singular values lo..hi-1 (and their vectors, with
    ``full_matrices=False``)."""
    result = lax_linalg.svd(
        _float_matrix(a, "svd", square=False),
        full_matrices=full_matrices,
        compute_uv=compute_uv,
        subset_by_index=subset_by_index,
    )
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
