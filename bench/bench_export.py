"""Export round trip: export + serialise (with the VJP) + deserialise + first grad call of an
MLP, with a fresh function each time.

Two figures: "new shapes" gives every round trip a batch size of its own, so that nothing
compiled before can serve it (the cold cost: tracing, lowering, serialising and two XLA
compiles); "same program" repeats one program, as a process that reloads a saved model does,
where both libraries reuse the executables compiled for an equal module."""

from __future__ import annotations

import numpy as np
from bench_tracing import make_loss  # the same MLP loss (a fresh function object per call)
from harness import compare

import ember
import ember.numpy as enp
from ember import export as ember_export

LAYERS = 50
WIDTH = 16


def run(have_jax: bool):
    rng = np.random.default_rng(0)
    params = [
        (rng.normal(size=(WIDTH, WIDTH)).astype(np.float32) / 4, np.zeros(WIDTH, np.float32))
        for _ in range(LAYERS)
    ]
    x = rng.normal(size=(8, WIDTH)).astype(np.float32)
    e_params = [(enp.asarray(w), enp.asarray(b)) for w, b in params]
    e_x = enp.asarray(x)

    batches = iter(range(1, 10_000))

    def ember_round_trip(x=e_x):
        exported = ember_export.export(ember.jit(make_loss(enp)))(e_params, x)
        loaded = ember_export.deserialize(exported.serialize(vjp_order=1))
        grads = ember.grad(loaded.call)(e_params, x)
        return ember.block_until_ready(grads)

    def ember_new_shapes():
        return ember_round_trip(enp.ones((next(batches), WIDTH), np.float32))

    jax_round_trip = None
    if have_jax:
        import jax
        import jax.numpy as jnp

        j_params = [(jnp.asarray(w), jnp.asarray(b)) for w, b in params]
        j_x = jnp.asarray(x)

        def jax_round_trip(x=j_x):
            exported = jax.export.export(jax.jit(make_loss(jnp)))(j_params, x)
            loaded = jax.export.deserialize(exported.serialize(vjp_order=1))
            grads = jax.grad(loaded.call)(j_params, x)
            return jax.block_until_ready(grads)

        def jax_new_shapes():
            return jax_round_trip(jnp.ones((next(batches), WIDTH), np.float32))

    yield compare(
        f"export round trip + grad(MLP-{LAYERS}), new shapes",
        ember_new_shapes,
        jax_new_shapes if have_jax else None,
        number=1,
        repeats=5,
        warmup=1,
        unit="ms",
        target=1.0,
    )
    yield compare(
        f"export round trip + grad(MLP-{LAYERS}), same program",
        ember_round_trip,
        jax_round_trip,
        number=1,
        repeats=5,
        warmup=1,
        unit="ms",
        target=1.0,
    )
