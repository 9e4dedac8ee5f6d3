"""The rest of ``ember.numpy.linalg``: general eigenproblems, least squares, condition numbers,
chained and tensor products; and ``ember.numpy.roots``.

``eig`` and ``eigvals`` work in complex arithmetic (so real matrices with complex eigenvalues
need nothing special): a Householder reduction to Hessenberg form, then the shifted QR
algorithm (single Wilkinson shifts applied with Givens rotations, deflating small subdiagonal
entries) as a ``while_loop`` with a fixed budget, which leaves the triangular Schur form
``T = Z^H A Z``. Eigenvectors are back-substituted from ``T`` and mapped back through ``Z``.
Derivatives come from the analytic rules (custom_jvp), never from the iteration.

``lstsq`` uses the SVD with the pseudo-inverse's derivative; the rest compose ``solve``,
``inv``, ``svd`` and ``matmul``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import get_aval
from ember._src.lax.linalg_operands import (
    batched,
    conj_transpose,
    identity,
    inexact_dtype,
    main_diagonal,
    positions,
    static_fori,
)
from ember._src.numpy import creation, elementwise as enp, manipulation, reductions
from ember._src.numpy.contractions import matmul
from ember._src.numpy.linalg import (
    _float_matrix,
    inv,
    norm,
    solve,
    svd,
    svdvals,
)
from ember._src.numpy.util import dtype_of, promote_dtypes, shape_of
from ember._src.primitives.control_flow.loops import while_loop
from ember._src.primitives.custom_derivatives import custom_jvp
from ember._src.primitives.indexing import dynamic_slice, dynamic_update_slice
from ember._src.transforms.jit import jit

# --------------------------------------------------------------------------------------------
# Small helpers


def _const(value: Any, dtype: Any) -> np.ndarray:
    return np.asarray(value, dtype)


def _abs2(x: Any) -> Any:
    """|x|^2 for real or complex x, without the square root of ``abs``."""
    return enp.real(x * enp.conjugate(x))


def _complex_matrix(a: Any, what: str) -> Any:
    """Square matrices (or a stack) as complex: the eigenproblem's working dtype."""
    a = _float_matrix(a, what)
    return manipulation.astype(a, dtypes.complex_dtype(dtypes.real_dtype(dtype_of(a))))


def _safe_divide(numerator: Any, denominator: Any) -> Any:
    """numerator / denominator, and 0 where the denominator is 0 (no nan for later masks)."""
    zero = enp.equal(denominator, 0)
    safe = enp.where(zero, _const(1, dtype_of(denominator)), denominator)
    return enp.where(zero, _const(0, dtype_of(numerator)), numerator / safe)


# --------------------------------------------------------------------------------------------
# Hessenberg reduction and the Schur form


def _hessenberg(a: Any) -> tuple[Any, Any]:
    """(h, q) with ``a = q h q^H``, h upper Hessenberg and q unitary (Householder reflectors
    zero column k below its subdiagonal, one column at a time)."""
    n = shape_of(a)[0]
    dtype = dtype_of(a)
    rows = positions(n)

    def reflect(k, state):
        h, q = state
        column = dynamic_slice(h, (0, k), (n, 1))[:, 0]
        x = enp.where(enp.greater(rows, k), column, _const(0, dtype))
        length = enp.sqrt(reductions.sum(_abs2(x)))
        lead = reductions.sum(enp.where(enp.equal(rows, k + 1), column, _const(0, dtype)))
        phase = enp.where(enp.equal(lead, 0), _const(1, dtype), _safe_divide(lead, enp.abs(lead)))
        # v = x + phase |x| e_{k+1}: adding (not subtracting) avoids cancellation
        v = x + enp.where(enp.equal(rows, k + 1), phase * length, _const(0, dtype))
        v = _safe_divide(v, enp.sqrt(reductions.sum(_abs2(v))).astype(dtype))
        two_v = v * _const(2, dtype)
        h = h - two_v[:, None] * matmul(enp.conjugate(v), h)[None, :]
        h = h - matmul(h, v)[:, None] * enp.conjugate(two_v)[None, :]
        q = q - matmul(q, v)[:, None] * enp.conjugate(two_v)[None, :]
        return h, q

    h, q = static_fori(0, max(n - 2, 0), reflect, (a, identity(n, dtype)))
    below_subdiagonal = np.tril(np.ones((n, n), bool), -2)
    return enp.where(below_subdiagonal, _const(0, dtype), h), q


