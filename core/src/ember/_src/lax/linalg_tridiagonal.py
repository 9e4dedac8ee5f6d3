"""``lax.linalg.tridiagonal_solve``: the Thomas algorithm (forward elimination and back
substitution, no pivoting), vmapped over stacks."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.lax.linalg_operands import where_broadcast
from ember._src.lax.slicing import full_like
from ember._src.primitives.control_flow.loops import fori_loop
from ember._src.primitives.shape import convert_element_type
from ember._src.transforms.jit import jit
from ember._src.transforms.vmap import vmap


def thomas(dl: Any, d: Any, du: Any, b: Any) -> Any:
    """Tridiagonal solve by forward elimination and back substitution (no pivoting)."""
    n = get_aval(d).shape[0]
    if n == 0:
        return b

    def eliminate(i, state):
        c, y = state  # c: modified superdiagonal, y: modified right-hand side
        denominator = d[i] - dl[i] * c[i - 1]
        c = c.at[i].set(du[i] / denominator)
        return c, y.at[i].set((b[i] - dl[i] * y[i - 1]) / denominator)

    c0 = full_like(d, 0).at[0].set(du[0] / d[0])
    y0 = full_like(b, 0).at[0].set(b[0] / d[0])
    c, y = fori_loop(1, n, eliminate, (c0, y0))

    def substitute(j, x):
        i = n - 2 - j
        return x.at[i].set(y[i] - c[i] * x[i + 1])

    return fori_loop(0, n - 1, substitute, y)


def _tridiagonal_impl(dl: Any, d: Any, du: Any, b: Any) -> Any:
    fn = thomas
    for _ in range(get_aval(d).ndim - 1):
        fn = vmap(fn)
    return fn(dl, d, du, b)


_tridiagonal = jit(_tridiagonal_impl, inline=True)


def _as_operand(x: Any) -> Any:
    return np.asarray(x) if isinstance(x, (list, tuple)) else x


def tridiagonal_solve(dl: Any, d: Any, du: Any, b: Any, *, perturb_singular: bool = False):
    """x with ``T @ x = b`` for the tridiagonal T of sub-, main and superdiagonals dl, d, du
    (shape (..., n); dl[0] and du[-1] are ignored) and b of shape (..., n, k)."""
    if perturb_singular:
        raise NotImplementedError(
            f"tridiagonal_solve: perturb_singular=True is not supported{errors.where()}"
        )
    d = _as_operand(d)
    if not dtypes.is_inexact(get_aval(d).dtype):
        d = convert_element_type(d, dtypes.default_float())
    dtype = get_aval(d).dtype
    dl, du, b = (convert_element_type(_as_operand(v), dtype) for v in (dl, du, b))
    shape = get_aval(d).shape
    if get_aval(dl).shape != shape or get_aval(du).shape != shape:
        raise ValueError(
            f"tridiagonal_solve: dl, d and du must have one shape, got {get_aval(dl).shape}, "
            f"{shape} and {get_aval(du).shape}{errors.where()}"
        )
    if get_aval(b).ndim != len(shape) + 1 or get_aval(b).shape[:-1] != shape:
        raise ValueError(
            f"tridiagonal_solve: b must have shape {shape} + (k,), got {get_aval(b).shape}"
            f"{errors.where()}"
        )
    # dl[0] and du[-1] lie outside the matrix: zero them so they cannot leak in
    n = shape[-1]
    dl = convert_element_type(where_broadcast(np.arange(n) == 0, 0, dl), dtype)
    du = convert_element_type(where_broadcast(np.arange(n) == n - 1, 0, du), dtype)
    return _tridiagonal(dl, d, du, b)
