"""lax.linalg's algorithm enums carry JAX 0.10.2's members and values, and the
factorisations accept them as the hints they are."""

from __future__ import annotations

import numpy as np

from ember.lax import linalg
from tests.core.util import assert_close

JAX_MEMBERS = {
    "EigImplementation": [("CUSOLVER", "cusolver"), ("MAGMA", "magma"), ("LAPACK", "lapack")],
    "EighImplementation": [("QR", "qr"), ("JACOBI", "jacobi"), ("QDWH", "qdwh")],
    "SvdAlgorithm": [
        ("DEFAULT", "default"),
        ("QR", "QR"),
        ("JACOBI", "Jacobi"),
        ("POLAR", "polar"),
        ("DIVIDE_AND_CONQUER", "divide_and_conquer"),
    ],
}


def test_members_are_jaxs():
    for name, members in JAX_MEMBERS.items():
        assert [(m.name, m.value) for m in getattr(linalg, name)] == members


def test_factorisations_take_the_enums():
    x = np.random.default_rng(2).standard_normal((4, 4)).astype(np.float32)
    a = x + x.T
    for implementation in linalg.EighImplementation:
        v, w = linalg.eigh(a, implementation=implementation)
        assert_close(w, np.linalg.eigvalsh(a), rtol=1e-4, atol=1e-5)
    for algorithm in linalg.SvdAlgorithm:
        s = linalg.svd(x, compute_uv=False, algorithm=algorithm)
        assert_close(s, np.linalg.svd(x, compute_uv=False), rtol=1e-4, atol=1e-5)
