"""A jitted MLP training step (forward, backward, SGD update), small and medium sizes."""

from __future__ import annotations

import numpy as np
from harness import compare

import ember
import ember.numpy as enp

SIZES = {
    "digits-size 64-128-64-10, batch 64": ([64, 128, 64, 10], 64),
    "784-1024-1024-10, batch 256": ([784, 1024, 1024, 10], 256),
}


def make_step(np_module, value_and_grad, jit, tree_map):
    def loss(params, x, y):
        for w, b in params[:-1]:
            x = np_module.tanh(x @ w + b)
        w, b = params[-1]
        logits = x @ w + b
        logits = logits - np_module.max(logits, axis=-1, keepdims=True)
        log_probs = logits - np_module.log(np_module.sum(np_module.exp(logits), -1, keepdims=True))
        return -np_module.mean(np_module.sum(y * log_probs, axis=-1))

    @jit
    def step(params, x, y):
        value, grads = value_and_grad(loss)(params, x, y)
        return tree_map(lambda p, g: p - 0.01 * g, params, grads), value

    return step


def init(rng, sizes):
    return [
        (rng.normal(size=(m, n)).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32))
        for m, n in zip(sizes[:-1], sizes[1:])
    ]


def run(have_jax: bool):
    rng = np.random.default_rng(0)
    for label, (sizes, batch) in SIZES.items():
        yield _one_size(rng, label, sizes, batch, have_jax)


def _one_size(rng, label, sizes, batch, have_jax):
    params = init(rng, sizes)
    x = rng.normal(size=(batch, sizes[0])).astype(np.float32)
    y = np.eye(sizes[-1], dtype=np.float32)[rng.integers(0, sizes[-1], batch)]
    e_step = make_step(enp, ember.value_and_grad, ember.jit, ember.tree_util.tree_map)
    e_state = {"params": [(enp.asarray(w), enp.asarray(b)) for w, b in params]}
    ex, ey = enp.asarray(x), enp.asarray(y)

    def ember_step():
        e_state["params"], loss = e_step(e_state["params"], ex, ey)
        loss.block_until_ready()

    jax_step = None
    if have_jax:
        import jax
        import jax.numpy as jnp

        j_step = make_step(jnp, jax.value_and_grad, jax.jit, jax.tree_util.tree_map)
        j_state = {"params": [(jnp.asarray(w), jnp.asarray(b)) for w, b in params]}
        jx, jy = jnp.asarray(x), jnp.asarray(y)

        def jax_step():
            j_state["params"], loss = j_step(j_state["params"], jx, jy)
            loss.block_until_ready()

    number = 200 if batch < 100 else 10
    return compare(f"train step, {label}", ember_step, jax_step, number=number, target=1.1)
