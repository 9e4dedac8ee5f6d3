"""``ember.scipy.linalg``'s Schur forms: ``schur``, ``rsf2csf`` and ``solve_sylvester``.

The Schur forms come from the ``schur`` primitive (``lax.linalg.schur``: LAPACK's ``gees``
where a platform overrides it, else ember's shifted QR iterations): the complex form for
complex input, LAPACK's real quasi-triangular form for real input. ``rsf2csf`` turns the real
form into the complex one as SciPy does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.lax import linalg as lax_linalg
from ember._src.lax.linalg_lu import substitute
from ember._src.lax.linalg_operands import (
    float_matrix,
    main_diagonal,
    positions,
)
from ember._src.numpy import creation, elementwise as enp, linalg as nla, manipulation, reductions
from ember._src.numpy.contractions import matmul
from ember._src.numpy.linalg_eig import eig
from ember._src.numpy.nonzero import where
from ember._src.numpy.operands import promote_to_inexact
from ember._src.primitives.control_flow.loops import fori_loop
from ember._src.primitives.indexing import dynamic_slice_op, dynamic_update_slice_op
from ember._src.transforms.jit import jit
from ember._src.transforms.vmap import vmap


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
# The Schur forms, through the ``schur`` primitive


def _schur_impl(a: Any) -> tuple[Any, Any]:
    t, z = lax_linalg.schur(a)
    return t, z


_schur = jit(_schur_impl, inline=True)


def schur(a: Any, output: str = "real") -> tuple[Any, Any]:
    """(T, Z) with ``a = Z T Z^H``, Z unitary. ``output='complex'`` (or a complex ``a``): T
    upper triangular. ``output='real'`` on a real ``a``: T quasi upper triangular, with a
    2 x 2 diagonal block for each pair of complex conjugate eigenvalues (LAPACK gees's
    form)."""
    if output not in ("real", "complex"):
        raise ValueError(
            f"Expected 'output' to be either 'real' or 'complex', got output={output!r}."
            f"{errors.where()}"
        )
    a = float_matrix(creation.asarray(a), "schur")
    if output == "complex":
        a = a.astype(dtypes.complex_dtype(_dtype(a)))
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
    r, u = lax_linalg.schur(a)
    s, v = lax_linalg.schur(_h(b))
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
