"""The real Schur form of one real matrix (LAPACK ``gees``'s form): the generic lowering of
the ``schur`` primitive for real operands.

The Francis double-shift QR algorithm on the real Hessenberg form: each step chases a bulge
down the active window with Givens rotations, so conjugate eigenvalue pairs converge as 2 x 2
diagonal blocks without complex arithmetic. A bottom 2 x 2 block with real eigenvalues is
split by one rotation; one with complex eigenvalues is final, rotated to LAPACK's standard
form (equal diagonal entries). A matrix the iteration does not finish within LAPACK's budget
comes back as NaN.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes
from ember._src.lax.linalg_eig import (
    ITERATIONS_PER_EIGENVALUE,
    const,
    dtype_of,
    givens,
    hessenberg_householder,
    maximum,
    minimum,
    nan_unless,
    rotate_columns,
    rotate_rows,
    shape_of,
    stack,
    unit_scaled,
)
from ember._src.lax.linalg_operands import (
    identity_matrix,
    main_diagonal,
    positions,
    static_fori,
    where_broadcast,
)
from ember._src.lax.slicing import full
from ember._src.primitives.control_flow.loops import while_loop
from ember._src.primitives.indexing import dynamic_slice_op, dynamic_update_slice_op
from ember._src.primitives.math_functions import sqrt
from ember._src.primitives.slicing import concatenate

_EXCEPTIONAL_SHIFT_EVERY = 10  # LAPACK's ad-hoc shift breaks the rare cycles of Francis steps


def _index(i: Any) -> Any:
    """Slice starts must share one dtype: int32."""
    return i.astype(np.int32) if hasattr(i, "astype") else np.int32(i)


def _entry(m: Any, i: Any, j: Any) -> Any:
    return dynamic_slice_op(m, (_index(i), _index(j)), (1, 1))[0, 0]


def _similarity(h: Any, z: Any, row: Any, c: Any, s: Any) -> tuple[Any, Any]:
    """h <- G h G^T with G rotating rows ``row``, ``row + 1``; z <- z G^T."""
    h = rotate_columns(rotate_rows(h, row, c, s), row, c, s)
    return h, rotate_columns(z, row, c, s)


def _masked_givens(active: Any, x: Any, y: Any) -> tuple[Any, Any]:
    c, s = givens(x, y)
    dtype = dtype_of(x)
    return where_broadcast(active, c, const(1, dtype)), where_broadcast(active, s, const(0, dtype))


def _window(h: Any, finished: Any) -> tuple[Any, Any, Any]:
    """Zero negligible subdiagonal entries; return (h, lo, hi) of the bottom unreduced block
    not yet final (hi = 0 when none is left). ``finished[i]`` marks row i's subdiagonal entry
    as the inside of a final 2 x 2 block."""
    n = shape_of(h)[0]
    dtype = dtype_of(h)
    on_subdiagonal = np.eye(n, k=-1, dtype=bool)
    subdiagonal = where_broadcast(on_subdiagonal, h, const(0, dtype)).sum(axis=1)
    diagonal = abs(main_diagonal(h))
    above = concatenate([full((1,), 0, dtype), diagonal[:-1]], 0)
    eps, tiny = dtypes.finfo(dtype).eps, dtypes.finfo(dtype).tiny
    threshold = maximum((diagonal + above) * const(eps, dtype), const(tiny, dtype))
    negligible = abs(subdiagonal) <= threshold  # row i: h[i, i - 1]
    h = where_broadcast(on_subdiagonal & negligible[:, None], const(0, dtype), h)
    row = positions(n)
    open_rows = ~(negligible | finished)
    hi = where_broadcast(open_rows, row, np.int32(0)).max()
    lo = where_broadcast(negligible & (row <= hi), row, np.int32(0)).max()
    return h, lo.astype(np.int32), hi.astype(np.int32)


def _francis_step(h: Any, z: Any, lo: Any, hi: Any, trace: Any, det: Any) -> tuple[Any, Any]:
    """One implicit double-shift step on the window h[lo:hi+1, lo:hi+1] (at least 3 x 3) with
    the shifts that are the roots of ``x^2 - trace x + det``."""
    n = shape_of(h)[0]
    h00, h01 = _entry(h, lo, lo), _entry(h, lo, lo + 1)
    h10, h11, h21 = _entry(h, lo + 1, lo), _entry(h, lo + 1, lo + 1), _entry(h, lo + 2, lo + 1)
    # the first column of (h - s1)(h - s2): the step makes it a multiple of e_lo
    x = h00 * h00 + h01 * h10 - trace * h00 + det
    y = h10 * (h00 + h11 - trace)
    w = h10 * h21
    always = hi >= lo
    c, s = _masked_givens(always, y, w)
    h, z = _similarity(h, z, lo + 1, c, s)
    y = c * y + s * w
    c, s = _masked_givens(always, x, y)
    h, z = _similarity(h, z, lo, c, s)

    def chase(k, state):
        # the bulge sits in column j: h[j + 2, j] and h[j + 3, j]
        h, z = state
        j = _index(lo + k)
        active = j <= hi - 2
        deep = active & (j + 3 <= hi)
        row = minimum(j + 2, np.int32(n - 2))
        column = minimum(j, np.int32(n - 1))
        c, s = _masked_givens(deep, _entry(h, row, column), _entry(h, row + 1, column))
        h, z = _similarity(h, z, row, c, s)
        row = minimum(j + 1, np.int32(n - 2))
        c, s = _masked_givens(active, _entry(h, row, column), _entry(h, row + 1, column))
        return _similarity(h, z, row, c, s)

    return static_fori(0, n - 2, chase, (h, z))


def _equal_diagonal_rotation(a: Any, b: Any, c: Any, d: Any) -> tuple[Any, Any]:
    """(cos, sin) of the rotation that gives a 2 x 2 block with complex eigenvalues equal
    diagonal entries: LAPACK's standard form (dlanv2), so T's blocks look like LAPACK's."""
    dtype = dtype_of(a)
    sigma = b + c
    tau = sqrt(sigma * sigma + (a - d) * (a - d))
    usable = tau > 0
    safe_tau = where_broadcast(usable, tau, const(1, dtype))
    cos = sqrt(const(0.5, dtype) * (1 + abs(sigma) / safe_tau))
    sign = where_broadcast(sigma >= 0, const(1, dtype), const(-1, dtype))
    sin = -((a - d) * const(0.5, dtype) / (safe_tau * cos)) * sign
    return where_broadcast(usable, cos, const(1, dtype)), where_broadcast(
        usable, sin, const(0, dtype)
    )


