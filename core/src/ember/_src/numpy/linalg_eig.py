"""``ember.numpy.linalg``'s general (non-symmetric) eigenproblem: ``eig`` and ``eigvals``.

``eig`` and ``eigvals`` work in complex arithmetic (so real matrices with complex eigenvalues
need nothing special): a Householder reduction to Hessenberg form, then the shifted QR
algorithm (single Wilkinson shifts applied with Givens rotations, deflating small subdiagonal
entries) as a ``while_loop`` with a fixed budget, which leaves the triangular Schur form
``T = Z^H A Z``. Eigenvectors are back-substituted from ``T`` and mapped back through ``Z``.
Derivatives come from the analytic rules (custom_jvp), never from the iteration.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ember._src import dtypes
from ember._src.lax.linalg_operands import (
    batched,
    identity_matrix,
    main_diagonal,
    positions,
    static_fori,
)
from ember._src.numpy import creation, elementwise as enp, manipulation, reductions
from ember._src.numpy.contractions import matmul
from ember._src.numpy.linalg import (
    _float_matrix,
    solve,
)
from ember._src.numpy.operands import dtype_of, shape_of
from ember._src.primitives.control_flow.loops import while_loop
from ember._src.primitives.indexing import dynamic_slice_op, dynamic_update_slice_op
from ember._src.transforms.custom_derivatives import custom_jvp
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


def hessenberg_householder(a: Any) -> tuple[Any, Any]:
    """(h, q) with ``a = q h q^H``, h upper Hessenberg and q unitary (Householder reflectors
    zero column k below its subdiagonal, one column at a time)."""
    n = shape_of(a)[0]
    dtype = dtype_of(a)
    rows = positions(n)

    def reflect(k, state):
        h, q = state
        column = dynamic_slice_op(h, (0, k), (n, 1))[:, 0]
        x = enp.where(enp.greater(rows, k), column, _const(0, dtype))
        # the reflector does not depend on x's scale: unit scale keeps |x|^2 out of the
        # subnormals, where a nearly reduced column would give a non-unitary reflector
        largest = reductions.max(enp.abs(x))
        x = _safe_divide(x, largest.astype(dtype))
        length = enp.sqrt(reductions.sum(_abs2(x)))
        lead = reductions.sum(enp.where(enp.equal(rows, k + 1), x, _const(0, dtype)))
        phase = enp.where(enp.equal(lead, 0), _const(1, dtype), _safe_divide(lead, enp.abs(lead)))
        # v = x + phase |x| e_{k+1}: adding (not subtracting) avoids cancellation
        v = x + enp.where(enp.equal(rows, k + 1), phase * length, _const(0, dtype))
        v = _safe_divide(v, enp.sqrt(reductions.sum(_abs2(v))).astype(dtype))
        two_v = v * _const(2, dtype)
        h = h - two_v[:, None] * matmul(enp.conjugate(v), h)[None, :]
        h = h - matmul(h, v)[:, None] * enp.conjugate(two_v)[None, :]
        q = q - matmul(q, v)[:, None] * enp.conjugate(two_v)[None, :]
        return h, q

    h, q = static_fori(0, max(n - 2, 0), reflect, (a, identity_matrix(n, dtype)))
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
    block = dynamic_slice_op(m, (k, 0), (2, n))
    top, bottom = block[0], block[1]
    new_top = c * top + s * bottom
    new_bottom = enp.conjugate(c) * bottom - enp.conjugate(s) * top
    return dynamic_update_slice_op(m, manipulation.stack([new_top, new_bottom]), (k, 0))


def _rotate_columns(m: Any, k: Any, c: Any, s: Any) -> Any:
    """m <- m G^H on columns k, k + 1."""
    n = shape_of(m)[0]
    block = dynamic_slice_op(m, (0, k), (n, 2))
    left, right = block[:, 0], block[:, 1]
    new_left = enp.conjugate(c) * left + enp.conjugate(s) * right
    new_right = c * right - s * left
    return dynamic_update_slice_op(m, manipulation.stack([new_left, new_right], axis=1), (0, k))


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
        pair = dynamic_slice_op(h, (row, row), (2, 1))
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


def schur_complex(a: Any) -> tuple[Any, Any]:
    """(t, z): t upper triangular, z unitary, ``a = z t z^H`` (complex a, n >= 2)."""
    n = shape_of(a)[0]
    dtype = dtype_of(a)
    real = dtypes.real_dtype(dtype)
    h, z = hessenberg_householder(a)
    budget = _ITERATIONS_PER_EIGENVALUE * max(n, 10)

    def unfinished(state):
        _, _, iteration, _, hi = state
        return enp.logical_and(enp.greater(hi, 0), enp.less(iteration, budget))

    def iterate(state):
        h, z, iteration, lo, hi = state
        top = enp.maximum(hi - 1, 0)
        corner = dynamic_slice_op(h, (top, top), (2, 2))
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


def unit_scaled(a: Any) -> tuple[Any, Any]:
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
    scaled, scale = unit_scaled(a)
    t, _ = schur_complex(scaled)
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
        t_row = dynamic_slice_op(t, (i, 0), (1, n))[0]
        row = enp.where(right_of_i, t_row, _const(0, dtype))
        diagonal = reductions.sum(enp.where(enp.equal(columns, i), t_row, _const(0, dtype)))
        pivot = diagonal - w
        pivot = enp.where(enp.less(enp.abs(pivot), smallest), smallest.astype(dtype), pivot)
        value = enp.where(right_of_i, -matmul(row, x) / pivot, _const(0, dtype))
        value = enp.where(enp.equal(columns, i), _const(1, dtype), value)
        return dynamic_update_slice_op(x, value[None, :], (i, 0))

    return static_fori(0, n - 1, solve_row, identity_matrix(n, dtype))


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
    scaled, scale = unit_scaled(a)
    t, z = schur_complex(scaled)
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


# --------------------------------------------------------------------------------------------
# Condition numbers


# --------------------------------------------------------------------------------------------
# Chained and tensor products


# --------------------------------------------------------------------------------------------
# Polynomial roots
