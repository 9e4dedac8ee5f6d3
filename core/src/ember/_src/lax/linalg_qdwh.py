"""Polar decomposition by the QR-based dynamically weighted Halley iteration (QDWH;
Nakatsukasa, Bai and Gygi, SIAM J. Matrix Anal. Appl. 31(5), 2010), step for step as
``jax.lax.linalg.qdwh`` takes it, so iteration counts agree: the weights come from a
lower bound on the smallest singular value, the first (ill-conditioned) steps use a QR
factorisation, later ones a Cholesky factorisation, then plain Halley steps until the iterate
settles, and one Newton-Schulz step refines it. Written for one (m, n) matrix, m >= n."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src.core import get_aval
from ember._src.lax import linalg_factor_solves as factor_solves
from ember._src.lax.linalg_factor_primitives import cholesky_p
from ember._src.lax.linalg_operands import (
    conj_transpose,
    identity_matrix,
    positions,
    real_part,
    static_fori,
    where_broadcast,
)
from ember._src.lax.linalg_qr_primitives import qr_p
from ember._src.primitives.control_flow.loops import while_loop
from ember._src.primitives.math_functions import rsqrt, sqrt
from ember._src.primitives.selection import select_n

# Past this weight c a step's Cholesky factorisation would be too ill-conditioned: use QR
_CHOLESKY_CUTOFF = 100


def _weights(bound: float) -> tuple[float, float, float]:
    """(a, b, c): the dynamic weights of one step given the lower bound on the smallest
    singular value of the (scaled) iterate."""
    l2 = bound * bound
    dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
    sqd = (1.0 + dd) ** (1 / 2)
    a = sqd + (2 - dd + 2 * (2 - l2) / (l2 * sqd)) ** (1 / 2)
    b = (a - 1) ** 2 / 4
    return a, b, a + b - 1


def _qr_step(u: Any, a: float, b: float, c: float) -> Any:
    """``e u + (a - e) / sqrt(c) q1 q2^H`` from the QR factors of ``[sqrt(c) u; I]``."""
    m, n = get_aval(u).shape
    dtype = get_aval(u).dtype
    e = b / c
    stacked = _concat_rows(u * np.asarray(c**0.5, dtype), identity_matrix(n, dtype))
    # q1 q2^H does not depend on the phases of Q's columns, so any QR convention serves
    q, _ = qr_p.bind(stacked, pivoting=False, full_matrices=False, use_magma=None)
    q1, q2 = q[:m], q[m:]
    return u * np.asarray(e, dtype) + np.asarray((a - e) / c**0.5, dtype) * (
        q1 @ conj_transpose(q2)
    )


def _concat_rows(top: Any, bottom: Any) -> Any:
    m, n = get_aval(top).shape
    k = get_aval(bottom).shape[0]
    out = identity_matrix(m + k, get_aval(top).dtype, n) * np.asarray(0, get_aval(top).dtype)
    return out.at[:m].set(top).at[m:].set(bottom)


def _cholesky_step(u: Any, a: Any, b: Any, c: Any) -> Any:
    """``e u + (a - e) u (c u^H u + I)^-1`` through the Cholesky factor of ``c u^H u + I``."""
    n = get_aval(u).shape[1]
    dtype = get_aval(u).dtype
    e = b / c
    gram = c * (conj_transpose(u) @ u) + identity_matrix(n, dtype)
    y = cholesky_p.bind(gram)
    # (gram^-1 u^H)^H = u gram^-1, with gram = y y^H
    v = factor_solves.cholesky_solve(y, conj_transpose(u), lower=True)
    return e * u + (a - e) * conj_transpose(v)


def _frobenius(x: Any) -> Any:
    return (
        sqrt(real_part(x * x.conj()).sum())
        if get_aval(x).dtype.kind == "c"
        else (sqrt((x * x).sum()))
    )


def qdwh_polar(x: Any, max_iterations: int, eps: float | None) -> tuple[Any, Any, Any, Any]:
    """(u, h, num_iters, is_converged) with ``x = u h``: u with orthonormal columns, h
    Hermitian positive semi-definite."""
    dtype = get_aval(x).dtype
    real_dtype = np.zeros((), dtype).real.dtype
    eps = float(np.finfo(real_dtype).eps) if eps is None else float(eps)
    magnitudes = abs(x)
    one_norm = magnitudes.sum(0).max()
    inf_norm = magnitudes.sum(1).max()
    alpha_inverse = rsqrt(one_norm) * rsqrt(inf_norm)
    alpha_inverse = select_n(one_norm == 0, alpha_inverse, np.ones((), real_dtype))
    u = x * alpha_inverse.astype(dtype)

    tol_l = 10.0 * eps / 2.0
    tol_norm = np.asarray(np.cbrt(tol_l), real_dtype)
    qr_weights, cholesky_weights = [], []
    bound, k = eps, 0
    while bound + tol_l < 1 and k < max_iterations:
        k += 1
        a, b, c = _weights(bound)
        bound = bound * (a + b * bound * bound) / (1 + c * bound * bound)
        (qr_weights if c > _CHOLESKY_CUTOFF else cholesky_weights).append((a, b, c))

    for a, b, c in qr_weights:  # few (a handful at most): unrolled, weights static
        u = _qr_step(u, a, b, c)

    not_converged = np.bool_(True)
    if cholesky_weights:
        table = np.asarray(cholesky_weights, dtype)
        rows = positions(len(cholesky_weights))

        def weighted(i, state):
            u, _ = state
            # row i of the static table, picked with a mask (the index is traced)
            a, b, c = where_broadcast(rows[:, None] == i, table, 0.0).sum(0).astype(dtype)
            new = _cholesky_step(u, a, b, c)
            return new, _frobenius(new - u) > tol_norm

        u, not_converged = static_fori(0, len(cholesky_weights), weighted, (u, not_converged))

    def unfinished(state):
        i, _, not_converged = state
        return not_converged & (i < max_iterations)

    def halley(state):
        # as l -> 1 the weights tend to (3, 1, 3): Halley's method
        i, u, _ = state
        new = _cholesky_step(u, *(np.asarray(v, dtype) for v in (3, 1, 3)))
        return i + 1, new, _frobenius(new - u) > tol_norm

    start = (np.int32(len(qr_weights) + len(cholesky_weights)), u, not_converged)
    num_iters, u, not_converged = while_loop(unfinished, halley, start)

    u = np.asarray(1.5, dtype) * u - np.asarray(0.5, dtype) * u @ (conj_transpose(u) @ u)
    h = conj_transpose(u) @ x
    h = (h + conj_transpose(h)) * np.asarray(0.5, dtype)
    return u, h, num_iters, ~not_converged
