"""The general (non-symmetric) eigenproblem and the complex Schur form, for one matrix: the
generic lowerings of the ``eig`` and ``schur`` primitives.

Complex arithmetic throughout (so real matrices with complex eigenvalues need nothing
special): a Householder reduction to Hessenberg form, then the shifted QR algorithm (single
Wilkinson shifts applied with Givens rotations, deflating small subdiagonal entries) as a
``while_loop`` with LAPACK's budget of iterations, which leaves the triangular Schur form
``T = Z^H A Z``. Eigenvectors are back-substituted from ``T``, mapped back through ``Z`` and
normalised as LAPACK's ``geev`` does (unit 2-norm, largest component real). A matrix the
iteration does not finish within the budget comes back as NaN, as LAPACK's ``info`` makes it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes
from ember._src.core import get_aval
from ember._src.lax import linalg_factor_solves as factor_solves
from ember._src.lax.linalg_operands import (
    conj_if_complex,
    identity_matrix,
    main_diagonal,
    positions,
    real_part,
    static_fori,
    where_broadcast,
)
from ember._src.lax.slicing import full
from ember._src.primitives.arithmetic import imag
from ember._src.primitives.control_flow.loops import while_loop
from ember._src.primitives.indexing import dynamic_slice_op, dynamic_update_slice_op
from ember._src.primitives.math_functions import sqrt
from ember._src.primitives.slicing import concatenate

# --------------------------------------------------------------------------------------------
# Small helpers (shared with the real Schur form)


def const(value: Any, dtype: Any) -> np.ndarray:
    return np.asarray(value, dtype)


def shape_of(x: Any) -> tuple[int, ...]:
    return get_aval(x).shape


def dtype_of(x: Any) -> np.dtype:
    return get_aval(x).dtype


def maximum(x: Any, y: Any) -> Any:
    return where_broadcast(x >= y, x, y)


def minimum(x: Any, y: Any) -> Any:
    return where_broadcast(x <= y, x, y)


def abs2(x: Any) -> Any:
    """|x|^2 for real or complex x, without the square root of ``abs``."""
    return real_part(x * conj_if_complex(x))


def safe_divide(numerator: Any, denominator: Any) -> Any:
    """numerator / denominator, and 0 where the denominator is 0 (no nan for later masks)."""
    zero = denominator == 0
    safe = where_broadcast(zero, const(1, dtype_of(denominator)), denominator)
    return where_broadcast(zero, const(0, dtype_of(numerator)), numerator / safe)


def stack(values: list[Any], axis: int = 0) -> Any:
    """Same-shaped arrays (scalars or vectors) stacked along a new ``axis``."""
    return concatenate([v[None] if axis == 0 else v[:, None] for v in values], axis)


def unit_scaled(a: Any) -> tuple[Any, Any]:
    """(a / s, s) with s the largest magnitude in a (1 if that is 0 or not finite), so that
    squared norms inside the iteration neither overflow nor underflow."""
    largest = abs(a).max()
    usable = (largest > 0) & (largest < np.inf)
    scale = where_broadcast(usable, largest, const(1, dtype_of(largest))).astype(dtype_of(a))
    return a / scale, scale


def nan_unless(ok: Any, x: Any) -> Any:
    """``x``, or NaN everywhere when ``ok`` is false (a failed factorisation)."""
    return where_broadcast(ok, x, const(np.nan, dtype_of(x))).astype(dtype_of(x))


# --------------------------------------------------------------------------------------------
# Hessenberg reduction and the complex Schur form


def hessenberg_householder(a: Any) -> tuple[Any, Any]:
    """(h, q) with ``a = q h q^H``, h upper Hessenberg and q unitary (Householder reflectors
    zero column k below its subdiagonal, one column at a time)."""
    n = shape_of(a)[0]
    dtype = dtype_of(a)
    rows = positions(n)

    def reflect(k, state):
        h, q = state
        column = dynamic_slice_op(h, (0, k), (n, 1))[:, 0]
        x = where_broadcast(rows > k, column, const(0, dtype))
        # the reflector does not depend on x's scale: unit scale keeps |x|^2 out of the
        # subnormals, where a nearly reduced column would give a non-unitary reflector
        x = safe_divide(x, abs(x).max().astype(dtype))
        length = sqrt(abs2(x).sum())
        lead = where_broadcast(rows == k + 1, x, const(0, dtype)).sum()
        phase = where_broadcast(lead == 0, const(1, dtype), safe_divide(lead, abs(lead)))
        # v = x + phase |x| e_{k+1}: adding (not subtracting) avoids cancellation
        v = x + where_broadcast(rows == k + 1, phase * length, const(0, dtype))
        v = safe_divide(v, sqrt(abs2(v).sum()).astype(dtype))
        two_v = v * const(2, dtype)
        h = h - two_v[:, None] * (conj_if_complex(v) @ h)[None, :]
        h = h - (h @ v)[:, None] * conj_if_complex(two_v)[None, :]
        q = q - (q @ v)[:, None] * conj_if_complex(two_v)[None, :]
        return h, q

    h, q = static_fori(0, max(n - 2, 0), reflect, (a, identity_matrix(n, dtype)))
    below_subdiagonal = np.tril(np.ones((n, n), bool), -2)
    return where_broadcast(below_subdiagonal, const(0, dtype), h), q


def givens(x: Any, y: Any) -> tuple[Any, Any]:
    """(c, s) of the unitary G = [[c, s], [-conj(s), conj(c)]] with G [x, y] = [r, 0]."""
    dtype = dtype_of(x)
    scale = maximum(abs(x), abs(y))
    nonzero = scale > 0
    safe_scale = where_broadcast(nonzero, scale, const(1, dtype_of(scale))).astype(dtype)
    xs, ys = x / safe_scale, y / safe_scale
    r = sqrt(abs2(xs) + abs2(ys)).astype(dtype)
    safe_r = where_broadcast(nonzero, r, const(1, dtype))
    c = where_broadcast(nonzero, conj_if_complex(xs) / safe_r, const(1, dtype))
    s = where_broadcast(nonzero, conj_if_complex(ys) / safe_r, const(0, dtype))
    return c, s


def rotate_rows(m: Any, k: Any, c: Any, s: Any) -> Any:
    """m <- G m on rows k, k + 1 (one dynamic slice in, one out: cheap to compile)."""
    n = shape_of(m)[1]
    block = dynamic_slice_op(m, (k, 0), (2, n))
    top, bottom = block[0], block[1]
    new_top = c * top + s * bottom
    new_bottom = conj_if_complex(c) * bottom - conj_if_complex(s) * top
    return dynamic_update_slice_op(m, stack([new_top, new_bottom]), (k, 0))


def rotate_columns(m: Any, k: Any, c: Any, s: Any) -> Any:
    """m <- m G^H on columns k, k + 1."""
    n = shape_of(m)[0]
    block = dynamic_slice_op(m, (0, k), (n, 2))
    left, right = block[:, 0], block[:, 1]
    new_left = conj_if_complex(c) * left + conj_if_complex(s) * right
    new_right = c * right - s * left
    return dynamic_update_slice_op(m, stack([new_left, new_right], axis=1), (0, k))


def _qr_step(h: Any, z: Any, shift: Any, lo: Any, hi: Any) -> tuple[Any, Any]:
    """One explicitly shifted QR step on the active window h[lo:hi+1, lo:hi+1]:
    h - shift I = G^H R, h <- R G^H + shift I; the rotations act on whole rows and columns
    (and on z) so that ``a = z h z^H`` keeps holding for the full matrix.

    Step k applies row rotation k, then column rotation k - 1: rotation k is chosen from
    column k, which column rotation k - 1 would change, and the two commute otherwise."""
    n = shape_of(h)[0]
    dtype = dtype_of(h)
    index = positions(n)
    in_window = (index >= lo) & (index <= hi)
    diagonal_shift = where_broadcast(in_window, shift, const(0, dtype))
    eye = identity_matrix(n, dtype)
    h = h - eye * diagonal_shift[None, :]

    def rotate(k, state):
        h, z, c_before, s_before = state
        row = minimum(k, np.int32(n - 2))  # the last step only finishes the columns
        active = (k >= lo) & (k < hi)
        pair = dynamic_slice_op(h, (row, row), (2, 1))
        c, s = givens(pair[0, 0], pair[1, 0])
        c = where_broadcast(active, c, const(1, dtype))
        s = where_broadcast(active, s, const(0, dtype))
        h = rotate_rows(h, row, c, s)
        column = maximum(k - 1, np.int32(0))  # rotation k - 1 (the identity before the first)
        h = rotate_columns(h, column, c_before, s_before)
        return h, rotate_columns(z, column, c_before, s_before), c, s

    identity = (const(1, dtype), const(0, dtype))
    h, z, _, _ = static_fori(0, n, rotate, (h, z, *identity))
    return h + eye * diagonal_shift[None, :], z


def _wilkinson_shift(a: Any, b: Any, c: Any, d: Any) -> Any:
    """The eigenvalue of [[a, b], [c, d]] nearer d, written without cancellation."""
    delta = (a - d) * const(0.5, dtype_of(a))
    root = sqrt(delta * delta + b * c)
    plus, minus = delta + root, delta - root
    larger = where_broadcast(abs(plus) >= abs(minus), plus, minus)
    return d - safe_divide(b * c, larger)


ITERATIONS_PER_EIGENVALUE = 30  # LAPACK's budget; convergence is typically 2-4 per eigenvalue
_EXCEPTIONAL_SHIFT_EVERY = 10  # breaks the rare cycles of pure Wilkinson shifts


def _active_window(h: Any) -> tuple[Any, Any, Any]:
    """Zero negligible subdiagonal entries; return (h, lo, hi) of the bottom unreduced block
    (hi = 0 when h is triangular). Masks rather than gathers keep the loop cheap to compile."""
    n = shape_of(h)[0]
    dtype = dtype_of(h)
    real = dtypes.real_dtype(dtype)
    on_subdiagonal = np.eye(n, k=-1, dtype=bool)
    subdiagonal = where_broadcast(on_subdiagonal, h, const(0, dtype)).sum(axis=1)
    diagonal = abs(main_diagonal(h))
    above = concatenate([full((1,), 0, real), diagonal[:-1]], 0)
    eps, tiny = dtypes.finfo(real).eps, dtypes.finfo(real).tiny
    threshold = maximum((diagonal + above) * const(eps, real), const(tiny, real))
    negligible = abs(subdiagonal) <= threshold  # row i: h[i, i - 1]
    h = where_broadcast(on_subdiagonal & negligible[:, None], const(0, dtype), h)
    row = positions(n)
    hi = where_broadcast(negligible, np.int32(0), row).max()
    lo = where_broadcast(negligible & (row <= hi), row, np.int32(0)).max()
    return h, lo.astype(np.int32), hi.astype(np.int32)


def schur_complex(a: Any) -> tuple[Any, Any, Any]:
    """(t, z, converged): t upper triangular, z unitary, ``a = z t z^H`` (complex a of unit
    scale, n >= 2); converged is false when the iteration ran out of its budget."""
    n = shape_of(a)[0]
    dtype = dtype_of(a)
    real = dtypes.real_dtype(dtype)
    h, z = hessenberg_householder(a)
    budget = ITERATIONS_PER_EIGENVALUE * max(n, 10)

    def unfinished(state):
        _, _, iteration, _, hi = state
        return (hi > 0) & (iteration < budget)

    def iterate(state):
        h, z, iteration, lo, hi = state
        top = maximum(hi - 1, np.int32(0))
        corner = dynamic_slice_op(h, (top, top), (2, 2))
        shift = _wilkinson_shift(corner[0, 0], corner[0, 1], corner[1, 0], corner[1, 1])
        exceptional = corner[1, 1] + const(1.5, real) * abs(corner[1, 0]).astype(dtype)
        every = (iteration % _EXCEPTIONAL_SHIFT_EVERY) == _EXCEPTIONAL_SHIFT_EVERY - 1
        shift = where_broadcast(every, exceptional, shift)
        shift = where_broadcast(hi > 0, shift, const(0, dtype))
        h, z = _qr_step(h, z, shift, lo, hi)
        h, lo, hi = _active_window(h)
        return h, z, iteration + 1, lo, hi

    h, lo, hi = _active_window(h)
    h, z, _, _, hi = while_loop(unfinished, iterate, (h, z, np.int32(0), lo, hi))
    upper = np.triu(np.ones((n, n), bool))
    return where_broadcast(upper, h, const(0, dtype)), z, hi == 0


def complex_schur_single(a: Any) -> tuple[Any, Any]:
    """(t, z) of one complex square matrix, NaN when the iteration did not converge."""
    n = shape_of(a)[0]
    if n <= 1:
        return a, identity_matrix(n, dtype_of(a))
    scaled, scale = unit_scaled(a)
    t, z, converged = schur_complex(scaled)
    return nan_unless(converged, t * scale), nan_unless(converged, z)


# --------------------------------------------------------------------------------------------
# Eigenvalues and eigenvectors of one matrix


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
    smallest = maximum(abs(w) * const(finfo.eps, real), const(finfo.tiny, real))

    def solve_row(j, x):
        i = n - 2 - j
        right_of_i = columns > i
        t_row = dynamic_slice_op(t, (i, 0), (1, n))[0]
        row = where_broadcast(right_of_i, t_row, const(0, dtype))
        diagonal = where_broadcast(columns == i, t_row, const(0, dtype)).sum()
        pivot = diagonal - w
        pivot = where_broadcast(abs(pivot) < smallest, smallest.astype(dtype), pivot)
        value = where_broadcast(right_of_i, -(row @ x) / pivot, const(0, dtype))
        value = where_broadcast(columns == i, const(1, dtype), value)
        return dynamic_update_slice_op(x, value[None, :], (i, 0))

    return static_fori(0, n - 1, solve_row, identity_matrix(n, dtype))


def largest_rows(v: Any) -> Any:
    """Where each column's entry of largest magnitude is (the one the gauge makes real)."""
    return abs(v).argmax(axis=0).astype(np.int32)


