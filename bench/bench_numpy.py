"""ember.numpy beside jax.numpy: eager calls on small arrays (us/call) and a jitted chain of
elementwise operations on 1M elements (ms/call)."""

from __future__ import annotations

import numpy as np
from harness import compare

import ember
import ember.numpy as enp


def _chain(np_module):
    def f(x, y):
        z = np_module.sin(x) * y + np_module.exp(-x * x)
        z = np_module.where(z > 0, z, 0.1 * z)
        return np_module.tanh(z) * 2.0 - y / (1.0 + np_module.abs(x))

    return f


def run(have_jax: bool):
    rng = np.random.default_rng(0)
    small = rng.normal(size=(8, 8)).astype(np.float32)
    es = enp.asarray(small)
    calls = {
        "sum": lambda m, a: m.sum(a, axis=0),
        "matmul": lambda m, a: a @ a,
        "where": lambda m, a: m.where(a > 0, a, 0.0),
        "exp": lambda m, a: m.exp(a),
    }
    js = None
    if have_jax:
        import jax
        import jax.numpy as jnp

        js = jnp.asarray(small)
    for name, call in calls.items():
        jax_fn = (lambda call=call: call(jnp, js)) if have_jax else None
        yield compare(
            f"eager enp.{name}, f32[8,8]",
            lambda call=call: call(enp, es),
            jax_fn,
            number=500,
            target=2.0,
        )
    big_x = rng.normal(size=(1_000_000,)).astype(np.float32)
    big_y = rng.normal(size=(1_000_000,)).astype(np.float32)
    e_chain = ember.jit(_chain(enp))
    ex, ey = enp.asarray(big_x), enp.asarray(big_y)
    jax_chain = None
    if have_jax:
        j_chain = jax.jit(_chain(jnp))
        jx, jy = jnp.asarray(big_x), jnp.asarray(big_y)
        jax_chain = lambda: j_chain(jx, jy).block_until_ready()
    yield compare(
        "jitted elementwise chain, f32[1M]",
        lambda: e_chain(ex, ey).block_until_ready(),
        jax_chain,
        number=20,
        unit="ms",
        target=1.05,
    )
