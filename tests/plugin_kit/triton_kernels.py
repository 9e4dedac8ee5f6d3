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
from tests.kernels.examples import load


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


# -- a scratch accumulator (scratch_shapes, kept in registers): row blocks of x summed over a
# loop, doubled by the odd programs, then shifted by one through a run_scoped buffer


def scratch_sum_kernel(x_ref, o_ref, acc_ref, *, rows):
    acc_ref[...] = enp.zeros(acc_ref.shape, enp.float32)

    def step(i, carry):
        acc_ref[...] += x_ref[pl.ds(i * rows, rows), :]
        return carry

    lax.fori_loop(0, x_ref.shape[0] // rows, step, 0)

    @pl.when(pl.program_id(0) % 2 == 1)
    def _():
        acc_ref[...] = acc_ref[...] * 2.0

    def shifted(tmp_ref):
        tmp_ref[...] = acc_ref[...] + 1.0
        return tmp_ref[...]

    o_ref[...] = pl.run_scoped(shifted, _shape(acc_ref.shape))


def scratch_sum(x, rows=16, steps=4):
    cols = x.shape[1]
    return pl.pallas_call(
        functools.partial(scratch_sum_kernel, rows=rows),
        out_shape=_shape((x.shape[0] // steps, cols), x.dtype),
        grid=(x.shape[0] // (rows * steps),),
        in_specs=[pl.BlockSpec((rows * steps, cols), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((rows, cols), lambda i: (i, 0)),
        scratch_shapes=[_shape((rows, cols))],
    )(x)


def scratch_sum_numpy(x, rows=16, steps=4):
    sums = x.reshape(-1, steps, rows, x.shape[1]).sum(axis=1)
    sums[1::2] *= 2
    return (sums + 1).reshape(-1, x.shape[1])


# -- rotary position embedding: slices of a loaded block and a concatenation (rotate-half)


def rope_kernel(x_ref, cos_ref, sin_ref, o_ref):
    x = x_ref[...]
    half = x.shape[1] // 2
    rotated = enp.concatenate([-x[:, half:], x[:, :half]], axis=1)
    o_ref[...] = x * cos_ref[...] + rotated * sin_ref[...]


def rope(x, cos, sin, rows=16):
    spec = pl.BlockSpec((rows, x.shape[1]), lambda i: (i, 0))
    return pl.pallas_call(
        rope_kernel,
        out_shape=_shape(x.shape, x.dtype),
        grid=(x.shape[0] // rows,),
        in_specs=[spec, spec, spec],
        out_specs=spec,
    )(x, cos, sin)


def rope_numpy(x, cos, sin):
    half = x.shape[1] // 2
    return x * cos + np.concatenate([-x[:, half:], x[:, :half]], axis=1) * sin


def _rng():
    return np.random.default_rng(0)


def cases():
    rng = _rng()
    a, b = rng.standard_normal((2, 1000), dtype=np.float32)
    x = rng.standard_normal((64, 64), dtype=np.float32)
    y = rng.standard_normal((64, 64), dtype=np.float32)
    rows = rng.standard_normal((16, 128), dtype=np.float32)
    q, k, v = rng.standard_normal((3, 64, 32), dtype=np.float32)
    tall = rng.standard_normal((256, 32), dtype=np.float32)
    angles = rng.uniform(0, 2 * np.pi, (64, 64)).astype(np.float32)
    cos, sin = np.cos(angles), np.sin(angles)
    return {
        "add": (add, (a, b), a + b),
        "matmul": (matmul, (x, y), x @ y),
        "softmax": (softmax, (rows,), softmax_numpy(rows)),
        "flash_attention": (flash_attention, (q, k, v), attention_numpy(q, k, v)),
        "masked_sum": (masked_sum, (a, np.ones(1, np.float32)), np.array([1 + a.sum()])),
        "scratch_sum": (scratch_sum, (tall,), scratch_sum_numpy(tall)),
        "rope": (rope, (x, cos, sin), rope_numpy(x, cos, sin)),
    }


# -- programs over the example kernels (examples/kernels), forward and backward


def example_programs():
    """Programs over the example kernels of examples/kernels: name -> (``make``, arguments),
    where ``make(interpret)`` is the program with the kernels interpreted or not."""
    matmul, softmax = load("matmul"), load("softmax")
    layer_norm, attention = load("layer_norm"), load("flash_attention")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 64), dtype=np.float32)
    y = rng.standard_normal((64, 64), dtype=np.float32)
    w, b = rng.standard_normal((2, 64), dtype=np.float32)
    q, k, v = rng.standard_normal((3, 1, 64, 2, 32), dtype=np.float32)

    def ln_loss(interpret):
        def loss(x, w, b):
            return (layer_norm.layer_norm(x, w, b, block_rows=32, interpret=interpret) ** 2).sum()

        return loss

    def attention_fn(interpret):
        def fn(q, k, v):
            return attention.flash_attention(
                q, k, v, causal=True, block_q=32, block_k=32, interpret=interpret
            )

        return fn

    def attention_loss(interpret):
        def loss(q, k, v):
            return (attention_fn(interpret)(q, k, v) * v).sum()

        return loss

    return {
        "matmul": (
            lambda i: (
                lambda x, y: matmul.matmul(x, y, block_m=32, block_n=32, block_k=32, interpret=i)
            ),
            (x, y),
        ),
        "matmul_looping_k": (
            lambda i: (
                lambda x, y: matmul.matmul_looping_k(
                    x, y, block_m=32, block_n=32, block_k=16, interpret=i
                )
            ),
            (x, y),
        ),
        "softmax": (lambda i: lambda x: softmax.softmax(x, block_rows=16, interpret=i), (x,)),
        "layer_norm": (
            lambda i: lambda x, w, b: layer_norm.layer_norm(x, w, b, block_rows=32, interpret=i),
            (x, w, b),
        ),
        "layer_norm_grad": (lambda i: ember.grad(ln_loss(i), argnums=(0, 1, 2)), (x, w, b)),
        "flash_attention": (attention_fn, (q, k, v)),
        "flash_attention_grad": (
            lambda i: ember.grad(attention_loss(i), argnums=(0, 1, 2)),
            (q, k, v),
        ),
    }
