"""Lower-level linear algebra (``ember.lax.linalg``), as ``jax.lax.linalg``."""

from ember._src.lax.linalg import (
    cholesky as cholesky,
    cholesky_update as cholesky_update,
    eig as eig,
    eigh as eigh,
    hessenberg as hessenberg,
    householder_product as householder_product,
    lu as lu,
    lu_pivots_to_permutation as lu_pivots_to_permutation,
    ormqr as ormqr,
    qdwh as qdwh,
    qr as qr,
    schur as schur,
    svd as svd,
    symmetric_product as symmetric_product,
    triangular_solve as triangular_solve,
    tridiagonal as tridiagonal,
    tridiagonal_solve as tridiagonal_solve,
)
from ember._src.lax.linalg_algorithms import (
    EighImplementation as EighImplementation,
    EigImplementation as EigImplementation,
    SvdAlgorithm as SvdAlgorithm,
)
