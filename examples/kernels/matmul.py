"""A tiled matrix multiplication written as a Pallas kernel.

The output is cut into (block_m, block_n) tiles, one per (i, j) program, and the shared
dimension into block_k slices along a third grid axis k. Every k step of one (i, j) tile sees
the same output block (its index_map ignores k), so the kernel accumulates into it: the first
step (``k == 0``) zeroes it, every step adds ``x_tile @ y_tile``.

That relies on the k axis running in order, one step after another, which holds in interpret
mode (the grid is a sequential loop) and on TPU. A GPU runs the programs of a grid in parallel,
so ``matmul_looping_k`` computes the same product with a (i, j) grid whose programs are
independent: each one loops over k inside the kernel, reading a block_k slice of its row of x
and column of y per step (the form for Triton).

    python examples/kernels/matmul.py
"""

from __future__ import annotations

import functools

import numpy as np

import ember
import ember.experimental.pallas as pl
import ember.numpy as enp
from ember import lax


def matmul_kernel(x_ref, y_ref, z_ref):
    """One k step of one output tile: z += x_tile @ y_tile (z zeroed on the first step)."""

    @pl.when(pl.program_id(2) == 0)
    def _():
        z_ref[...] = enp.zeros(z_ref.shape, z_ref.dtype)

    z_ref[...] += enp.dot(x_ref[...], y_ref[...])


def matmul_looping_k_kernel(x_ref, y_ref, z_ref, *, block_k):
    """A whole output tile: x's (block_m, k) rows times y's (k, block_n) columns, block_k at a
    time, accumulated in float32 in a loop carry rather than in the output."""

    def step(k, acc):
        x = x_ref[:, pl.ds(k * block_k, block_k)]
        y = y_ref[pl.ds(k * block_k, block_k), :]
        return acc + enp.dot(x, y).astype(enp.float32)

    acc = enp.zeros(z_ref.shape, enp.float32)
    z_ref[...] = lax.fori_loop(0, x_ref.shape[1] // block_k, step, acc).astype(z_ref.dtype)


def _check_shapes(x, y, block_m, block_n, block_k):
    (m, k), (k2, n) = x.shape, y.shape
    if k != k2:
        raise ValueError(f"matmul: contracting sizes differ: x is {x.shape}, y is {y.shape}")
    if m % block_m or n % block_n or k % block_k:
        raise ValueError(
            f"matmul: shapes {x.shape} @ {y.shape} are not multiples of the blocks "
            f"({block_m}, {block_k}) @ ({block_k}, {block_n})"
        )
    return m, k, n


@functools.partial(ember.jit, static_argnames=("block_m", "block_n", "block_k", "interpret"))
def matmul(x, y, *, block_m=128, block_n=128, block_k=128, interpret=False):
    """``x @ y`` for (m, k) and (k, n) matrices whose sizes are multiples of the blocks.

    ``interpret=True`` runs the kernel as a loop of ordinary operations on any backend; a
    platform without a kernel compiler (cpu, reference) interprets it anyway. The k steps must
    run in order, so on a GPU use ``interpret=True`` or ``matmul_looping_k``.
    """
    m, k, n = _check_shapes(x, y, block_m, block_n, block_k)
    return pl.pallas_call(
        matmul_kernel,
        out_shape=ember.ShapeDtypeStruct((m, n), enp.result_type(x, y)),
        grid=(m // block_m, n // block_n, k // block_k),
        in_specs=[
            pl.BlockSpec((block_m, block_k), lambda i, j, k: (i, k)),
            pl.BlockSpec((block_k, block_n), lambda i, j, k: (k, j)),
        ],
        out_specs=pl.BlockSpec((block_m, block_n), lambda i, j, k: (i, j)),
        interpret=interpret,
    )(x, y)


@functools.partial(ember.jit, static_argnames=("block_m", "block_n", "block_k", "interpret"))
def matmul_looping_k(x, y, *, block_m=64, block_n=64, block_k=32, interpret=False):
    """``x @ y`` as ``matmul``, on an (m / block_m, n / block_n) grid of independent programs."""
    m, k, n = _check_shapes(x, y, block_m, block_n, block_k)
    return pl.pallas_call(
        functools.partial(matmul_looping_k_kernel, block_k=block_k),
        out_shape=ember.ShapeDtypeStruct((m, n), enp.result_type(x, y)),
        grid=(m // block_m, n // block_n),
        in_specs=[
            pl.BlockSpec((block_m, k), lambda i, j: (i, 0)),
            pl.BlockSpec((k, block_n), lambda i, j: (0, j)),
        ],
        out_specs=pl.BlockSpec((block_m, block_n), lambda i, j: (i, j)),
        interpret=interpret,
    )(x, y)


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 192)).astype(np.float32)
    y = rng.normal(size=(192, 128)).astype(np.float32)
    z = matmul(x, y, block_m=64, block_n=64, block_k=64, interpret=True)  # k in order anywhere
    np.testing.assert_allclose(np.asarray(z), x @ y, rtol=1e-4, atol=1e-4)
    z = matmul_looping_k(x, y, block_m=64, block_n=64, block_k=64)
    np.testing.assert_allclose(np.asarray(z), x @ y, rtol=1e-4, atol=1e-4)
    print(
        "matmul: (256, 192) @ (192, 128) in 64-blocks, over a 4 x 2 x 3 grid and over a 4 x 2 "
        "grid looping over k, matches NumPy"
    )


if __name__ == "__main__":
    main()