def _finish_pair(h: Any, z: Any, lo: Any) -> tuple[Any, Any, Any]:
    """The bottom 2 x 2 block at (lo, lo) is final: with real eigenvalues, triangularise it;
    with complex ones, bring it to equal diagonal entries. Returns (h, z, complex_pair)."""
    dtype = dtype_of(h)
    a, b = _entry(h, lo, lo), _entry(h, lo, lo + 1)
    c, d = _entry(h, lo + 1, lo), _entry(h, lo + 1, lo + 1)
    p = (a - d) * const(0.5, dtype)
    discriminant = p * p + b * c
    real_pair = discriminant >= 0
    root = sqrt(maximum(discriminant, const(0, dtype)))
    # (mu - d, c) with mu the eigenvalue farther from d is an eigenvector without cancellation
    far = p + where_broadcast(p >= 0, root, -root)
    split_cos, split_sin = givens(far, c)
    equal_cos, equal_sin = _equal_diagonal_rotation(a, b, c, d)
    cos = where_broadcast(real_pair, split_cos, equal_cos)
    sin = where_broadcast(real_pair, split_sin, equal_sin)
    h, z = _similarity(h, z, lo, cos, sin)
    # rounding the rotations leave: below the diagonal of a split block, and between the
    # diagonal entries of a complex one
    block = dynamic_slice_op(h, (lo, lo), (2, 2))
    mean = (block[0, 0] + block[1, 1]) * const(0.5, dtype)
    diagonal = where_broadcast(real_pair, main_diagonal(block), stack([mean, mean]))
    below = where_broadcast(real_pair, const(0, dtype), block[1, 0])
    block = stack([stack([diagonal[0], block[0, 1]]), stack([below, diagonal[1]])])
    h = dynamic_update_slice_op(h, block, (lo, lo))
    return h, z, ~real_pair


def _schur_real_iteration(a: Any) -> tuple[Any, Any, Any]:
    """(t, z, converged) for one real matrix of unit scale, n >= 2."""
    n = shape_of(a)[0]
    dtype = dtype_of(a)
    h, z = hessenberg_householder(a)
    budget = ITERATIONS_PER_EIGENVALUE * max(n, 10)
    finished = full((n,), False, np.bool_)

    def unfinished(state):
        _, _, _, iteration, _, hi = state
        return (hi > 0) & (iteration < budget)

    def iterate(state):
        h, z, finished, iteration, lo, hi = state
        top = maximum(hi - 1, np.int32(0))
        corner = dynamic_slice_op(h, (top, top), (2, 2))
        trace = corner[0, 0] + corner[1, 1]
        det = corner[0, 0] * corner[1, 1] - corner[0, 1] * corner[1, 0]
        # LAPACK's exceptional shift (dlahqr) from the last two subdiagonal entries
        spread = abs(corner[1, 0]) + abs(_entry(h, hi - 1, maximum(hi - 2, np.int32(0))))
        centre = corner[1, 1] + const(0.75, dtype) * spread
        exceptional = (iteration % _EXCEPTIONAL_SHIFT_EVERY) == _EXCEPTIONAL_SHIFT_EVERY - 1
        trace = where_broadcast(exceptional, 2 * centre, trace)
        det = where_broadcast(
            exceptional, centre * centre + const(0.4375, dtype) * spread * spread, det
        )
        pair = (hi - lo) == 1
        stepped_h, stepped_z = _francis_step(h, z, lo, hi, trace, det)
        split_h, split_z, complex_pair = _finish_pair(h, z, lo)
        h = where_broadcast(pair, split_h, stepped_h)
        z = where_broadcast(pair, split_z, stepped_z)
        finished = finished | (pair & complex_pair & (positions(n) == hi))
        h, lo, hi = _window(h, finished)
        return h, z, finished, iteration + 1, lo, hi

    h, lo, hi = _window(h, finished)
    state = (h, z, finished, np.int32(0), lo, hi)
    h, z, finished, _, _, hi = while_loop(unfinished, iterate, state)
    kept = np.triu(np.ones((n, n), bool)) | (np.eye(n, k=-1, dtype=bool) & finished[:, None])
    return where_broadcast(kept, h, const(0, dtype)), z, hi == 0


def real_schur_single(a: Any) -> tuple[Any, Any]:
    """(t, z) for one real square matrix: t quasi upper triangular, ``a = z t z^T``; NaN when
    the iteration did not converge."""
    n = shape_of(a)[0]
    if n <= 1:
        return a, identity_matrix(n, dtype_of(a))
    scaled, scale = unit_scaled(a)
    t, z, converged = _schur_real_iteration(scaled)
    return nan_unless(converged, t * scale), nan_unless(converged, z)
