"""Small Pallas kernels for the Triton lowering's tests, each with its NumPy answer.

``CASES`` maps a name to ``(function, arguments, numpy_answer)``: the function calls
``pl.pallas_call`` (natively compiled where the platform has a kernel compiler), the answer
takes the same NumPy arrays.
"""

from __future__ import annotations

import functools

import numpy as np

import ember
import ember.experimental.pallas as pl
import ember.numpy as enp
from ember import lax


def _shape(shape, dtype=np.float32):
    return ember.ShapeDtypeStruct(shape, dtype)


# -- add: one block per program; 1000 is not a multiple of 256, so the last block is masked


def add_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def add(x, y):
    spec = pl.BlockSpec((256,), lambda i: (i,))
    return pl.pallas_call(
        add_kernel,
        out_shape=_shape(x.shape, x.dtype),
        grid=(pl.cdiv(x.shape[0], 256),),
        in_specs=[spec, spec],
        out_specs=spec,
    )(x, y)


# -- a tiled matmul: a (bm, bn) output block per program, a loop over K in bk steps


def matmul_kernel(x_ref, y_ref, o_ref, *, bk):
    def step(k, acc):
        x = x_ref[:, pl.ds(k * bk, bk)]
        y = y_ref[pl.ds(k * bk, bk), :]
        return acc + pl.dot(x, y)

    acc = enp.zeros(o_ref.shape, enp.float32)
    acc = lax.fori_loop(0, x_ref.shape[1] // bk, step, acc)
    o_ref[...] = acc.astype(o_ref.dtype)


def matmul(x, y, bm=32, bn=32, bk=16):
    (m, k), (_, n) = x.shape, y.shape
    return pl.pallas_call(
        functools.partial(matmul_kernel, bk=bk),
        out_shape=_shape((m, n), x.dtype),
        grid=(m // bm, n // bn),
        in_specs=[
            pl.BlockSpec((bm, k), lambda i, j: (i, 0)),
            pl.BlockSpec((k, bn), lambda i, j: (0, j)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
        compiler_params={"triton": {"num_warps": 4, "num_stages": 2}},
    )(x, y)


# -- a row softmax: a block of rows per program


def softmax_kernel(x_ref, o_ref):
    x = x_ref[...]
    e = enp.exp(x - enp.max(x, axis=1, keepdims=True))
    o_ref[...] = e / enp.sum(e, axis=1, keepdims=True)


def softmax(x, rows=4):
    spec = pl.BlockSpec((rows, x.shape[1]), lambda i: (i, 0))
    return pl.pallas_call(
        softmax_kernel,
        out_shape=_shape(x.shape, x.dtype),
        grid=(x.shape[0] // rows,),
        in_specs=[spec],
        out_specs=spec,
    )(x)


def softmax_numpy(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# -- flash attention forward: a block of queries per program, an online softmax over key
# blocks (one head; batch and heads are further grid axes in real use)


def flash_attention_kernel(q_ref, k_ref, v_ref, o_ref, *, block_k, scale):
    q = q_ref[...] * scale
    block_q = q.shape[0]

    def step(j, carry):
        acc, m, denom = carry
        k = k_ref[pl.ds(j * block_k, block_k), :]
        v = v_ref[pl.ds(j * block_k, block_k), :]
        s = pl.dot(q, k, trans_b=True)
        m_new = enp.maximum(m, enp.max(s, axis=1))
        p = enp.exp(s - m_new[:, None])
        correction = enp.exp(m - m_new)
        denom_new = denom * correction + enp.sum(p, axis=1)
        acc = acc * correction[:, None] + pl.dot(p, v)
        return acc, m_new, denom_new

    init = (
        enp.zeros(o_ref.shape, enp.float32),
        enp.full((block_q,), -enp.inf, enp.float32),
        enp.zeros((block_q,), enp.float32),
    )
    acc, _, denom = lax.fori_loop(0, k_ref.shape[0] // block_k, step, init)
    o_ref[...] = (acc / denom[:, None]).astype(o_ref.dtype)


def flash_attention(q, k, v, block_q=32, block_k=32):
    seq, dim = q.shape
    kernel = functools.partial(
        flash_attention_kernel, block_k=block_k, scale=float(1.0 / np.sqrt(dim))
    )
    whole = pl.BlockSpec((k.shape[0], dim), lambda i: (0, 0))
    return pl.pallas_call(
        kernel,
        out_shape=_shape(q.shape, q.dtype),
        grid=(seq // block_q,),
        in_specs=[pl.BlockSpec((block_q, dim), lambda i: (i, 0)), whole, whole],
        out_specs=pl.BlockSpec((block_q, dim), lambda i: (i, 0)),
    )(q, k, v)


def attention_numpy(q, k, v):
    s = (q @ k.T) / np.sqrt(q.shape[1])
    return softmax_numpy(s) @ v


# -- a masked, atomic kernel: per-program partial sums added into one output, which starts as
# the second input (aliased)


def masked_sum_kernel(x_ref, total_ref, o_ref, *, n):
    # o_ref starts as total_ref (aliased); every program adds its partial sum atomically.
    i = pl.program_id(0)
    offsets = i * 128 + enp.arange(128)
    x = pl.load(x_ref, pl.ds(i * 128, 128), mask=offsets < n, other=0.0)
    pl.atomic_add(o_ref, 0, enp.sum(x))


def masked_sum(x, total):
    n = x.shape[0]
    return pl.pallas_call(
        functools.partial(masked_sum_kernel, n=n),
        out_shape=_shape((1,), x.dtype),
        grid=(pl.cdiv(n, 128),),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)] * 2,
        out_specs=pl.BlockSpec(memory_space=pl.ANY),
        input_output_aliases={1: 0},
    )(x, total)


def _rng():
    return np.random.default_rng(0)


def cases():
    rng = _rng()
    a, b = rng.standard_normal((2, 1000), dtype=np.float32)
    x = rng.standard_normal((64, 64), dtype=np.float32)
    y = rng.standard_normal((64, 64), dtype=np.float32)
    rows = rng.standard_normal((16, 128), dtype=np.float32)
    q, k, v = rng.standard_normal((3, 64, 32), dtype=np.float32)
    return {
        "add": (add, (a, b), a + b),
        "matmul": (matmul, (x, y), x @ y),
        "softmax": (softmax, (rows,), softmax_numpy(rows)),
        "flash_attention": (flash_attention, (q, k, v), attention_numpy(q, k, v)),
        "masked_sum": (masked_sum, (a, np.ones(1, np.float32)), np.array([1 + a.sum()])),
    }
