"""Transformations through control flow: scan RNN gradients, per-example gradients, and the
peak memory of a checkpointed deep network (from the compiled executables' memory stats)."""

from __future__ import annotations

import numpy as np
from harness import Result, compare

import ember
import ember.numpy as enp
from ember import lax


def _rnn_loss(np_module, scan):
    def loss(W, U, h0, xs):
        def step(h, x):
            h = np_module.tanh(h @ W + x @ U)
            return h, np_module.sum(h)

        h, ys = scan(step, h0, xs)
        return np_module.sum(h) + np_module.sum(ys)

    return loss


def _mlp_loss(np_module):
    def loss(params, x, y):
        for w, b in params[:-1]:
            x = np_module.tanh(x @ w + b)
        w, b = params[-1]
        return np_module.mean((x @ w + b - y) ** 2)

    return loss


def _deep_net(np_module, checkpoint, policy):
    def block(w, h):
        return np_module.tanh(np_module.sin(h @ w) * 2.0)

    def loss(ws, x):
        h = x
        for w in ws:
            h = checkpoint(block, policy=policy)(w, h)
        return np_module.sum(h * h)

    return loss


def run(have_jax: bool):
    rng = np.random.default_rng(0)
    hidden, steps = 32, 1000
    W = (rng.normal(size=(hidden, hidden)) / np.sqrt(hidden)).astype(np.float32)
    U = (rng.normal(size=(8, hidden)) / np.sqrt(8)).astype(np.float32)
    h0 = np.zeros(hidden, np.float32)
    xs = rng.normal(size=(steps, 8)).astype(np.float32)
    e_grad = ember.jit(ember.grad(_rnn_loss(enp, lax.scan), argnums=(0, 1)))
    e_args = [enp.asarray(a) for a in (W, U, h0, xs)]
    jax_rnn = None
    if have_jax:
        import jax
        import jax.numpy as jnp

        j_grad = jax.jit(jax.grad(_rnn_loss(jnp, jax.lax.scan), argnums=(0, 1)))
        j_args = [jnp.asarray(a) for a in (W, U, h0, xs)]
        jax_rnn = lambda: jax.block_until_ready(j_grad(*j_args))
    yield compare(
        f"jit(grad(scan RNN)), {steps} steps, hidden {hidden}",
        lambda: ember.block_until_ready(e_grad(*e_args)),
        jax_rnn,
        number=10,
        unit="ms",
        target=1.1,
    )

    sizes, batch = [32, 64, 64, 10], 128
    params = [
        ((rng.normal(size=(m, n)) / np.sqrt(m)).astype(np.float32), np.zeros(n, np.float32))
        for m, n in zip(sizes[:-1], sizes[1:])
    ]
    x = rng.normal(size=(batch, sizes[0])).astype(np.float32)
    y = rng.normal(size=(batch, sizes[-1])).astype(np.float32)
    e_pe = ember.jit(ember.vmap(ember.grad(_mlp_loss(enp)), in_axes=(None, 0, 0)))
    e_params = [(enp.asarray(w), enp.asarray(b)) for w, b in params]
    ex, ey = enp.asarray(x), enp.asarray(y)
    jax_pe = None
    if have_jax:
        j_pe = jax.jit(jax.vmap(jax.grad(_mlp_loss(jnp)), in_axes=(None, 0, 0)))
        j_params = [(jnp.asarray(w), jnp.asarray(b)) for w, b in params]
        jx, jy = jnp.asarray(x), jnp.asarray(y)
        jax_pe = lambda: jax.block_until_ready(j_pe(j_params, jx, jy))
    yield compare(
        f"per-example grads jit(vmap(grad)), batch {batch}",
        lambda: ember.block_until_ready(e_pe(e_params, ex, ey)),
        jax_pe,
        number=50,
        unit="us",
        target=1.1,
    )
    yield from _checkpoint_memory(rng, have_jax)


def _checkpoint_memory(rng, have_jax: bool):
    depth, width, batch = 24, 256, 64
    scale = 1 / np.sqrt(width)
    ws = [(rng.normal(size=(width, width)) * scale).astype(np.float32) for _ in range(depth)]
    x = rng.normal(size=(batch, width)).astype(np.float32)
    for name in ("nothing_saveable", "dots_with_no_batch_dims_saveable"):
        policy = getattr(ember.checkpoint_policies, name)
        e_fn = ember.jit(ember.grad(_deep_net(enp, ember.checkpoint, policy)))
        e_bytes = e_fn.lower(ws, x).compile().memory_analysis().temp_size_in_bytes
        j_bytes = None
        if have_jax:
            import jax
            import jax.numpy as jnp

            j_policy = getattr(jax.checkpoint_policies, name)
            j_fn = jax.jit(jax.grad(_deep_net(jnp, jax.checkpoint, j_policy)))
            j_bytes = j_fn.lower(ws, x).compile().memory_analysis().temp_size_in_bytes
        yield Result(
            f"peak temp memory, grad(checkpoint) {name}",
            "MiB",
            e_bytes / 2**20,
            None if j_bytes is None else j_bytes / 2**20,
            1.0,
        )