def _givens(x: Any, y: Any) -> tuple[Any, Any]:
    """(c, s) of the unitary G = [[c, s], [-conj(s), conj(c)]] with G [x, y] = [r, 0]."""
    dtype = dtype_of(x)
    scale = enp.maximum(enp.abs(x), enp.abs(y))
    nonzero = enp.greater(scale, 0)
    safe_scale = enp.where(nonzero, scale, _const(1, scale.dtype)).astype(dtype)
    xs, ys = x / safe_scale, y / safe_scale
    r = enp.sqrt(_abs2(xs) + _abs2(ys)).astype(dtype)
    safe_r = enp.where(nonzero, r, _const(1, dtype))
    c = enp.where(nonzero, enp.conjugate(xs) / safe_r, _const(1, dtype))
    s = enp.where(nonzero, enp.conjugate(ys) / safe_r, _const(0, dtype))
    return c, s


def _rotate_rows(m: Any, k: Any, c: Any, s: Any) -> Any:
    """m <- G m on rows k, k + 1 (one dynamic slice in, one out: cheap to compile)."""
    n = shape_of(m)[1]
    block = dynamic_slice(m, (k, 0), (2, n))
    top, bottom = block[0], block[1]
    new_top = c * top + s * bottom
    new_bottom = enp.conjugate(c) * bottom - enp.conjugate(s) * top
    return dynamic_update_slice(m, manipulation.stack([new_top, new_bottom]), (k, 0))


def _rotate_columns(m: Any, k: Any, c: Any, s: Any) -> Any:
    """m <- m G^H on columns k, k + 1."""
    n = shape_of(m)[0]
    block = dynamic_slice(m, (0, k), (n, 2))
    left, right = block[:, 0], block[:, 1]
    new_left = enp.conjugate(c) * left + enp.conjugate(s) * right
    new_right = c * right - s * left
    return dynamic_update_slice(m, manipulation.stack([new_left, new_right], axis=1), (0, k))


def _qr_step(h: Any, z: Any, shift: Any, lo: Any, hi: Any) -> tuple[Any, Any]:
    """One explicitly shifted QR step on the active window h[lo:hi+1, lo:hi+1]:
    h - shift I = G^H R, h <- R G^H + shift I; the rotations act on whole rows and columns
    (and on z) so that ``a = z h z^H`` keeps holding for the full matrix.

    Step k applies row rotation k, then column rotation k - 1: rotation k is chosen from
    column k, which column rotation k - 1 would change, and the two commute otherwise."""
    n = shape_of(h)[0]
    dtype = dtype_of(h)
    index = positions(n)
    in_window = enp.logical_and(enp.greater_equal(index, lo), enp.less_equal(index, hi))
    diagonal_shift = enp.where(in_window, shift, _const(0, dtype))
    h = h - creation.eye(n, dtype=dtype) * diagonal_shift[None, :]

    def rotate(k, state):
        h, z, c_before, s_before = state
        row = enp.minimum(k, n - 2)  # the last step only finishes the columns
        active = enp.logical_and(enp.greater_equal(k, lo), enp.less(k, hi))
        pair = dynamic_slice(h, (row, row), (2, 1))
        c, s = _givens(pair[0, 0], pair[1, 0])
        c = enp.where(active, c, _const(1, dtype))
        s = enp.where(active, s, _const(0, dtype))
        h = _rotate_rows(h, row, c, s)
        column = enp.maximum(k - 1, 0)  # rotation k - 1 (the identity before the first)
        h = _rotate_columns(h, column, c_before, s_before)
        return h, _rotate_columns(z, column, c_before, s_before), c, s

    identity = (_const(1, dtype), _const(0, dtype))
    h, z, _, _ = static_fori(0, n, rotate, (h, z, *identity))
    return h + creation.eye(n, dtype=dtype) * diagonal_shift[None, :], z


