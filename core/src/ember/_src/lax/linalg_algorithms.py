"""The algorithm choices ``jax.lax.linalg`` names, so ``implementation=``/``algorithm=``
arguments written for JAX port. They are hints: ember factorises with its one algorithm per
problem (Jacobi for ``eigh`` and ``svd``), whose answers are the same matrices up to rounding
and the usual sign or phase freedom of eigenvectors and singular vectors."""

from __future__ import annotations

import enum


class EigImplementation(enum.Enum):
    """Enum for eigendecomposition algorithm."""

    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


class EighImplementation(enum.Enum):
    """Implementation for symmetric/Hermitian eigendecomposition."""

    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


class SvdAlgorithm(enum.Enum):
    """Enum for SVD algorithm."""

    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"
