"""Tracing, lowering and compiling grad of a 200-layer MLP, with a fresh function each time."""

from __future__ import annotations

import numpy as np
from harness import compare

import ember
import ember.numpy as enp

LAYERS = 200
WIDTH = 16


def make_loss(np_module):
    """A fresh loss function object each call, so no cache keyed on the function can serve it."""

    def loss(params, x):
        for w, b in params:
            x = np_module.tanh(x @ w + b)
        return np_module.sum(x * x)

    return loss


def make_params(rng):
    return [
        (rng.normal(size=(WIDTH, WIDTH)).astype(np.float32) / 4, np.zeros(WIDTH, np.float32))
        for _ in range(LAYERS)
    ]


def run(have_jax: bool):
    rng = np.random.default_rng(0)
    params = make_params(rng)
    x = rng.normal(size=(8, WIDTH)).astype(np.float32)
    e_params = [(enp.asarray(w), enp.asarray(b)) for w, b in params]
    e_x = enp.asarray(x)

    ember_trace = lambda: ember.make_jaxpr(ember.grad(make_loss(enp)))(e_params, e_x)
    ember_lower = lambda: ember.jit(ember.grad(make_loss(enp))).lower(e_params, e_x).as_text()
    ember_compile = lambda: ember.jit(ember.grad(make_loss(enp))).lower(e_params, e_x).compile()
    jax_trace = jax_lower = jax_compile = None
    if have_jax:
        import jax
        import jax.numpy as jnp

        j_params = [(jnp.asarray(w), jnp.asarray(b)) for w, b in params]
        j_x = jnp.asarray(x)
        jax_trace = lambda: jax.make_jaxpr(jax.grad(make_loss(jnp)))(j_params, j_x)
        jax_lower = lambda: jax.jit(jax.grad(make_loss(jnp))).lower(j_params, j_x).as_text()
        jax_compile = lambda: jax.jit(jax.grad(make_loss(jnp))).lower(j_params, j_x).compile()
    yield compare(
        f"cold trace grad(MLP-{LAYERS})", ember_trace, jax_trace, number=3, unit="ms", target=1.0
    )
    yield compare(
        f"trace + lower grad(MLP-{LAYERS}) to text",
        ember_lower,
        jax_lower,
        number=2,
        repeats=5,
        unit="ms",
        target=1.0,
    )
    yield compare(
        f"trace + lower + compile grad(MLP-{LAYERS})",
        ember_compile,
        jax_compile,
        number=1,
        repeats=3,
        unit="ms",
        target=None,
    )
