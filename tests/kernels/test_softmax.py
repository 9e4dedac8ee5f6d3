"""examples/kernels/softmax.py: the fused row softmax against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.kernels.examples import load

softmax = load("softmax")


@pytest.mark.parametrize(
    "rows, cols, block_rows",
    [
        (64, 32, 16),  # four whole blocks
        (50, 24, 16),  # the last block runs 14 rows past the end
        (8, 128, 64),  # one block, clipped to the 8 rows there are
    ],
)
def test_matches_numpy(rows, cols, block_rows):
    x = np.random.default_rng(rows).normal(size=(rows, cols)).astype(np.float32) * 5
    y = np.asarray(softmax.softmax(x, block_rows=block_rows))
    assert y.shape == x.shape and y.dtype == np.float32
    np.testing.assert_allclose(y, softmax.reference_softmax(x), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(y.sum(axis=-1), 1.0, rtol=1e-5)


def test_large_logits_do_not_overflow():
    x = np.array([[1000.0, 999.0, -1000.0], [-5.0, -5.0, -5.0]], np.float32)
    y = np.asarray(softmax.softmax(x))
    e = np.exp([1.0, 0.0])
    np.testing.assert_allclose(y[0], [e[0] / e.sum(), e[1] / e.sum(), 0.0], rtol=1e-6)
    np.testing.assert_allclose(y[1], [1 / 3] * 3, rtol=1e-6)


def test_runs_eagerly_without_jit():
    x = np.random.default_rng(1).normal(size=(20, 16)).astype(np.float32)
    with ember.disable_jit():
        y = softmax.softmax(x, block_rows=8)
    np.testing.assert_allclose(np.asarray(y), softmax.reference_softmax(x), rtol=1e-5, atol=1e-7)


def test_rejects_arrays_that_are_not_matrices():
    with pytest.raises(ValueError, match="expected a \\(rows, cols\\) array"):
        softmax.softmax(np.zeros((2, 3, 4), np.float32))


def test_vmap_runs_the_kernel_on_each_matrix():
    x = np.random.default_rng(2).normal(size=(3, 20, 16)).astype(np.float32)
    y = ember.vmap(lambda m: softmax.softmax(m, block_rows=8))(x)
    np.testing.assert_allclose(np.asarray(y), softmax.reference_softmax(x), rtol=1e-5, atol=1e-7)
