"""``ember.scipy.linalg``'s Schur forms: ``schur``, ``rsf2csf`` and ``solve_sylvester``.

JAX computes Schur forms through LAPACK; ember has no LAPACK, so both forms are iterations
written over primitives. The complex form is ``ember.numpy.linalg``'s shifted QR algorithm.
The real form is the Francis double-shift QR algorithm on the real Hessenberg form: each step
chases a bulge down the active window with Givens rotations, so conjugate eigenvalue pairs
converge as 2 x 2 diagonal blocks without complex arithmetic. A bottom 2 x 2 block with real
eigenvalues is split by one rotation; one with complex eigenvalues is final, rotated to
LAPACK's standard form (equal diagonal entries).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.lax.linalg_lu import substitute
from ember._src.lax.linalg_operands import (
    float_matrix,
    identity_matrix,
    main_diagonal,
    positions,
    static_fori,
)
from ember._src.numpy import creation, elementwise as enp, linalg as nla, manipulation, reductions
from ember._src.numpy.contractions import matmul
from ember._src.numpy.linalg_eig import (
    _givens,
    _rotate_columns,
    _rotate_rows,
    eig,
    hessenberg_householder,
    schur_complex,
    unit_scaled,
)
from ember._src.numpy.nonzero import where
from ember._src.numpy.operands import promote_to_inexact
from ember._src.primitives.control_flow.loops import fori_loop, while_loop
from ember._src.primitives.indexing import dynamic_slice_op, dynamic_update_slice_op
from ember._src.transforms.jit import jit
from ember._src.transforms.vmap import vmap

_ITERATIONS_PER_EIGENVALUE = 30  # LAPACK's budget; a double step usually needs 2-4
_EXCEPTIONAL_SHIFT_EVERY = 10  # LAPACK's ad-hoc shift breaks the rare cycles of Francis steps


def _shape(x: Any) -> tuple[int, ...]:
    return get_aval(x).shape


def _dtype(x: Any) -> np.dtype:
    return get_aval(x).dtype


def _h(x: Any) -> Any:
    return manipulation.swapaxes(enp.conjugate(x), -1, -2)


def _const(value: Any, dtype: Any) -> np.ndarray:
    return np.asarray(value, dtype)


def _index(i: Any) -> Any:
    """Loop counters are int64 under x64; slice starts must share one dtype: int32."""
    return creation.asarray(i).astype(np.int32)


def _entry(m: Any, i: Any, j: Any) -> Any:
    return dynamic_slice_op(m, (_index(i), _index(j)), (1, 1))[0, 0]


def _broadcast_batch(*arrays: Any) -> list[Any]:
    batch = np.broadcast_shapes(*(_shape(a)[:-2] for a in arrays))
    return [manipulation.broadcast_to(a, batch + _shape(a)[-2:]) for a in arrays]


def _per_matrix(single, *arrays: Any) -> Any:
    for _ in range(len(_shape(arrays[0])) - 2):
        single = vmap(single)
    return single(*arrays)


# --------------------------------------------------------------------------------------------
# The real Schur form


def _similarity(h: Any, z: Any, row: Any, c: Any, s: Any) -> tuple[Any, Any]:
    """h <- G h G^T with G rotating rows ``row``, ``row + 1``; z <- z G^T."""
    h = _rotate_columns(_rotate_rows(h, row, c, s), row, c, s)
    return h, _rotate_columns(z, row, c, s)


def _masked_givens(active: Any, x: Any, y: Any) -> tuple[Any, Any]:
    c, s = _givens(x, y)
    dtype = _dtype(x)
    return where(active, c, _const(1, dtype)), where(active, s, _const(0, dtype))


def _window(h: Any, finished: Any) -> tuple[Any, Any, Any]:
    """Zero negligible subdiagonal entries; return (h, lo, hi) of the bottom unreduced block
    not yet final (hi = 0 when none is left). ``finished[i]`` marks row i's subdiagonal entry
    as the inside of a final 2 x 2 block."""
    n = _shape(h)[0]
    dtype = _dtype(h)
    on_subdiagonal = np.eye(n, k=-1, dtype=bool)
    subdiagonal = reductions.sum(where(on_subdiagonal, h, _const(0, dtype)), axis=1)
    diagonal = enp.abs(main_diagonal(h))
    above = manipulation.concatenate([creation.zeros((1,), dtype), diagonal[:-1]])
    eps, tiny = dtypes.finfo(dtype).eps, dtypes.finfo(dtype).tiny
    threshold = enp.maximum((diagonal + above) * _const(eps, dtype), _const(tiny, dtype))
    negligible = enp.less_equal(enp.abs(subdiagonal), threshold)  # row i: h[i, i - 1]
    h = where(enp.logical_and(on_subdiagonal, negligible[:, None]), _const(0, dtype), h)
    row = positions(n)
    open_rows = enp.logical_not(enp.logical_or(negligible, finished))
    hi = reductions.max(where(open_rows, row, np.int32(0)))
    lo = reductions.max(where(enp.logical_and(negligible, enp.less_equal(row, hi)), row, 0))
    return h, lo.astype(np.int32), hi.astype(np.int32)


def _francis_step(h: Any, z: Any, lo: Any, hi: Any, trace: Any, det: Any) -> tuple[Any, Any]:
    """One implicit double-shift step on the window h[lo:hi+1, lo:hi+1] (at least 3 x 3) with
    the shifts that are the roots of ``x^2 - trace x + det``."""
    n = _shape(h)[0]
    h00, h01 = _entry(h, lo, lo), _entry(h, lo, lo + 1)
    h10, h11, h21 = _entry(h, lo + 1, lo), _entry(h, lo + 1, lo + 1), _entry(h, lo + 2, lo + 1)
    # the first column of (h - s1)(h - s2): the step makes it a multiple of e_lo
    x = h00 * h00 + h01 * h10 - trace * h00 + det
    y = h10 * (h00 + h11 - trace)
    w = h10 * h21
    always = enp.greater_equal(hi, lo)
    c, s = _masked_givens(always, y, w)
    h, z = _similarity(h, z, lo + 1, c, s)
    y = c * y + s * w
    c, s = _masked_givens(always, x, y)
    h, z = _similarity(h, z, lo, c, s)

    def chase(k, state):
        # the bulge sits in column j: h[j + 2, j] and h[j + 3, j]
        h, z = state
        j = _index(lo + k)
        active = enp.less_equal(j, hi - 2)
        deep = enp.logical_and(active, enp.less_equal(j + 3, hi))
        row = enp.minimum(j + 2, n - 2)
        column = enp.minimum(j, n - 1)
        c, s = _masked_givens(deep, _entry(h, row, column), _entry(h, row + 1, column))
        h, z = _similarity(h, z, row, c, s)
        row = enp.minimum(j + 1, n - 2)
        c, s = _masked_givens(active, _entry(h, row, column), _entry(h, row + 1, column))
        return _similarity(h, z, row, c, s)

    return static_fori(0, n - 2, chase, (h, z))


def _equal_diagonal_rotation(a: Any, b: Any, c: Any, d: Any) -> tuple[Any, Any]:
    """(cos, sin) of the rotation that gives a 2 x 2 block with complex eigenvalues equal
    diagonal entries: LAPACK's standard form (dlanv2), so T's blocks look like SciPy's."""
    dtype = _dtype(a)
    sigma = b + c
    tau = enp.sqrt(sigma * sigma + (a - d) * (a - d))
    usable = enp.greater(tau, 0)
    safe_tau = where(usable, tau, _const(1, dtype))
    cos = enp.sqrt(_const(0.5, dtype) * (1 + enp.abs(sigma) / safe_tau))
    sign = where(enp.greater_equal(sigma, 0), _const(1, dtype), _const(-1, dtype))
    sin = -((a - d) * _const(0.5, dtype) / (safe_tau * cos)) * sign
    return where(usable, cos, _const(1, dtype)), where(usable, sin, _const(0, dtype))


