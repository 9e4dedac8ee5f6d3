"""multi_dot (and its optimal chain order), tensorinv and tensorsolve against NumPy, with
gradients and errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember._src.numpy.linalg_tensor import _chain_order
from tests.core.util import assert_close

rng = np.random.default_rng(0)


def _random(shape, dtype=np.float32):
    x = rng.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dtype)


# --------------------------------------------------------------------------------------------
# multi_dot, tensorinv, tensorsolve


def test_chain_order_is_optimal():
    # (10x100)(100x5)(5x50): (AB)C costs 7500, A(BC) 75000
    assert _chain_order([10, 100, 5, 50])[0][2] == 1
    assert _chain_order([50, 5, 100, 10])[0][2] == 0


@pytest.mark.parametrize(
    "shapes",
    [
        [(3, 4), (4, 5)],
        [(3,), (3, 10), (10, 2), (2, 7), (7,)],
        [(6, 2), (2, 8), (8,)],
        [(4,), (4,)],
    ],
)
def test_multi_dot_matches_numpy(shapes):
    arrays = [_random(shape) for shape in shapes]
    assert_close(enp.linalg.multi_dot(arrays), np.linalg.multi_dot(arrays), rtol=1e-4)


def test_multi_dot_gradient():
    arrays = [_random(shape) for shape in [(3,), (3, 10), (10, 2), (2,)]]
    grads = ember.grad(lambda xs: enp.linalg.multi_dot(xs))(arrays)
    for got, want in zip(grads, ember.grad(_left_to_right)(arrays)):
        assert_close(got, want, rtol=1e-4, atol=1e-5)


def _left_to_right(arrays):
    out = arrays[0]
    for x in arrays[1:]:
        out = enp.matmul(out, x)
    return out


def test_multi_dot_errors():
    with pytest.raises(ValueError, match="at least two"):
        enp.linalg.multi_dot([np.ones((2, 2))])
    with pytest.raises(ValueError, match="matrices"):
        enp.linalg.multi_dot([np.ones((2, 2)), np.ones(2), np.ones((2, 2))])
    with pytest.raises(ValueError, match="chain"):
        enp.linalg.multi_dot([np.ones((2, 3)), np.ones((2, 2))])


@pytest.mark.parametrize("shape, ind", [((4, 6, 8, 3), 2), ((4, 6, 24), 2), ((6, 2, 3), 1)])
def test_tensorinv_matches_numpy(shape, ind):
    a = _random(shape)
    got = np.asarray(enp.linalg.tensorinv(a, ind))
    want = np.linalg.tensorinv(a.astype(np.float64), ind)
    assert got.shape == want.shape
    assert_close(got, want, rtol=1e-3, atol=1e-3 * np.abs(want).max())


def test_tensorsolve_matches_numpy():
    a, b = _random((6, 4, 2, 3, 4)), _random((6, 4))
    assert_close(enp.linalg.tensorsolve(a, b), np.linalg.tensorsolve(a, b), rtol=1e-3, atol=1e-3)
    moved = np.moveaxis(a, (2, 3, 4), (0, 1, 2))
    assert_close(
        enp.linalg.tensorsolve(moved, b, axes=(0, 1, 2)),
        np.linalg.tensorsolve(moved, b, axes=(0, 1, 2)),
        rtol=1e-3,
        atol=1e-3,
    )


def test_tensor_errors():
    with pytest.raises(ValueError, match="positive"):
        enp.linalg.tensorinv(np.ones((2, 2)), 0)
    with pytest.raises(ValueError, match="as many elements"):
        enp.linalg.tensorinv(np.ones((4, 6, 8, 4)), 2)
    with pytest.raises(ValueError, match="as many unknowns"):
        enp.linalg.tensorsolve(np.ones((6, 4, 2, 3, 5)), np.ones((6, 4)))
    with pytest.raises(ValueError, match="must match"):
        enp.linalg.tensorsolve(np.ones((6, 4, 24)), np.ones((4, 6)))
