"""Column-pivoted QR (Businger-Golub, LAPACK's geqp3 choices): ``a[:, p] = q r`` with step j
first swapping in the remaining column of largest norm below row j, so that ``|r[j, j]|``
does not increase. A static ``fori_loop`` of Householder reflections, as ember's QR."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src.core import get_aval
from ember._src.lax.linalg_operands import identity_matrix, positions
from ember._src.numpy import elementwise as enp, reductions
from ember._src.numpy.contractions import matmul
from ember._src.numpy.nonzero import where
from ember._src.primitives.control_flow.loops import fori_loop
from ember._src.transforms.jit import jit
from ember._src.transforms.vmap import vmap


def _abs2(x: Any) -> Any:
    return enp.real(x * enp.conjugate(x))


def _safe_divide(numerator: Any, denominator: Any) -> Any:
    zero = enp.equal(denominator, 0)
    return where(zero, 0, numerator / where(zero, 1, denominator)).astype(get_aval(numerator).dtype)


def _pivoted_qr_single(a: Any) -> tuple[Any, Any, Any]:
    """(q, r, perm): q (m, m) unitary, r (m, n) upper triangular, ``a[:, perm] = q r``."""
    m, n = get_aval(a).shape
    dtype = get_aval(a).dtype
    rows, columns = positions(m), positions(n)

    def step(j, state):
        r, q, perm = state
        below = enp.greater_equal(rows, j)[:, None]
        # the remaining column of largest norm (rows j and below) moves to column j
        norms = reductions.sum(where(below, _abs2(r), 0), axis=0)
        norms = where(enp.less(columns, j), -1, norms)
        pivot = reductions.argmax(norms).astype(np.int32)
        swap = where(
            enp.equal(columns, j), pivot, where(enp.equal(columns, pivot), j, columns)
        ).astype(np.int32)
        r = r[:, swap]
        perm = perm[swap]
        # the Householder reflector zeroing column j below the diagonal
        column = r[:, j]
        x = where(below[:, 0], column, 0).astype(dtype)
        x = _safe_divide(x, reductions.max(enp.abs(x)).astype(dtype))
        length = enp.sqrt(reductions.sum(_abs2(x))).astype(dtype)
        lead = reductions.sum(where(enp.equal(rows, j), x, 0)).astype(dtype)
        phase = where(enp.equal(lead, 0), 1, _safe_divide(lead, enp.abs(lead).astype(dtype)))
        v = x + where(enp.equal(rows, j), phase * length, 0).astype(dtype)
        v = _safe_divide(v, enp.sqrt(reductions.sum(_abs2(v))).astype(dtype))
        two_v = v * np.asarray(2, dtype)
        r = r - two_v[:, None] * matmul(enp.conjugate(v), r)[None, :]
        q = q - matmul(q, v)[:, None] * enp.conjugate(two_v)[None, :]
        return r, q, perm

    start = (a, identity_matrix(m, dtype), np.arange(n, dtype=np.int32))
    r, q, perm = fori_loop(0, min(m, n), step, start)
    upper = np.triu(np.ones((m, n), bool))
    return q, where(upper, r, 0).astype(dtype), perm


def _pivoted_qr_impl(a: Any) -> tuple[Any, Any, Any]:
    single = _pivoted_qr_single
    for _ in range(len(get_aval(a).shape) - 2):
        single = vmap(single)
    return single(a)


pivoted_qr = jit(_pivoted_qr_impl, inline=True)