def _wilkinson_shift(a: Any, b: Any, c: Any, d: Any) -> Any:
    """The eigenvalue of [[a, b], [c, d]] nearer d, written without cancellation."""
    delta = (a - d) * _const(0.5, dtype_of(a))
    root = enp.sqrt(delta * delta + b * c)
    plus, minus = delta + root, delta - root
    larger = enp.where(enp.greater_equal(enp.abs(plus), enp.abs(minus)), plus, minus)
    return d - _safe_divide(b * c, larger)


_ITERATIONS_PER_EIGENVALUE = 30  # LAPACK's budget; convergence is typically 2-4 per eigenvalue
_EXCEPTIONAL_SHIFT_EVERY = 10  # breaks the rare cycles of pure Wilkinson shifts


def _active_window(h: Any) -> tuple[Any, Any, Any]:
    """Zero negligible subdiagonal entries; return (h, lo, hi) of the bottom unreduced block
    (hi = 0 when h is triangular). Masks rather than gathers keep the loop cheap to compile."""
    n = shape_of(h)[0]
    dtype = dtype_of(h)
    real = dtypes.real_dtype(dtype)
    on_subdiagonal = np.eye(n, k=-1, dtype=bool)
    subdiagonal = reductions.sum(enp.where(on_subdiagonal, h, _const(0, dtype)), axis=1)
    diagonal = enp.abs(reductions.sum(enp.where(np.eye(n, dtype=bool), h, _const(0, dtype)), 1))
    above = manipulation.concatenate([creation.zeros((1,), real), diagonal[:-1]])
    eps, tiny = dtypes.finfo(real).eps, dtypes.finfo(real).tiny
    threshold = enp.maximum((diagonal + above) * _const(eps, real), _const(tiny, real))
    negligible = enp.less_equal(enp.abs(subdiagonal), threshold)  # row i: h[i, i - 1]
    h = enp.where(enp.logical_and(on_subdiagonal, negligible[:, None]), _const(0, dtype), h)
    row = positions(n)
    no_row = np.int32(0)
    hi = reductions.max(enp.where(negligible, no_row, row))
    lo = reductions.max(enp.where(enp.logical_and(negligible, enp.less_equal(row, hi)), row, 0))
    return h, lo.astype(np.int32), hi


def _schur(a: Any) -> tuple[Any, Any]:
    """(t, z): t upper triangular, z unitary, ``a = z t z^H`` (complex a, n >= 2)."""
    n = shape_of(a)[0]
    dtype = dtype_of(a)
    real = dtypes.real_dtype(dtype)
    h, z = _hessenberg(a)
    budget = _ITERATIONS_PER_EIGENVALUE * max(n, 10)

    def unfinished(state):
        _, _, iteration, _, hi = state
        return enp.logical_and(enp.greater(hi, 0), enp.less(iteration, budget))

    def iterate(state):
        h, z, iteration, lo, hi = state
        top = enp.maximum(hi - 1, 0)
        corner = dynamic_slice(h, (top, top), (2, 2))
        shift = _wilkinson_shift(corner[0, 0], corner[0, 1], corner[1, 0], corner[1, 1])
        exceptional = corner[1, 1] + _const(1.5, real) * enp.abs(corner[1, 0]).astype(dtype)
        every = enp.equal(iteration % _EXCEPTIONAL_SHIFT_EVERY, _EXCEPTIONAL_SHIFT_EVERY - 1)
        shift = enp.where(every, exceptional, shift)
        shift = enp.where(enp.greater(hi, 0), shift, _const(0, dtype))
        h, z = _qr_step(h, z, shift, lo, hi)
        h, lo, hi = _active_window(h)
        return h, z, iteration + 1, lo, hi

    h, lo, hi = _active_window(h)
    h, z, _, _, _ = while_loop(unfinished, iterate, (h, z, np.int32(0), lo, hi))
    upper = np.triu(np.ones((n, n), bool))
    return enp.where(upper, h, _const(0, dtype)), z


# --------------------------------------------------------------------------------------------
# Eigenvalues and eigenvectors of one matrix


def _unit_scale(a: Any) -> tuple[Any, Any]:
    """(a / s, s) with s the largest magnitude in a (1 if that is 0 or not finite), so that
    squared norms inside the iteration neither overflow nor underflow."""
    largest = reductions.max(enp.abs(a))
    usable = enp.logical_and(enp.greater(largest, 0), enp.isfinite(largest))
    scale = enp.where(usable, largest, _const(1, dtype_of(largest))).astype(dtype_of(a))
    return a / scale, scale


