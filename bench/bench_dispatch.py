"""Dispatch overhead: a jitted function and an eager op on tiny inputs (microseconds/call)."""

from __future__ import annotations

import numpy as np
from harness import compare

import ember
import ember.numpy as enp


def run(have_jax: bool):
    x_host = np.arange(8, dtype=np.float32)
    ex, ey = enp.asarray(x_host), enp.asarray(x_host + 1)
    ember_add = ember.jit(lambda a, b: a + b)
    jax_call = jax_eager = None
    if have_jax:
        import jax
        import jax.numpy as jnp

        jx, jy = jnp.asarray(x_host), jnp.asarray(x_host + 1)
        jax_add = jax.jit(lambda a, b: a + b)
        jax_call = lambda: jax_add(jx, jy)
        jax_eager = lambda: jnp.multiply(jx, jy)
    yield compare(
        "jit dispatch, f32[8] add", lambda: ember_add(ex, ey), jax_call, number=2000, target=1.5
    )
    yield _pytree_dispatch(have_jax)
    yield compare(
        "eager op, f32[8] multiply",
        lambda: enp.multiply(ex, ey),
        jax_eager,
        number=2000,
        target=2.0,
    )


def _pytree_dispatch(have_jax: bool):
    """A training-step-shaped call: a list of (w, b) pairs in, the same structure out."""

    def step(params, x):
        return [(w + 1, b + 1) for w, b in params], (x * x).sum()

    params = [(np.ones((4, 4), np.float32), np.ones(4, np.float32)) for _ in range(3)]
    x = np.ones(4, np.float32)
    e_params = [(enp.asarray(w), enp.asarray(b)) for w, b in params]
    e_x = enp.asarray(x)
    e_step = ember.jit(step)
    jax_call = None
    if have_jax:
        import jax
        import jax.numpy as jnp

        j_params = [(jnp.asarray(w), jnp.asarray(b)) for w, b in params]
        j_x = jnp.asarray(x)
        j_step = jax.jit(step)
        jax_call = lambda: j_step(j_params, j_x)
    return compare(
        "jit dispatch, pytree 7 in / 7 out",
        lambda: e_step(e_params, e_x),
        jax_call,
        number=2000,
        target=1.5,
    )
