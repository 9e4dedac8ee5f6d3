"""``ember.scipy.linalg.eigh_tridiagonal``: eigenvalues of a symmetric (Hermitian) tridiagonal
matrix by bisection on Sturm sequence counts, as JAX computes them: every wanted eigenvalue is
bracketed in parallel, and each step halves all brackets, so the iteration count is bounded by
the mantissa width. Eigenvectors come from the dense Hermitian eigensolver (JAX uses inverse
iteration from random vectors, so its signs are arbitrary too).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import (
    creation,
    diagonals,
    elementwise as enp,
    linalg as nla,
    manipulation,
    reductions,
)
from ember._src.numpy.nonzero import where
from ember._src.primitives.control_flow.loops import fori_loop, while_loop
from ember._src.primitives.indexing import dynamic_slice_op

_SUPPORTED = (np.float32, np.float64, np.complex64, np.complex128)
_FUDGE = 2.1  # JAX's (and LAPACK's) widening of the Gershgorin interval


def _sturm_counts(alpha: Any, beta_sq: Any, pivmin: Any, perturbation: Any, x: Any) -> Any:
    """For each x, how many eigenvalues lie below it (the negative pivots of T - x I)."""
    n = get_aval(alpha).shape[0]
    q = alpha[0] - x
    count = enp.less(q, 0).astype(np.int32)
    q = where(enp.equal(alpha[0], x), perturbation, q)

    def step(i, state):
        q, count = state
        a = dynamic_slice_op(alpha, (i,), (1,))[0]
        b = dynamic_slice_op(beta_sq, (i - 1,), (1,))[0]
        q = a - b / q - x
        small = enp.less_equal(q, pivmin)
        # a pivot that is (nearly) zero counts as negative and is kept away from zero
        return where(small, enp.minimum(q, -pivmin), q), count + small.astype(np.int32)

    return fori_loop(1, n, step, (q, count))[1]


def _target_counts(n: int, select: str, select_range: Any) -> np.ndarray:
    if select == "a":
        return np.arange(n, dtype=np.int32)
    if select == "i":
        if select_range is None:
            raise ValueError(f"for select='i', select_range must be specified.{errors.where()}")
        if select_range[0] > select_range[1]:
            raise ValueError(f"Got empty index range in select_range.{errors.where()}")
        return np.arange(int(select_range[0]), int(select_range[1]) + 1, dtype=np.int32)
    if select == "v":
        raise NotImplementedError(
            f"eigh_tridiagonal(..., select='v') is not implemented{errors.where()}"
        )
    raise ValueError(f"'select must have a value in {{'a', 'i', 'v'}}.{errors.where()}")


def _bisect(alpha: Any, beta: Any, targets: np.ndarray, tol: Any) -> Any:
    real = get_aval(alpha).dtype
    beta_sq = enp.real(beta * enp.conjugate(beta)).astype(real)
    beta_abs = enp.sqrt(beta_sq)
    # Gershgorin bounds on the spectrum
    row_sums = manipulation.concatenate([beta_abs[:1], beta_abs[:-1] + beta_abs[1:], beta_abs[-1:]])
    lowest = reductions.min(alpha - row_sums)
    highest = reductions.max(alpha + row_sums)
    t_norm = enp.maximum(enp.abs(lowest), enp.abs(highest))
    finfo = np.finfo(real)
    one = np.ones([], real)
    safemin = np.maximum(one / finfo.max, (one + finfo.eps) * finfo.tiny)
    pivmin = safemin * enp.maximum(1, reductions.max(beta_sq))
    perturbation = (finfo.eps * beta_abs[0]) ** 2
    abs_tol = finfo.eps * t_norm
    if tol is not None:
        abs_tol = enp.maximum(tol, abs_tol)
    steps = finfo.nmant + 1  # enough halvings to resolve every bit of the mantissa
    n = get_aval(alpha).shape[0]
    slack = np.asarray(n * _FUDGE * finfo.eps, real) * t_norm
    shape = targets.shape
    lower = manipulation.broadcast_to(lowest - slack - 2 * _FUDGE * pivmin, shape)
    upper = manipulation.broadcast_to(highest + slack + _FUDGE * pivmin, shape)

    def unresolved(state):
        i, lower, _, upper = state
        return enp.logical_and(enp.less(i, steps), enp.less(abs_tol, reductions.max(upper - lower)))

    def halve(state):
        i, lower, mid, upper = state
        counts = _sturm_counts(alpha, beta_sq, pivmin, perturbation, mid)
        lower = where(enp.less_equal(counts, targets), mid, lower)
        upper = where(enp.greater(counts, targets), mid, upper)
        return i + 1, lower, (0.5 * (lower + upper)).astype(real), upper

    mid = (0.5 * (lower + upper)).astype(real)
    return while_loop(unresolved, halve, (np.int32(0), lower, mid, upper))[2]


def _eigenvectors(alpha: Any, beta: Any, targets: np.ndarray) -> Any:
    """Columns: the eigenvectors of the dense Hermitian tridiagonal (beta above, its conjugate
    below the diagonal) for the eigenvalues numbered ``targets`` in ascending order."""
    dtype = get_aval(beta).dtype
    dense = (
        diagonals.diag(alpha.astype(dtype))
        + diagonals.diag(beta, 1)
        + diagonals.diag(enp.conjugate(beta), -1)
    )
    _, vectors = nla.eigh(dense)
    return vectors[:, targets]


def eigh_tridiagonal(
    d: Any,
    e: Any,
    *,
    eigvals_only: bool = False,
    select: str = "a",
    select_range: tuple[float, float] | None = None,
    tol: float | None = None,
    key: Any = None,
) -> Any:
    """Eigenvalues (ascending; and eigenvectors as columns unless ``eigvals_only``) of the
    Hermitian tridiagonal matrix with diagonal d (shape (n,)) and superdiagonal e (shape
    (n - 1,)). ``select='i'`` keeps the eigenvalues numbered ``select_range[0]`` to
    ``select_range[1]`` inclusive. ``key`` is accepted for JAX's signature; nothing here is
    random."""
    del key
    alpha, beta = creation.asarray(d), creation.asarray(e)
    a_dtype, b_dtype = get_aval(alpha).dtype, get_aval(beta).dtype
    if a_dtype != b_dtype:
        raise TypeError(
            "diagonal and off-diagonal values must have same dtype, got "
            f"{a_dtype} and {b_dtype}{errors.where()}"
        )
    if a_dtype not in _SUPPORTED:
        raise TypeError(
            "Only float32 and float64 inputs are supported as inputs to "
            f"ember.scipy.linalg.eigh_tridiagonal, got {a_dtype} and {b_dtype}{errors.where()}"
        )
    n = get_aval(alpha).shape[0]
    real_alpha = enp.real(alpha).astype(dtypes.real_dtype(a_dtype))
    if n <= 1:
        return real_alpha if eigvals_only else (real_alpha, creation.eye(n, dtype=a_dtype))
    targets = _target_counts(n, select, select_range)
    eigenvalues = _bisect(real_alpha, beta, targets, tol)
    if eigvals_only:
        return eigenvalues
    return eigenvalues, _eigenvectors(real_alpha, beta, targets)