def _eigenvalues_single(a: Any) -> Any:
    n = shape_of(a)[0]
    if n <= 1:
        return main_diagonal(a)
    scaled, scale = _unit_scale(a)
    t, _ = _schur(scaled)
    return main_diagonal(t) * scale


def _triangular_eigenvectors(t: Any) -> Any:
    """Upper-triangular x with t x = x diag(t), x[k, k] = 1: back-substitution, one row at a
    time from the bottom. Near-equal eigenvalues get LAPACK's perturbed pivot (eps |w|) so
    repeated eigenvalues give (nearly parallel) finite vectors instead of nan."""
    n = shape_of(t)[0]
    dtype = dtype_of(t)
    real = dtypes.real_dtype(dtype)
    w = main_diagonal(t)
    columns = positions(n)
    finfo = dtypes.finfo(real)
    smallest = enp.maximum(enp.abs(w) * _const(finfo.eps, real), _const(finfo.tiny, real))

    def solve_row(j, x):
        i = n - 2 - j
        right_of_i = enp.greater(columns, i)
        t_row = dynamic_slice(t, (i, 0), (1, n))[0]
        row = enp.where(right_of_i, t_row, _const(0, dtype))
        diagonal = reductions.sum(enp.where(enp.equal(columns, i), t_row, _const(0, dtype)))
        pivot = diagonal - w
        pivot = enp.where(enp.less(enp.abs(pivot), smallest), smallest.astype(dtype), pivot)
        value = enp.where(right_of_i, -matmul(row, x) / pivot, _const(0, dtype))
        value = enp.where(enp.equal(columns, i), _const(1, dtype), value)
        return dynamic_update_slice(x, value[None, :], (i, 0))

    return static_fori(0, n - 1, solve_row, identity(n, dtype))


def _largest_rows(v: Any) -> Any:
    """Where each column's entry of largest magnitude is (the one the gauge makes real)."""
    return reductions.argmax(enp.abs(v), axis=0)


def _pick_rows(m: Any, rows: Any) -> Any:
    """m[rows[j], j] for each column j."""
    chosen = enp.equal(positions(shape_of(m)[0])[:, None], rows[None, :])
    return reductions.sum(enp.where(chosen, m, _const(0, dtype_of(m))), axis=0)


def _normalize_columns(v: Any) -> Any:
    """Unit 2-norm columns whose largest entry is real and positive (LAPACK's convention up
    to that sign)."""
    dtype = dtype_of(v)
    v = v / enp.sqrt(reductions.sum(_abs2(v), axis=0)).astype(dtype)[None, :]
    lead = _pick_rows(v, _largest_rows(v))
    phase = enp.where(enp.equal(lead, 0), _const(1, dtype), _safe_divide(lead, enp.abs(lead)))
    return v * enp.conjugate(phase)[None, :]


def _eig_single(a: Any) -> tuple[Any, Any]:
    n = shape_of(a)[0]
    if n <= 1:
        return main_diagonal(a), creation.ones((n, n), dtype_of(a))
    scaled, scale = _unit_scale(a)
    t, z = _schur(scaled)
    return main_diagonal(t) * scale, _normalize_columns(matmul(z, _triangular_eigenvectors(t)))


def _eig_tangents(a: Any, da: Any) -> tuple[Any, Any, Any, Any]:
    """(w, v, dw, dv): with M = V^-1 dA V, dw = diag(M); dv = V (F * M) with
    F_ij = 1 / (w_j - w_i) off the diagonal, then made to respect the output's gauge (unit
    norm, largest entry real), which fixes the component along each v_i."""
    w, v = _eig_single(a)
    dtype = dtype_of(v)
    m = solve(v, matmul(da, v))
    dw = main_diagonal(m)
    gaps = w[None, :] - w[:, None]
    f = _safe_divide(_const(1, dtype), gaps)
    dv = matmul(v, f * m)
    dv = dv - v * enp.real(reductions.sum(enp.conjugate(v) * dv, axis=0)).astype(dtype)[None, :]
    largest = _largest_rows(v)
    lead_ratio = _pick_rows(dv, largest) / _pick_rows(v, largest)
    rotation = enp.imag(lead_ratio).astype(dtype) * _const(1j, dtype)
    return w, v, dw, dv - v * rotation[None, :]


