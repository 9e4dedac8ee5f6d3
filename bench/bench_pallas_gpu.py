"""Pallas kernels compiled natively on an NVIDIA GPU (Triton), beside JAX's.

Runs only where ember's default platform is ``cuda`` (``tox -e cuda-bench``); elsewhere it
prints one line saying why it did nothing. Rows:

- ``flash fwd <shape>``: the forward pass of examples/kernels/flash_attention.py, compiled by
  the CUDA plugin's Triton kernel compiler, against JAX's own Pallas flash attention
  (``jax.experimental.pallas.ops.gpu.attention.mha``) at sequence length 2048, with the same
  block sizes. Target: ember <= 1.2x JAX.
- ``flash fwd <shape> (same kernel)``: the same example module run by JAX Pallas with its
  imports switched to JAX's (bench/ported.py): the same kernel source through both compilers.
- ``flash fwd <shape> vs generic``: the kernel (first column) against
  ``ember.nn.dot_product_attention`` (XLA's own fusion of the plain computation, in the second
  column), both in ember.
"""

from __future__ import annotations

import functools

import numpy as np
from harness import compare
from ported import load, load_with_jax

import ember

TARGET = 1.2  # ember's Triton flash attention forward / JAX's Pallas flash attention
SHAPE = (4, 2048, 8, 64)  # (batch, seq, heads, head_dim)
BLOCK = 64


def run(have_jax: bool):
    if ember.default_backend() != "cuda":
        print(f"bench_pallas_gpu: skipped, ember's default platform is {ember.default_backend()!r}")
        return
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=SHAPE).astype(np.float16) for _ in range(3))
    flash = load("flash_attention")
    blocks = dict(block_q=BLOCK, block_k=BLOCK)
    ember_fwd = ember.jit(functools.partial(flash.flash_attention, **blocks))
    e_args = [ember.device_put(a) for a in (q, k, v)]

    def run_ember():
        return ember.block_until_ready(ember_fwd(*e_args))

    label = "flash fwd " + "x".join(map(str, SHAPE)) + " f16"
    jax_mha = jax_same = None
    if have_jax:
        import jax  # the bench environment only
        from jax.experimental.pallas.ops.gpu import attention

        j_args = [jax.device_put(a) for a in (q, k, v)]
        sizes = attention.BlockSizes(block_q=BLOCK, block_k=BLOCK)
        scale = 1.0 / np.sqrt(SHAPE[-1])
        mha = jax.jit(
            functools.partial(attention.mha, segment_ids=None, sm_scale=scale, block_sizes=sizes)
        )
        jax_mha = lambda: jax.block_until_ready(mha(*j_args))
        ported = load_with_jax("flash_attention")
        same = jax.jit(functools.partial(ported.flash_attention, **blocks))
        jax_same = lambda: jax.block_until_ready(same(*j_args))
        np.testing.assert_allclose(
            np.asarray(run_ember(), np.float32), np.asarray(jax_mha(), np.float32), atol=2e-2
        )
    yield compare(label, run_ember, jax_mha, number=20, unit="ms", target=TARGET)
    yield compare(f"{label} (same kernel)", run_ember, jax_same, number=20, unit="ms")
    generic = ember.jit(ember.nn.dot_product_attention)  # second column: not JAX, ember
    yield compare(
        f"{label} vs generic",
        run_ember,
        lambda: ember.block_until_ready(generic(*e_args)),
        number=20,
        unit="ms",
    )
