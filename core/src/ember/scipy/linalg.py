"""SciPy's dense linear algebra (``ember.scipy.linalg``), as ``jax.scipy.linalg``."""

from ember._src.scipy.linalg import (
    block_diag as block_diag,
    cho_factor as cho_factor,
    cho_solve as cho_solve,
    cholesky as cholesky,
    circulant as circulant,
    det as det,
    eigh as eigh,
    expm as expm,
    hankel as hankel,
    hessenberg as hessenberg,
    inv as inv,
    lu as lu,
    lu_factor as lu_factor,
    lu_solve as lu_solve,
    polar as polar,
    qr as qr,
    solve as solve,
    solve_triangular as solve_triangular,
    svd as svd,
    toeplitz as toeplitz,
)
