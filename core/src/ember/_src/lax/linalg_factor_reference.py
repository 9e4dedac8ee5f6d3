"""NumPy evaluations of the factorisation primitives where NumPy computes the same thing with
LAPACK's conventions: the reference backend's ``cholesky`` and ``triangular_solve``. Stacks of
matrices come in with any number of leading axes."""

from __future__ import annotations

import numpy as np

_HALF = (np.dtype(np.float16),)


def _working(x: np.ndarray) -> np.ndarray:
    """Half-precision matrices are computed in float32, as the generic lowering does."""
    return x.astype(np.float32) if x.dtype in _HALF or x.dtype.name == "bfloat16" else x


def cholesky(x: np.ndarray) -> np.ndarray:
    """The lower Cholesky factor of each matrix of ``x`` (only its lower triangle is read),
    NaN in every entry of a matrix that is not positive definite, as LAPACK's ``potrf`` with
    its ``info`` turned into NaN."""
    x = np.asarray(x)
    if x.size == 0:
        return np.zeros(x.shape, x.dtype)
    work = _working(x)
    n = x.shape[-1]
    # np.linalg.cholesky reads the lower triangle too, but only after the Hermitian check
    # some NumPy builds make: give it the Hermitian matrix of the lower triangle.
    strict = np.tril(work, -1)
    diagonal = np.real(np.diagonal(work, axis1=-2, axis2=-1))
    hermitian = strict + np.conj(np.swapaxes(strict, -1, -2))
    hermitian = hermitian + diagonal[..., None] * np.eye(n, dtype=work.dtype)
    stack = hermitian.reshape((-1, n, n))
    out = np.empty_like(stack)
    for i, matrix in enumerate(stack):
        with np.errstate(all="ignore"):
            try:
                out[i] = np.linalg.cholesky(matrix)
            except np.linalg.LinAlgError:
                out[i] = np.nan
        if not np.all(np.isfinite(out[i])):
            out[i] = np.nan
    return out.reshape(x.shape).astype(x.dtype)


def _op(a: np.ndarray, transpose_a: bool, conjugate_a: bool) -> np.ndarray:
    op = np.swapaxes(a, -1, -2) if transpose_a else a
    return np.conj(op) if conjugate_a else op


def triangular_solve(
    a: np.ndarray,
    b: np.ndarray,
    *,
    left_side: bool,
    lower: bool,
    transpose_a: bool,
    conjugate_a: bool,
    unit_diagonal: bool,
) -> np.ndarray:
    """x with ``op(a) x = b`` (left_side) or ``x op(a) = b``, by substitution (a zero on the
    diagonal gives infinities and NaNs, as LAPACK's ``trsm``); only a's ``lower`` (or upper)
    triangle is read, and not its diagonal when ``unit_diagonal``."""
    a, b = np.asarray(a), np.asarray(b)
    dtype = b.dtype
    a, b = _working(a), _working(b)
    m = a.shape[-1]
    triangle = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        triangle = triangle * (1 - np.eye(m, dtype=a.dtype)) + np.eye(m, dtype=a.dtype)
    op = _op(triangle, transpose_a, conjugate_a)
    op_lower = lower != transpose_a
    if not left_side:  # x op = b  <=>  op^T x^T = b^T
        op, b, op_lower = np.swapaxes(op, -1, -2), np.swapaxes(b, -1, -2), not op_lower
    x = np.zeros(b.shape, np.result_type(op, b))
    order = range(m) if op_lower else range(m - 1, -1, -1)
    with np.errstate(all="ignore"):
        for i in order:
            known = op[..., i, :, None] * x  # row i's coefficients times the solved rows
            rest = b[..., i, :] - known.sum(axis=-2)
            x[..., i, :] = rest / op[..., i, i, None]
    if not left_side:
        x = np.swapaxes(x, -1, -2)
    return x.astype(dtype)
