"""Lower-level linear algebra (``ember.lax.linalg``), as ``jax.lax.linalg``."""

from ember._src.lax.linalg import (
    cholesky as cholesky,
    eigh as eigh,
    lu as lu,
    qr as qr,
    svd as svd,
    triangular_solve as triangular_solve,
    tridiagonal_solve as tridiagonal_solve,
)