@custom_jvp
def _eig_differentiable(a: Any) -> tuple[Any, Any]:
    return _eig_single(a)


@_eig_differentiable.defjvp
def _eig_jvp(primals, tangents):
    w, v, dw, dv = _eig_tangents(primals[0], tangents[0])
    return (w, v), (dw, dv)


@custom_jvp
def _eigvals_differentiable(a: Any) -> Any:
    return _eigenvalues_single(a)


@_eigvals_differentiable.defjvp
def _eigvals_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    if shape_of(a)[0] <= 1:
        return main_diagonal(a), main_diagonal(da)
    w, v = _eig_single(a)
    return w, main_diagonal(solve(v, matmul(da, v)))


class EigResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


def eig(a: Any) -> EigResult:
    """Eigenvalues and right eigenvectors (columns, unit 2-norm) of general square matrices,
    always complex. Differentiable; the eigenvectors' derivative assumes distinct eigenvalues.
    """
    a = _complex_matrix(a, "eig")
    if shape_of(a)[-1] == 0:
        return EigResult(creation.zeros(shape_of(a)[:-1], dtype_of(a)), a)
    return EigResult(*_eig_compiled(a))


def eigvals(a: Any) -> Any:
    """Eigenvalues of general square matrices (complex, in no particular order)."""
    return _eigvals_compiled(_complex_matrix(a, "eigvals"))


# one compiled program per shape when called eagerly (inlined under an outer jit)
_eig_compiled = jit(lambda a: batched(_eig_differentiable, a), inline=True)
_eigvals_compiled = jit(lambda a: batched(_eigvals_differentiable, a), inline=True)


# --------------------------------------------------------------------------------------------
# Least squares


def _lstsq_ratio(rcond: Any, dtype: np.dtype, m: int, n: int) -> Any:
    """The relative cutoff on singular values: NumPy's default eps * max(m, n); a negative
    rcond means machine precision."""
    eps = float(dtypes.finfo(dtype).eps)
    if rcond is None:
        return _const(eps * max(m, n), dtype)
    rcond = creation.asarray(rcond, dtype=dtype)
    return enp.where(enp.less(rcond, 0), _const(eps, dtype), rcond)


def _kept_singular_values(s: Any, ratio: Any) -> Any:
    return enp.greater_equal(s, ratio * s[0])


def _truncated_pinv(u: Any, s: Any, vh: Any, ratio: Any) -> Any:
    """The pseudo-inverse from a thin SVD, without the singular values below ratio * largest."""
    keep = _kept_singular_values(s, ratio)
    inverse = enp.where(keep, _safe_divide(_const(1, dtype_of(s)), s), _const(0, dtype_of(s)))
    return matmul(conj_transpose(vh) * inverse.astype(dtype_of(u))[None, :], conj_transpose(u))


@custom_jvp
def _lstsq_solution(a: Any, b: Any, ratio: Any) -> tuple[Any, Any]:
    u, s, vh = svd(a, full_matrices=False)
    return matmul(_truncated_pinv(u, s, vh, ratio), b), s


@_lstsq_solution.defjvp
def _lstsq_solution_jvp(primals, tangents):
    """The pseudo-inverse's derivative (exact while the kept rank does not change):
    dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P; singular values move by
    ds_i = Re(u_i^H dA v_i)."""
    (a, b, ratio), (da, db, _) = primals, tangents
    u, s, vh = svd(a, full_matrices=False)
    p = _truncated_pinv(u, s, vh, ratio)
    m, n = shape_of(a)
    dtype = dtype_of(a)
    dah, ph = conj_transpose(da), conj_transpose(p)
    dp = -matmul(p, matmul(da, p))
    dp = dp + matmul(matmul(p, ph), matmul(dah, identity(m, dtype) - matmul(a, p)))
    dp = dp + matmul(identity(n, dtype) - matmul(p, a), matmul(dah, matmul(ph, p)))
    ds = enp.real(reductions.sum(enp.conjugate(u) * matmul(da, conj_transpose(vh)), axis=0))
    x = matmul(p, b)
    return (x, s), (matmul(dp, b) + matmul(p, db), ds.astype(dtype_of(s)))


