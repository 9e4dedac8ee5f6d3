"""The example Pallas kernels (examples/kernels/) in interpret mode under jit on the CPU.

Two rows for each workload. ``<workload> vs enp``: the kernel (first column) against the same
computation written with ember.numpy (second column, headed "jax"): what interpret mode costs
over plain operations, with a target of 1.5x. ``<workload> vs JAX Pallas``: the kernel against
JAX Pallas's interpret mode running the very same kernel module with its imports switched to
JAX's (bench/ported.py). Everything is jitted; the kernels run with ``interpret=True`` on both
sides.
"""

from __future__ import annotations

import functools

import numpy as np
from harness import compare
from ported import load, load_with_jax

import ember
import ember.numpy as enp

TARGET = 1.5  # kernel / ember.numpy


def _rows(name, kernel, plain, jax_kernel, args, *, number):
    """The two rows of one workload: ``kernel`` vs ``plain`` (ember.numpy), vs ``jax_kernel``."""
    e_args = [enp.asarray(a) for a in args]

    def run():
        return ember.block_until_ready(kernel(*e_args))

    yield compare(
        f"{name} vs enp",
        run,
        lambda: ember.block_until_ready(plain(*e_args)),
        number=number,
        unit="ms",
        target=TARGET,
    )
    jax_run = None
    if jax_kernel is not None:
        import jax  # the bench environment only

        j_args = [jax.numpy.asarray(a) for a in args]
        jax_run = lambda: jax.block_until_ready(jax_kernel(*j_args))
    yield compare(f"{name} vs JAX Pallas", run, jax_run, number=number, unit="ms")


def _weighted_sum_grad(framework, np_module, f, weights, argnums):
    """jit(grad(sum(f(*args) * weights))) in ``framework`` (ember or jax)."""
    loss = lambda *args: np_module.sum(f(*args) * weights)
    return framework.jit(framework.grad(loss, argnums=argnums))


def _plain_softmax(x):
    e = enp.exp(x - enp.max(x, axis=-1, keepdims=True))
    return e / enp.sum(e, axis=-1, keepdims=True)


def run(have_jax: bool):
    ember_kernels = {n: load(n) for n in ("matmul", "softmax", "layer_norm", "flash_attention")}
    jax_kernels = {}
    if have_jax:
        import jax
        import jax.numpy as jnp

        jax_kernels = {n: load_with_jax(n) for n in ember_kernels}
    rng = np.random.default_rng(0)

    def sides(name, call):
        """``call(module)`` on ember's module and (with JAX) on JAX's port of it."""
        jax_side = call(jax_kernels[name]) if have_jax else None
        return call(ember_kernels[name]), jax_side

    # matmul: 512^3 in 128-blocks, a 4 x 4 x 4 grid.
    x = rng.normal(size=(512, 512)).astype(np.float32)
    y = rng.normal(size=(512, 512)).astype(np.float32)
    blocks = dict(block_m=128, block_n=128, block_k=128, interpret=True)
    kernel, jax_kernel = sides("matmul", lambda m: functools.partial(m.matmul, **blocks))
    plain = ember.jit(lambda x, y: x @ y)
    yield from _rows("matmul 512^3, 128-blocks", kernel, plain, jax_kernel, (x, y), number=5)

    # softmax: 4096 rows of 512 in 256-row blocks, 16 programs.
    x = rng.normal(size=(4096, 512)).astype(np.float32)
    kernel, jax_kernel = sides(
        "softmax", lambda m: functools.partial(m.softmax, block_rows=256, interpret=True)
    )
    yield from _rows(
        "softmax 4096x512", kernel, ember.jit(_plain_softmax), jax_kernel, (x,), number=5
    )

    # layer_norm: the same array, forward and gradient.
    w = rng.normal(size=512).astype(np.float32)
    b = rng.normal(size=512).astype(np.float32)
    ct = rng.normal(size=x.shape).astype(np.float32)
    ln = dict(block_rows=256, interpret=True)
    layer_norm = ember_kernels["layer_norm"]
    kernel, jax_kernel = sides("layer_norm", lambda m: functools.partial(m.layer_norm, **ln))
    plain = ember.jit(layer_norm.reference_layer_norm)
    yield from _rows("layer_norm 4096x512", kernel, plain, jax_kernel, (x, w, b), number=5)
    kernel_grad = _weighted_sum_grad(ember, enp, kernel, ct, (0, 1, 2))
    plain_grad = _weighted_sum_grad(ember, enp, layer_norm.reference_layer_norm, ct, (0, 1, 2))
    jax_grad = _weighted_sum_grad(jax, jnp, jax_kernel, ct, (0, 1, 2)) if have_jax else None
    yield from _rows(
        "grad layer_norm 4096x512", kernel_grad, plain_grad, jax_grad, (x, w, b), number=5
    )

    # flash attention: (batch 4, seq 512, heads 4, head_dim 64) in 128-blocks.
    shape = (4, 512, 4, 64)
    q, k, v = (rng.normal(size=shape).astype(np.float32) for _ in range(3))
    ct = rng.normal(size=shape).astype(np.float32)
    for causal in (False, True):
        fa = dict(causal=causal, block_q=128, block_k=128, interpret=True)
        kernel, jax_kernel = sides(
            "flash_attention", lambda m, fa=fa: functools.partial(m.flash_attention, **fa)
        )
        plain = ember.jit(functools.partial(ember.nn.dot_product_attention, is_causal=causal))
        label = f"flash{' causal' if causal else ''} 4x512x4x64"
        yield from _rows(label, kernel, plain, jax_kernel, (q, k, v), number=3)
        kernel_grad = _weighted_sum_grad(ember, enp, kernel, ct, (0, 1, 2))
        plain_grad = _weighted_sum_grad(ember, enp, plain, ct, (0, 1, 2))
        jax_grad = _weighted_sum_grad(jax, jnp, jax_kernel, ct, (0, 1, 2)) if have_jax else None
        yield from _rows(f"grad {label}", kernel_grad, plain_grad, jax_grad, (q, k, v), number=2)
