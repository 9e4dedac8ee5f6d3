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
    yield compare(
        "eager op, f32[8] multiply",
        lambda: enp.multiply(ex, ey),
        jax_eager,
        number=2000,
        target=2.0,
    )