def _finish_pair(h: Any, z: Any, lo: Any) -> tuple[Any, Any, Any]:
    """The bottom 2 x 2 block at (lo, lo) is final: with real eigenvalues, triangularise it;
    with complex ones, bring it to equal diagonal entries. Returns (h, z, complex_pair)."""
    dtype = _dtype(h)
    a, b = _entry(h, lo, lo), _entry(h, lo, lo + 1)
    c, d = _entry(h, lo + 1, lo), _entry(h, lo + 1, lo + 1)
    p = (a - d) * _const(0.5, dtype)
    discriminant = p * p + b * c
    real_pair = enp.greater_equal(discriminant, 0)
    root = enp.sqrt(enp.maximum(discriminant, _const(0, dtype)))
    # (mu - d, c) with mu the eigenvalue farther from d is an eigenvector without cancellation
    far = p + where(enp.greater_equal(p, 0), root, -root)
    split_cos, split_sin = _givens(far, c)
    equal_cos, equal_sin = _equal_diagonal_rotation(a, b, c, d)
    cos = where(real_pair, split_cos, equal_cos)
    sin = where(real_pair, split_sin, equal_sin)
    h, z = _similarity(h, z, lo, cos, sin)
    # rounding the rotations leave: below the diagonal of a split block, and between the
    # diagonal entries of a complex one
    block = dynamic_slice_op(h, (lo, lo), (2, 2))
    mean = (block[0, 0] + block[1, 1]) * _const(0.5, dtype)
    diagonal = where(real_pair, main_diagonal(block), manipulation.stack([mean, mean]))
    below = where(real_pair, _const(0, dtype), block[1, 0])
    block = manipulation.stack(
        [manipulation.stack([diagonal[0], block[0, 1]]), manipulation.stack([below, diagonal[1]])]
    )
    h = dynamic_update_slice_op(h, block, (lo, lo))
    return h, z, enp.logical_not(real_pair)


