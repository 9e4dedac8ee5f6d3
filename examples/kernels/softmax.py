"""A fused row softmax written as a Pallas kernel.

Each program takes ``block_rows`` whole rows, so the max, the exponentials and their sum stay
in the block: the input is read once and the output written once, where the same softmax in
separate operations makes a pass over memory for each of them.

The grid is ``cdiv(rows, block_rows)``: when the rows are not a multiple of the block, the
last block runs past the end of the array. Rows are independent, so the padding rows it reads
(whatever values) only produce padding rows of output, which are never written back.

    python examples/kernels/softmax.py
"""

from __future__ import annotations

import functools

import numpy as np

import ember
import ember.experimental.pallas as pl
import ember.numpy as enp


def softmax_kernel(x_ref, o_ref):
    """Softmax of each row of the block, subtracting the row's max so exp never overflows."""
    x = x_ref[...].astype(enp.float32)
    e = enp.exp(x - enp.max(x, axis=-1, keepdims=True))
    o_ref[...] = (e / enp.sum(e, axis=-1, keepdims=True)).astype(o_ref.dtype)


@functools.partial(ember.jit, static_argnames=("block_rows", "interpret"))
def softmax(x, *, block_rows=64, interpret=False):
    """Softmax over the last axis of a (rows, cols) array, ``block_rows`` rows per program."""
    if x.ndim != 2:
        raise ValueError(f"softmax: expected a (rows, cols) array, got shape {x.shape}")
    rows, cols = x.shape
    block_rows = min(block_rows, rows)
    return pl.pallas_call(
        softmax_kernel,
        out_shape=ember.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(pl.cdiv(rows, block_rows),),
        in_specs=[pl.BlockSpec((block_rows, cols), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((block_rows, cols), lambda i: (i, 0)),
        interpret=interpret,
    )(x)


def reference_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def main() -> None:
    x = np.random.default_rng(0).normal(size=(100, 48)).astype(np.float32) * 10
    y = softmax(x, block_rows=32)  # 4 programs, the last one 4 rows long
    np.testing.assert_allclose(np.asarray(y), reference_softmax(x), rtol=1e-5, atol=1e-6)
    print("softmax: (100, 48) in blocks of 32 rows (the last one padded) matches NumPy")


if __name__ == "__main__":
    main()
