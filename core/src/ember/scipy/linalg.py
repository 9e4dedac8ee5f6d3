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
    expm_frechet as expm_frechet,
    funm as funm,
    hankel as hankel,
    hessenberg as hessenberg,
    inv as inv,
    lu as lu,
    lu_factor as lu_factor,
    lu_solve as lu_solve,
    polar as polar,
    qr as qr,
    qr_multiply as qr_multiply,
    solve as solve,
    solve_triangular as solve_triangular,
    sqrtm as sqrtm,
    svd as svd,
    toeplitz as toeplitz,
)
from ember._src.scipy.linalg_schur import (
    rsf2csf as rsf2csf,
    schur as schur,
    solve_sylvester as solve_sylvester,
)
from ember._src.scipy.linalg_tridiagonal import eigh_tridiagonal as eigh_tridiagonal
