"""examples/kernels/matmul.py: the tiled matmul kernel against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.kernels.examples import load

matmul = load("matmul")


def _operands(m, k, n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(m, k)).astype(np.float32), rng.normal(size=(k, n)).astype(np.float32)


@pytest.mark.parametrize(
    "shape, blocks",
    [
        ((64, 96, 32), (32, 32, 32)),  # a 2 x 1 x 3 grid: three k steps accumulate
        ((32, 16, 48), (32, 48, 16)),  # one program
        ((16, 64, 64), (8, 32, 16)),  # blocks of different sizes on every axis
    ],
)
def test_matches_numpy(shape, blocks):
    x, y = _operands(*shape)
    block_m, block_n, block_k = blocks
    z = matmul.matmul(x, y, block_m=block_m, block_n=block_n, block_k=block_k)
    assert z.shape == (shape[0], shape[2]) and z.dtype == np.float32
    np.testing.assert_allclose(np.asarray(z), x @ y, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize(
    "shape, blocks", [((64, 96, 32), (32, 32, 32)), ((16, 64, 64), (8, 32, 16))]
)
def test_looping_k_matches_numpy(shape, blocks):
    x, y = _operands(*shape, seed=3)
    block_m, block_n, block_k = blocks
    z = matmul.matmul_looping_k(x, y, block_m=block_m, block_n=block_n, block_k=block_k)
    np.testing.assert_allclose(np.asarray(z), x @ y, rtol=1e-5, atol=1e-4)
    text = str(
        ember.make_jaxpr(
            lambda x, y: matmul.matmul_looping_k(
                x, y, block_m=block_m, block_n=block_n, block_k=block_k
            )
        )(x, y)
    )
    assert f"grid=({shape[0] // block_m}, {shape[2] // block_n}))" in text  # no k axis


def test_first_k_step_zeroes_the_output_block():
    # The output starts uninitialised: without the k == 0 step's zeroing, a second call (or
    # whatever the buffer held) would leak in. Equal results on repeated calls show it does not.
    x, y = _operands(32, 64, 32, seed=1)
    first = np.asarray(matmul.matmul(x, y, block_m=16, block_n=16, block_k=16))
    second = np.asarray(matmul.matmul(x, y, block_m=16, block_n=16, block_k=16))
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(first, x @ y, rtol=1e-5, atol=1e-4)


def test_is_one_pallas_call_over_an_m_n_k_grid():
    x, y = _operands(64, 32, 96)
    jaxpr = ember.make_jaxpr(lambda x, y: matmul.matmul(x, y, block_m=32, block_n=32, block_k=16))
    text = str(jaxpr(x, y))
    assert text.count("pallas_call[") == 1
    assert "grid=(2, 3, 2))" in text


def test_runs_eagerly_without_jit():
    x, y = _operands(32, 32, 32, seed=2)
    with ember.disable_jit():
        z = matmul.matmul(x, y, block_m=16, block_n=16, block_k=16)
    np.testing.assert_allclose(np.asarray(z), x @ y, rtol=1e-5, atol=1e-4)


def test_rejects_shapes_that_are_not_multiples_of_the_blocks():
    x, y = _operands(48, 32, 32)
    with pytest.raises(ValueError, match="not multiples of the blocks"):
        matmul.matmul(x, y, block_m=32, block_n=32, block_k=32)
    with pytest.raises(ValueError, match="contracting sizes differ"):
        matmul.matmul(x, y.T[:16], block_m=16, block_n=16, block_k=16)