def _schur_real_single(a: Any) -> tuple[Any, Any]:
    n = _shape(a)[0]
    dtype = _dtype(a)
    if n == 1:
        return a, identity_matrix(1, dtype)
    h, z = hessenberg_householder(a)
    budget = _ITERATIONS_PER_EIGENVALUE * max(n, 10)
    finished = creation.zeros((n,), bool)

    def unfinished(state):
        _, _, _, iteration, _, hi = state
        return enp.logical_and(enp.greater(hi, 0), enp.less(iteration, budget))

    def iterate(state):
        h, z, finished, iteration, lo, hi = state
        top = enp.maximum(hi - 1, 0)
        corner = dynamic_slice_op(h, (top, top), (2, 2))
        trace = corner[0, 0] + corner[1, 1]
        det = corner[0, 0] * corner[1, 1] - corner[0, 1] * corner[1, 0]
        # LAPACK's exceptional shift (dlahqr) from the last two subdiagonal entries
        spread = enp.abs(corner[1, 0]) + enp.abs(_entry(h, hi - 1, enp.maximum(hi - 2, 0)))
        centre = corner[1, 1] + _const(0.75, dtype) * spread
        exceptional = enp.equal(iteration % _EXCEPTIONAL_SHIFT_EVERY, _EXCEPTIONAL_SHIFT_EVERY - 1)
        trace = where(exceptional, 2 * centre, trace)
        det = where(exceptional, centre * centre + _const(0.4375, dtype) * spread * spread, det)
        pair = enp.equal(hi - lo, 1)
        stepped_h, stepped_z = _francis_step(h, z, lo, hi, trace, det)
        split_h, split_z, complex_pair = _finish_pair(h, z, lo)
        h = where(pair, split_h, stepped_h)
        z = where(pair, split_z, stepped_z)
        finished = enp.logical_or(
            finished, enp.logical_and(pair & complex_pair, enp.equal(positions(n), hi))
        )
        h, lo, hi = _window(h, finished)
        return h, z, finished, iteration + 1, lo, hi

    h, lo, hi = _window(h, finished)
    state = (h, z, finished, np.int32(0), lo, hi)
    h, z, finished, _, _, _ = while_loop(unfinished, iterate, state)
    kept = np.triu(np.ones((n, n), bool)) | (np.eye(n, k=-1, dtype=bool) & finished[:, None])
    return where(kept, h, _const(0, dtype)), z


def _schur_complex_single(a: Any) -> tuple[Any, Any]:
    if _shape(a)[0] == 1:
        return a, identity_matrix(1, _dtype(a))
    scaled, scale = unit_scaled(a)
    t, z = schur_complex(scaled)
    return t * scale, z


def real_schur_form(a: Any) -> tuple[Any, Any]:
    """(t, z) for one real square matrix: t quasi upper triangular, ``a = z t z^T``."""
    scaled, scale = unit_scaled(a)
    t, z = _schur_real_single(scaled)
    return t * scale, z


def _schur_impl(a: Any) -> tuple[Any, Any]:
    if dtypes.issubdtype(_dtype(a), np.complexfloating):
        return _per_matrix(_schur_complex_single, a)
    return _per_matrix(real_schur_form, a)