def pick_rows(m: Any, rows: Any) -> Any:
    """m[rows[j], j] for each column j."""
    chosen = positions(shape_of(m)[0])[:, None] == rows[None, :]
    return where_broadcast(chosen, m, const(0, dtype_of(m))).sum(axis=0)


def normalize_columns(v: Any) -> Any:
    """Unit 2-norm columns whose largest entry is real and positive (LAPACK geev's convention
    up to that sign)."""
    dtype = dtype_of(v)
    v = v / sqrt(abs2(v).sum(axis=0)).astype(dtype)[None, :]
    lead = pick_rows(v, largest_rows(v))
    phase = where_broadcast(lead == 0, const(1, dtype), safe_divide(lead, abs(lead)))
    return v * conj_if_complex(phase)[None, :]


def inverse(v: Any) -> Any:
    """v^-1 of one square matrix (through the ``lu`` and ``triangular_solve`` primitives)."""
    return factor_solves.solve(v, identity_matrix(shape_of(v)[0], dtype_of(v)))


def eig_single(a: Any, left: bool, right: bool) -> list[Any]:
    """[w, vl if left, vr if right] of one complex square matrix: eigenvalues, left
    eigenvectors (``vl^H a = w vl^H``) and right ones (``a vr = vr w``) as columns normalised
    as LAPACK's geev does; NaN when the iteration did not converge."""
    n = shape_of(a)[0]
    dtype = dtype_of(a)
    if n <= 1:
        ones = full((n, n), 1, dtype)
        return [main_diagonal(a)] + [ones] * (int(left) + int(right))
    scaled, scale = unit_scaled(a)
    t, z, converged = schur_complex(scaled)
    out = [nan_unless(converged, main_diagonal(t) * scale)]
    if not (left or right):
        return out
    vr = normalize_columns(z @ _triangular_eigenvectors(t))
    if left:  # the rows of vr^-1 are left eigenvectors, in the order of w
        out.append(nan_unless(converged, normalize_columns(conj_if_complex(inverse(vr)).T)))
    if right:
        out.append(nan_unless(converged, vr))
    return out


