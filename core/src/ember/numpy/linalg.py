"""Linear algebra (``ember.numpy.linalg``), as ``numpy.linalg`` and the array API's linalg."""

from ember._src.numpy.contractions import vecdot as vecdot
from ember._src.numpy.linalg import (
    cholesky as cholesky,
    cross as cross,
    det as det,
    diagonal as diagonal,
    eigh as eigh,
    eigvalsh as eigvalsh,
    inv as inv,
    matrix_norm as matrix_norm,
    matrix_power as matrix_power,
    matrix_rank as matrix_rank,
    matrix_transpose as matrix_transpose,
    norm as norm,
    outer as outer,
    pinv as pinv,
    qr as qr,
    slogdet as slogdet,
    solve as solve,
    svd as svd,
    svdvals as svdvals,
    trace as trace,
    vector_norm as vector_norm,
)
from ember._src.numpy.linalg_array_api import matmul as matmul, tensordot as tensordot
from ember._src.numpy.linalg_eig import eig as eig, eigvals as eigvals
from ember._src.numpy.linalg_lstsq import cond as cond, lstsq as lstsq
from ember._src.numpy.linalg_tensor import (
    multi_dot as multi_dot,
    tensorinv as tensorinv,
    tensorsolve as tensorsolve,
)