_schur = jit(_schur_impl, inline=True)


def schur(a: Any, output: str = "real") -> tuple[Any, Any]:
    """(T, Z) with ``a = Z T Z^H``, Z unitary. ``output='complex'`` (or a complex ``a``): T
    upper triangular. ``output='real'`` on a real ``a``: T quasi upper triangular, with a
    2 x 2 diagonal block for each pair of complex conjugate eigenvalues."""
    if output not in ("real", "complex"):
        raise ValueError(
            f"Expected 'output' to be either 'real' or 'complex', got output={output!r}."
            f"{errors.where()}"
        )
    a = float_matrix(creation.asarray(a), "schur")
    if output == "complex":
        a = a.astype(dtypes.complex_dtype(_dtype(a)))
    if _shape(a)[-1] == 0:
        return a, a
    return _schur(a)


# --------------------------------------------------------------------------------------------
# Real Schur form to complex


def complex_schur_from_real(t: Any, z: Any) -> tuple[Any, Any]:
    """SciPy's algorithm: from the bottom, one rotation per 2 x 2 block zeroes its
    subdiagonal entry, moving one of the pair's (complex) eigenvalues to the top."""
    n = _shape(t)[0]
    dtype = _dtype(t)
    eps = _const(dtypes.finfo(dtype).eps, dtypes.real_dtype(dtype))
    if n == 1:
        return t, z
    columns = positions(n)

    def update(i, state):
        t, z = state
        m = _index(n - i)
        block = dynamic_slice_op(t, (m - 1, m - 1), (2, 2))
        a, b, c, d = block[0, 0], block[0, 1], block[1, 0], block[1, 1]
        half = (a - d) * _const(0.5, dtype)
        # the eigenvalue of the block minus t[m, m], as in SciPy
        mu = half + enp.sqrt(half * half + b * c)
        norm = enp.sqrt(enp.abs(mu) ** 2 + enp.abs(c) ** 2).astype(dtype)
        coupled = enp.greater(enp.abs(c), eps * (enp.abs(a) + enp.abs(d)))
        safe = where(coupled, norm, _const(1, dtype))
        cos = where(coupled, mu / safe, _const(1, dtype))
        sin = where(coupled, c / safe, _const(0, dtype))
        g = manipulation.stack(
            [manipulation.stack([enp.conjugate(cos), sin]), manipulation.stack([-sin, cos])]
        )
        rows = dynamic_slice_op(t, (m - 1, 0), (2, n))
        rows = where(enp.greater_equal(columns, m - 1), matmul(g, rows), rows)
        t = dynamic_update_slice_op(t, rows, (m - 1, 0))
        cols = dynamic_slice_op(t, (0, m - 1), (n, 2))
        cols = where(enp.less(columns, m + 1)[:, None], matmul(cols, _h(g)), cols)
        t = dynamic_update_slice_op(t, cols, (0, m - 1))
        zc = matmul(dynamic_slice_op(z, (0, m - 1), (n, 2)), _h(g))
        z = dynamic_update_slice_op(z, zc, (0, m - 1))
        t = dynamic_update_slice_op(t, creation.zeros((1, 1), dtype), (m, m - 1))
        return t, z

    return fori_loop(1, n, update, (t, z))


_rsf2csf = jit(lambda t, z: _per_matrix(complex_schur_from_real, t, z), inline=True)


def rsf2csf(T: Any, Z: Any, check_finite: bool = True) -> tuple[Any, Any]:
    """The complex Schur form (T, Z) from a real one: T upper triangular, ``Z T Z^H`` kept."""
    del check_finite
    t, z = creation.asarray(T), creation.asarray(Z)
    for name, x in (("T", t), ("Z", z)):
        if len(_shape(x)) < 2 or _shape(x)[-1] != _shape(x)[-2]:
            raise ValueError(f"Input {name!r} must be square.{errors.where()}")
    if _shape(t)[-1] != _shape(z)[-1]:
        raise ValueError(
            f"Input array shapes must match: Z: {_shape(z)} vs. T: {_shape(t)}{errors.where()}"
        )
    t, z = promote_to_inexact(t, z)
    dtype = dtypes.complex_dtype(_dtype(t))
    t, z = _broadcast_batch(t.astype(dtype), z.astype(dtype))
    if _shape(t)[-1] == 0:
        return t, z
    return _rsf2csf(t, z)


