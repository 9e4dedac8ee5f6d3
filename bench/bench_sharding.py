"""SPMD on 8 host devices, beside JAX on the same 8 devices: a data-parallel training step,
a shard_map psum round trip, and dispatch of a jitted function over 8-way sharded inputs.

Both frameworks need 8 CPU devices from the start, so this module runs in its own process
(``run_all.py`` starts it); run it alone with ``python bench/bench_sharding.py``.
"""

from __future__ import annotations

import os
import sys

os.environ["EMBER_CPU_DEVICE_COUNT"] = "8"
os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
).strip()

import numpy as np
from harness import compare, header

import ember
import ember.numpy as enp
from ember import lax
from ember.sharding import NamedSharding, P

SIZES = (64, 256, 256, 10)
BATCH = 512


def _params(rng):
    return [
        (rng.normal(0, 1 / np.sqrt(m), (m, n)).astype(np.float32), np.zeros(n, np.float32))
        for m, n in zip(SIZES[:-1], SIZES[1:])
    ]


def _step(np_like, grad):
    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = np_like.tanh(h @ w + b)
        w, b = params[-1]
        return ((h @ w + b - y) ** 2).mean()

    def step(params, x, y):
        value, grads = grad(loss)(params, x, y)
        return [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, grads)], value

    return step


def run(have_jax: bool):
    rng = np.random.default_rng(0)
    params = _params(rng)
    x = rng.normal(size=(BATCH, SIZES[0])).astype(np.float32)
    y = rng.normal(size=(BATCH, SIZES[-1])).astype(np.float32)
    mesh = ember.make_mesh((8,), ("data",))
    rows, replicated = NamedSharding(mesh, P("data")), NamedSharding(mesh, P())
    e_params = ember.device_put(params, replicated)
    e_x, e_y = ember.device_put(x, rows), ember.device_put(y, rows)
    e_step = ember.jit(_step(enp, ember.value_and_grad))
    e_add = ember.jit(lambda a, b: a + b)
    e_a = ember.device_put(np.ones((8, 4), np.float32), rows)
    e_psum = ember.jit(
        ember.shard_map(lambda v: lax.psum(v, "data"), mesh=mesh, in_specs=P("data"), out_specs=P())
    )
    e_v = ember.device_put(np.ones((8, 1024), np.float32), rows)
    j_train = j_add = j_psum = None
    if have_jax:
        import jax
        import jax.numpy as jnp
        from jax.sharding import NamedSharding as JaxNamedSharding, PartitionSpec as JaxSpec

        jmesh = jax.make_mesh((8,), ("data",))
        j_rows, j_rep = JaxNamedSharding(jmesh, JaxSpec("data")), JaxNamedSharding(jmesh, JaxSpec())
        j_params = jax.device_put(params, j_rep)
        j_x, j_y = jax.device_put(x, j_rows), jax.device_put(y, j_rows)
        j_step = jax.jit(_step(jnp, jax.value_and_grad))
        j_train = lambda: jax.block_until_ready(j_step(j_params, j_x, j_y))
        j_a = jax.device_put(np.ones((8, 4), np.float32), j_rows)
        j_add_fn = jax.jit(lambda a, b: a + b)
        j_add = lambda: j_add_fn(j_a, j_a)
        j_psum_fn = jax.jit(
            jax.shard_map(
                lambda v: jax.lax.psum(v, "data"),
                mesh=jmesh,
                in_specs=JaxSpec("data"),
                out_specs=JaxSpec(),
            )
        )
        j_v = jax.device_put(np.ones((8, 1024), np.float32), j_rows)
        j_psum = lambda: jax.block_until_ready(j_psum_fn(j_v))
    yield compare(
        "data-parallel MLP step, 8 devices",
        lambda: ember.block_until_ready(e_step(e_params, e_x, e_y)),
        j_train,
        number=50,
        target=1.1,
    )
    yield compare(
        "shard_map psum round trip, f32[8,1024]",
        lambda: ember.block_until_ready(e_psum(e_v)),
        j_psum,
        number=200,
        target=1.2,
    )
    yield compare(
        "jit dispatch, 8-way sharded f32[8,4] add",
        lambda: e_add(e_a, e_a),
        j_add,
        number=1000,
        target=1.5,
    )


if __name__ == "__main__":
    try:
        import jax  # noqa: F401

        jax_available = True
    except ImportError:
        jax_available = False
    if "--no-header" not in sys.argv:
        print(header())
    for result in run(jax_available):
        print(result.row(), flush=True)
