"""Linear algebra (``ember.numpy.linalg``), as ``numpy.linalg`` and the array API's linalg."""

from ember._src.numpy.linalg import (
    cholesky as cholesky,
    cross as cross,
    det as det,
    diagonal as diagonal,
    inv as inv,
    matrix_norm as matrix_norm,
    matrix_power as matrix_power,
    matrix_transpose as matrix_transpose,
    norm as norm,
    outer as outer,
    slogdet as slogdet,
    solve as solve,
    trace as trace,
    vector_norm as vector_norm,
)
