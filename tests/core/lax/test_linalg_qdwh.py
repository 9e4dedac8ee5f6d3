"""lax.linalg.qdwh: a polar decomposition (x = u h, u orthonormal columns, h Hermitian
positive semi-definite) equal to the SVD's, with JAX 0.10.2's iteration counts."""

from __future__ import annotations

import numpy as np
import pytest

from ember.lax import linalg
from tests.core.util import assert_close


def _polar_from_svd(x):
    w, s, vh = np.linalg.svd(
        x.astype(np.complex128 if x.dtype.kind == "c" else np.float64), full_matrices=False
    )
    return w @ vh, vh.conj().T @ np.diag(s) @ vh


@pytest.mark.parametrize("shape", [(5, 3), (4, 4)])
@pytest.mark.parametrize("complex_", [False, True])
def test_qdwh_is_the_polar_decomposition(shape, complex_):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape)
    if complex_:
        x = x + 1j * rng.standard_normal(shape)
    x = x.astype(np.complex64 if complex_ else np.float32)
    u, h, num_iters, is_converged = linalg.qdwh(x)
    expected_u, expected_h = _polar_from_svd(x)
    assert bool(is_converged) and int(num_iters) == 4  # JAX 0.10.2 takes 4 steps here too
    assert_close(u, expected_u, rtol=1e-4, atol=1e-5)
    assert_close(h, expected_h, rtol=1e-4, atol=1e-5)


def test_qdwh_ill_conditioned_needs_its_qr_steps():
    rng = np.random.default_rng(4)
    x = (np.diag([1.0, 1e-4, 1e-6]) @ rng.standard_normal((3, 3))).astype(np.float32)
    # JAX 0.10.2: 3 steps, not converged, when capped at 3; converged in 4 with the default cap
    _, _, num_iters, is_converged = linalg.qdwh(x, max_iterations=3)
    assert int(num_iters) == 3 and not bool(is_converged)
    u, h, num_iters, is_converged = linalg.qdwh(x)
    assert int(num_iters) == 4 and bool(is_converged)
    assert_close(np.asarray(u) @ np.asarray(h), x, rtol=1e-3, atol=1e-5)


def test_qdwh_refuses_wide_matrices_and_dynamic_shapes():
    with pytest.raises(ValueError, match="m >= n"):
        linalg.qdwh(np.zeros((2, 3), np.float32))
    with pytest.raises(NotImplementedError, match="dynamic_shape"):
        linalg.qdwh(np.eye(3, dtype=np.float32), dynamic_shape=(2, 2))
