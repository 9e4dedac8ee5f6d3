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
        "mean(axis=1)": lambda m, a: m.mean(a, axis=1),
        "max": lambda m, a: m.max(a),
        "argmax": lambda m, a: m.argmax(a, axis=0),
        "maximum": lambda m, a: m.maximum(a, 0.0),
        "clip": lambda m, a: m.clip(a, -0.5, 0.5),
        "astype": lambda m, a: a.astype(m.int32),
        "cumsum": lambda m, a: m.cumsum(a, axis=0),
        "sort": lambda m, a: m.sort(a, axis=-1),
        "concatenate": lambda m, a: m.concatenate([a, a], axis=0),
        "reshape": lambda m, a: m.reshape(a, (4, 16)),
        "transpose": lambda m, a: a.T,
        "slice": lambda m, a: a[1:3, ::2],
        "at.set": lambda m, a: a.at[0].set(1.0),
        "einsum": lambda m, a: m.einsum("ij,jk->ik", a, a),
        "linalg.norm": lambda m, a: m.linalg.norm(a),
        "split": lambda m, a: m.split(a, 2),
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
