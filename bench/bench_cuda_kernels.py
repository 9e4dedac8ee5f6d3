"""The CUDA plugin's cupy attention kernel against ember's generic attention, on a GPU.

Runs only where ember's default platform is ``cuda`` and cupy is installed
(``pip install ember-plugin-cuda[cuda12]``); elsewhere it prints one line saying why it did
nothing. Rows ``cupy attention <shape> vs generic``: ``ember.nn.dot_product_attention(...,
implementation="cuda")`` (first column) against the default implementation, XLA's fusion of
the plain computation (second column: not JAX, ember), causal, float32, at sequence lengths
1024 and 2048. Target (issue 11): the kernel faster than the generic path (ratio < 1).
"""

from __future__ import annotations

import functools
import importlib.util

import numpy as np
from harness import compare

import ember

TARGET = 1.0  # cupy kernel / generic attention
SEQUENCES = (1024, 2048)
BATCH, HEADS, HEAD_DIM = 4, 8, 64


def run(have_jax: bool):
    if ember.default_backend() != "cuda":
        print(
            f"bench_cuda_kernels: skipped, ember's default platform is {ember.default_backend()!r}"
        )
        return
    if importlib.util.find_spec("cupy") is None:
        print("bench_cuda_kernels: skipped, cupy is not installed (the cuda12 extra brings it)")
        return
    for seq in SEQUENCES:
        yield _compare_at(seq)


def _compare_at(seq: int):
    shape = (BATCH, seq, HEADS, HEAD_DIM)
    rng = np.random.default_rng(seq)
    args = [ember.device_put(rng.normal(size=shape).astype(np.float32)) for _ in range(3)]
    attend = functools.partial(ember.nn.dot_product_attention, is_causal=True)
    fused = ember.jit(functools.partial(attend, implementation="cuda"))
    generic = ember.jit(attend)
    np.testing.assert_allclose(
        np.asarray(fused(*args)), np.asarray(generic(*args)), rtol=1e-3, atol=1e-4
    )
    return compare(
        "cupy attention " + "x".join(map(str, shape)) + " f32 causal vs generic",
        lambda: ember.block_until_ready(fused(*args)),
        lambda: ember.block_until_ready(generic(*args)),
        number=20,
        unit="ms",
        target=TARGET,
    )