# --------------------------------------------------------------------------------------------
# The Sylvester equation A X + X B = C


def _triangular_sylvester(r: Any, lower: Any, f: Any) -> Any:
    """Y with ``r Y + Y lower = f`` (r upper, ``lower`` lower triangular): column j involves
    only the columns after it, so the columns are solved from the last, each by a triangular
    solve with r + lower[j, j] I."""
    m, n = _shape(f)
    dtype = _dtype(f)
    eye = creation.eye(m, dtype=dtype)
    columns = positions(n)

    def column(i, y):
        j = _index(n - 1 - i)
        coefficient = _entry(lower, j, j)
        rhs = dynamic_slice_op(f - matmul(y, lower), (np.int32(0), j), (m, 1))
        solved = substitute(r + coefficient * eye, rhs, lower=False, unit_diagonal=False)
        return where(enp.equal(columns, j)[None, :], solved, y)

    return fori_loop(0, n, column, creation.zeros((m, n), dtype))


def _sylvester_schur(a: Any, b: Any, c: Any) -> tuple[Any, Any, Any]:
    """Bartels-Stewart: with A = U R U^H and B^H = V S V^H, ``R Y + Y S^H = U^H C V``."""
    r, u = _schur_complex_single(a)
    s, v = _schur_complex_single(_h(b))
    y = _triangular_sylvester(r, _h(s), matmul(matmul(_h(u), c), v))
    return matmul(matmul(u, y), _h(v)), main_diagonal(r), enp.conjugate(main_diagonal(s))


def _sylvester_eigen(a: Any, b: Any, c: Any) -> tuple[Any, Any, Any]:
    """Diagonalise both: fast, but loses accuracy when either is far from normal."""
    wa, ua = eig(a)
    wb, ub = eig(b)
    f = nla.solve(ua, matmul(c, ub))
    y = f / (wa[:, None] + wb[None, :])
    return matmul(matmul(ua, y), nla.inv(ub)), wa, wb


def _solve_sylvester_single(a: Any, b: Any, c: Any, method: str, tol: float) -> Any:
    solver = _sylvester_schur if method == "schur" else _sylvester_eigen
    complex_dtype = dtypes.complex_dtype(_dtype(c))
    x, wa, wb = solver(*(m.astype(complex_dtype) for m in (a, b, c)))
    if not dtypes.issubdtype(_dtype(c), np.complexfloating):
        x = enp.real(x)
    # as JAX: NaN when A and -B share an eigenvalue (to within tol), the equation is singular
    singular = reductions.any(enp.less(enp.abs(wa[:, None] + wb[None, :]), tol))
    return where(singular, _const(np.nan, _dtype(x)), x)


_solve_sylvester = jit(
    lambda a, b, c, method, tol: _per_matrix(
        lambda a, b, c: _solve_sylvester_single(a, b, c, method, tol), a, b, c
    ),
    static_argnums=(3, 4),
    inline=True,
)


def solve_sylvester(A: Any, B: Any, C: Any, *, method: str = "schur", tol: float = 1e-8) -> Any:
    """X with ``A X + X B = C``. ``method='schur'``: Bartels-Stewart through complex Schur
    forms (accurate for any A, B); ``'eigen'``: through eigendecompositions. NaN where A and
    -B have eigenvalues closer than ``tol``."""
    if method not in ("schur", "eigen"):
        raise ValueError(
            f'Unrecognized method {method}. The two valid methods are either "schur" or '
            f'"eigen".{errors.where()}'
        )
    a, b, c = promote_to_inexact(*(creation.asarray(x) for x in (A, B, C)))
    if len(_shape(c)) < 2 or len(_shape(a)) < 2 or len(_shape(b)) < 2:
        raise ValueError(f"solve_sylvester: A, B and C must be matrices{errors.where()}")
    m, n = _shape(c)[-2:]
    if _shape(a)[-2:] != (m, m) or _shape(b)[-2:] != (n, n):
        raise ValueError(
            f"Incompatible shapes for Sylvester equation:\nA: {_shape(a)}\nB: {_shape(b)}\n"
            f"C: {_shape(c)}{errors.where()}"
        )
    a, b, c = _broadcast_batch(a, b, c)
    return _solve_sylvester(a, b, c, method, float(tol))
