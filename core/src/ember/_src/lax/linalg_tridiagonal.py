"""The Thomas algorithm (forward elimination and back substitution, no pivoting) for one
tridiagonal system: the generic lowering of the ``tridiagonal_solve`` primitive."""

from __future__ import annotations

from typing import Any

from ember._src.core import get_aval
from ember._src.lax.slicing import full_like
from ember._src.primitives.control_flow.loops import fori_loop


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