def eigvec_tangents(w: Any, v: Any, da: Any) -> tuple[Any, Any]:
    """(dw, dv) for right eigenvectors ``v`` (one matrix or a stack) normalised as geev's:
    with M = V^-1 dA V, dw = diag(M); dv = V (F * M) with F_ij = 1 / (w_j - w_i) off the
    diagonal, plus the multiple of each v_i that keeps the gauge (unit norm, largest entry
    real). Valid for distinct eigenvalues."""
    dtype = dtype_of(v)
    m = solve_stack(v, da @ v)
    dw = main_diagonal(m)
    gaps = w[..., None, :] - w[..., :, None]
    f = safe_divide(const(1, dtype), gaps)
    dv = v @ (f * m)
    along = real_part((conj_if_complex(v) * dv).sum(axis=-2)).astype(dtype)
    dv = dv - v * along[..., None, :]
    rows = abs(v).argmax(axis=-2).astype(np.int32)
    chosen = positions(shape_of(v)[-2])[:, None] == rows[..., None, :]
    lead_v = where_broadcast(chosen, v, const(0, dtype)).sum(axis=-2)
    lead_dv = where_broadcast(chosen, dv, const(0, dtype)).sum(axis=-2)
    rotation = imag(lead_dv / lead_v).astype(dtype) * const(1j, dtype)
    return dw, dv - v * rotation[..., None, :]


def eigenvalue_tangents(v: Any, da: Any) -> Any:
    """dw = diag(V^-1 dA V) for the right eigenvectors ``v``."""
    return main_diagonal(solve_stack(v, da @ v))


def solve_stack(a: Any, b: Any) -> Any:
    """x with ``a x = b`` for square matrices (or stacks of them, batch axes alike), through
    the ``lu`` and ``triangular_solve`` primitives."""
    return factor_solves.solve(a, b)