def _lstsq_operands(a: Any, b: Any) -> tuple[Any, Any]:
    a, b = promote_dtypes(creation.asarray(a), creation.asarray(b))
    dtype = inexact_dtype(dtype_of(a))
    a, b = manipulation.astype(a, dtype), manipulation.astype(b, dtype)
    if get_aval(a).ndim != 2:
        raise np.linalg.LinAlgError(
            f"lstsq: a must be a matrix, got shape {shape_of(a)}{errors.where()}"
        )
    if get_aval(b).ndim not in (1, 2):
        raise ValueError(
            f"lstsq: b must be a vector or a matrix, got shape {shape_of(b)}{errors.where()}"
        )
    if shape_of(a)[0] != shape_of(b)[0]:
        raise ValueError(
            f"lstsq: a and b need the same number of rows, got shapes {shape_of(a)} and "
            f"{shape_of(b)}{errors.where()}"
        )
    return a, b


def lstsq(
    a: Any, b: Any, rcond: float | None = None, *, numpy_resid: bool = False
) -> tuple[Any, Any, Any, Any]:
    """(x, residuals, rank, singular values) of the least-squares problem min |a x - b|,
    through the SVD. Residuals are the squared column norms of ``b - a x``, always computed
    unless ``numpy_resid`` asks for NumPy's empty array when rank < n or m <= n."""
    a, b = _lstsq_operands(a, b)
    vector = get_aval(b).ndim == 1
    columns = manipulation.reshape(b, (shape_of(b)[0], 1)) if vector else b
    m, n = shape_of(a)
    real = dtypes.real_dtype(dtype_of(a))
    if m == 0 or n == 0:
        x = creation.zeros((n, shape_of(columns)[1]), dtype_of(a))
        s, rank = creation.zeros((0,), real), creation.asarray(0, dtype=dtypes.default_int())
        resid = reductions.sum(_abs2(columns), axis=0)
    else:
        x, resid, rank, s = _lstsq_compiled(a, columns, _lstsq_ratio(rcond, real, m, n))
    if numpy_resid and _numpy_has_no_residuals(rank, m, n):
        resid = creation.zeros((0,), real)
    return (manipulation.reshape(x, (n,)) if vector else x), resid, rank, s


def _lstsq_matrices(a: Any, b: Any, ratio: Any) -> tuple[Any, Any, Any, Any]:
    x, s = _lstsq_solution(a, b, ratio)
    rank = reductions.sum(_kept_singular_values(s, ratio), dtype=dtypes.default_int())
    return x, reductions.sum(_abs2(b - matmul(a, x)), axis=0), rank, s


_lstsq_compiled = jit(_lstsq_matrices, inline=True)


def _numpy_has_no_residuals(rank: Any, m: int, n: int) -> bool:
    if m <= n:
        return True
    if isinstance(rank, core.Tracer):
        raise errors.ConcretizationTypeError(
            f"lstsq with numpy_resid=True needs the rank as a concrete value when a has more "
            f"rows than columns; under jit pass numpy_resid=False{errors.where()}"
        )
    return int(rank) < n


# --------------------------------------------------------------------------------------------
# Condition numbers


_COND_ORDERS = (None, 1, -1, 2, -2, np.inf, -np.inf, "fro", "nuc")


def cond(x: Any, p: Any = None) -> Any:
    """The condition number ``norm(x, p) * norm(inv(x), p)``; for p in (None, 2, -2) the ratio
    of extreme singular values (any shape). nan from a singular matrix becomes inf."""
    if p not in _COND_ORDERS:
        raise ValueError(f"cond: p must be one of {_COND_ORDERS}, got {p!r}{errors.where()}")
    x = _float_matrix(x, "cond", square=p not in (None, 2, -2))
    if 0 in shape_of(x)[-2:]:
        raise ValueError(f"cond: the matrices are empty, shape {shape_of(x)}{errors.where()}")
    return _cond_compiled(x, p)


def _cond(x: Any, p: Any) -> Any:
    if p is None or p == 2:
        s = svdvals(x)
        return s[..., 0] / s[..., -1]
    if p == -2:
        s = svdvals(x)
        ratio = s[..., -1] / s[..., 0]
    else:
        ratio = norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1))
    had_nan = reductions.any(enp.isnan(x), axis=(-2, -1))
    became_nan = enp.logical_and(enp.isnan(ratio), enp.logical_not(had_nan))
    return enp.where(became_nan, _const(np.inf, dtype_of(ratio)), ratio)


_cond_compiled = jit(_cond, static_argnums=1, inline=True)


# --------------------------------------------------------------------------------------------
# Chained and tensor products


def _chain_order(dims: Sequence[int]) -> list[list[int]]:
    """split[i][j]: where the cheapest product of matrices i..j splits (dynamic programming
    over the chain's static dimensions; matrix i is dims[i] x dims[i + 1])."""
    count = len(dims) - 1
    cost = [[0] * count for _ in range(count)]
    split = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            options = [
                (cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1], k)
                for k in range(i, j)
            ]
            cost[i][j], split[i][j] = min(options)
    return split


def multi_dot(arrays: Sequence[Any], *, precision: Any = None) -> Any:
    """``arrays[0] @ arrays[1] @ ...`` in the order with the fewest scalar multiplications;
    the first and last may be vectors."""
    arrays = [creation.asarray(x) for x in arrays]
    if len(arrays) < 2:
        raise ValueError(f"multi_dot: expected at least two arrays, got {len(arrays)}")
    ndims = [get_aval(x).ndim for x in arrays]
    if any(d != 2 for d in ndims[1:-1]) or ndims[0] not in (1, 2) or ndims[-1] not in (1, 2):
        raise ValueError(
            f"multi_dot: the arrays must be matrices (the first and last may be vectors), got "
            f"shapes {[shape_of(x) for x in arrays]}{errors.where()}"
        )
    first_vector, last_vector = ndims[0] == 1, ndims[-1] == 1
    if first_vector:
        arrays[0] = manipulation.reshape(arrays[0], (1, -1))
    if last_vector:
        arrays[-1] = manipulation.reshape(arrays[-1], (-1, 1))
    for left, right in zip(arrays, arrays[1:]):
        if shape_of(left)[1] != shape_of(right)[0]:
            raise ValueError(
                f"multi_dot: shapes {[shape_of(x) for x in arrays]} do not chain{errors.where()}"
            )
    dims = [shape_of(arrays[0])[0]] + [shape_of(x)[1] for x in arrays]
    split = _chain_order(dims)

    def product(i: int, j: int) -> Any:
        if i == j:
            return arrays[i]
        k = split[i][j]
        return matmul(product(i, k), product(k + 1, j), precision=precision)

    out = product(0, len(arrays) - 1)
    rows = () if first_vector else (dims[0],)
    columns = () if last_vector else (dims[-1],)
    return manipulation.reshape(out, rows + columns)


def tensorinv(a: Any, ind: int = 2) -> Any:
    """The inverse of ``a`` read as a linear map from its last axes to its first ``ind``:
    ``tensordot(tensorinv(a, ind), a, ind)`` is the identity."""
    a = creation.asarray(a)
    if not isinstance(ind, (int, np.integer)) or isinstance(ind, bool) or ind <= 0:
        raise ValueError(f"tensorinv: ind must be a positive integer, got {ind!r}")
    shape = shape_of(a)
    outputs, inputs = shape[:ind], shape[ind:]
    if math.prod(outputs) != math.prod(inputs):
        raise ValueError(
            f"tensorinv: the first ind={ind} axes of a (shape {shape}) must have as many "
            f"elements as the others{errors.where()}"
        )
    matrix = manipulation.reshape(a, (math.prod(outputs), math.prod(inputs)))
    return manipulation.reshape(_inv_compiled(matrix), inputs + outputs)


def tensorsolve(a: Any, b: Any, axes: tuple[int, ...] | None = None) -> Any:
    """The x with ``tensordot(a, x, x.ndim) == b``; ``axes`` of ``a`` move to the end first."""
    a, b = creation.asarray(a), creation.asarray(b)
    if axes is not None:
        a = manipulation.moveaxis(a, axes, tuple(range(-len(axes), 0)))
    leading, unknowns = shape_of(a)[: get_aval(b).ndim], shape_of(a)[get_aval(b).ndim :]
    if leading != shape_of(b):
        raise ValueError(
            f"tensorsolve: the leading axes of a {shape_of(a)} must match b's shape "
            f"{shape_of(b)}{errors.where()}"
        )
    if math.prod(leading) != math.prod(unknowns):
        raise ValueError(
            f"tensorsolve: a {shape_of(a)} must have as many unknowns as b {shape_of(b)} has "
            f"equations{errors.where()}"
        )
    matrix = manipulation.reshape(a, (math.prod(leading), math.prod(unknowns)))
    flat = _solve_compiled(matrix, manipulation.reshape(b, (math.prod(leading),)))
    return manipulation.reshape(flat, unknowns)


_inv_compiled = jit(inv, inline=True)
_solve_compiled = jit(solve, inline=True)


# --------------------------------------------------------------------------------------------
# Polynomial roots


def _leading_zero_count(p: Any) -> Any:
    nonzero = enp.not_equal(p, 0)
    return enp.where(
        reductions.any(nonzero), reductions.argmax(nonzero).astype(np.int32), shape_of(p)[0]
    )


def _companion(p: Any, degree: Any) -> Any:
    """The companion matrix of p[0] x^degree + ... + p[degree] (trailing entries of p beyond
    it ignored), in the top-left block of a (len(p) - 1)^2 matrix; the rest is zero and
    decoupled, so its eigenvalues sit at the end of the Schur form's diagonal."""
    size = shape_of(p)[0] - 1
    index = positions(size)
    inside = enp.less(index, degree)
    first_row = enp.where(inside, -p[1:] / p[0], _const(0, dtype_of(p)))
    below = enp.logical_and(enp.equal(index[:, None], index[None, :] + 1), inside[:, None])
    matrix = enp.where(below, _const(1, dtype_of(p)), _const(0, dtype_of(p)))
    return matrix.at[0].set(first_row)


def roots(p: Any, *, strip_zeros: bool = True) -> Any:
    """The roots of the polynomial ``p[0] x^(n-1) + ... + p[n-1]`` (complex), as the
    eigenvalues of its companion matrix. Leading zeros are stripped (which needs concrete
    coefficients); with ``strip_zeros=False`` each leading zero gives a nan root instead."""
    p = creation.asarray(p)
    p = manipulation.astype(p, inexact_dtype(dtype_of(p)))
    if get_aval(p).ndim == 0:
        p = manipulation.reshape(p, (1,))
    if get_aval(p).ndim != 1:
        raise ValueError(f"roots: p must be a vector, got shape {shape_of(p)}{errors.where()}")
    complex_dtype = dtypes.complex_dtype(dtypes.real_dtype(dtype_of(p)))
    if shape_of(p)[0] < 2:
        return creation.zeros((0,), complex_dtype)
    if strip_zeros:
        return _roots_of_concrete(p, complex_dtype)
    leading = _leading_zero_count(p)
    degree = shape_of(p)[0] - 1 - leading
    shifted = manipulation.concatenate([p, creation.zeros_like(p)])
    shifted = shifted[leading + positions(shape_of(p)[0])]
    # only the top-left degree x degree block carries roots; the others are undefined
    found = eigvals(_companion(shifted, degree))
    undefined = enp.greater_equal(positions(shape_of(p)[0] - 1), degree)
    return enp.where(undefined, _const(np.nan + 1j * np.nan, complex_dtype), found)


def _roots_of_concrete(p: Any, complex_dtype: np.dtype) -> Any:
    """Strip leading zeros (they lower the degree) and trailing ones (exact zero roots)."""
    if isinstance(p, core.Tracer):
        raise errors.ConcretizationTypeError(
            f"roots: stripping leading zeros of p needs concrete coefficients; under jit or "
            f"other transformations pass strip_zeros=False (leading zeros then give nan "
            f"roots){errors.where()}"
        )
    nonzero = np.flatnonzero(np.asarray(p) != 0)
    if nonzero.size == 0:
        return creation.zeros((0,), complex_dtype)
    first, last = int(nonzero[0]), int(nonzero[-1])
    trailing = shape_of(p)[0] - 1 - last
    zeros = creation.zeros((trailing,), complex_dtype)
    if last == first:
        return zeros
    core_p = p[first : last + 1]
    found = eigvals(_companion(core_p, last - first))
    return manipulation.concatenate([found, zeros])
