"""Host callbacks: ``debug.print`` inside a jitted loop of 1000 steps (the output goes to a
buffer, not the terminal, on both sides), and a ``pure_callback`` per step of a scan."""

from __future__ import annotations

import contextlib
import io

import numpy as np
from harness import compare

import ember
import ember.numpy as enp
from ember import lax

STEPS = 1000


def _print_loop(debug, fori_loop):
    def body(i, x):
        debug.print("step {i}: {x}", i=i, x=x)
        return x * 0.5 + 1.0

    return lambda x: fori_loop(0, STEPS, body, x)


def _callback_scan(pure_callback, scan, shape_dtype):
    def step(c, x):
        y = pure_callback(np.tanh, shape_dtype((4,), np.float32), c + x, vmap_method="sequential")
        return y, y.sum()

    return lambda c, xs: scan(step, c, xs)


def _quiet(fn):
    def run():
        with contextlib.redirect_stdout(io.StringIO()):
            return fn()

    return run


def run(have_jax: bool):
    x0 = np.ones(4, np.float32)
    e_loop = ember.jit(_print_loop(ember.debug, lax.fori_loop))
    e_x = enp.asarray(x0)
    jax_loop = None
    if have_jax:
        import jax
        import jax.numpy as jnp

        j_loop = jax.jit(_print_loop(jax.debug, jax.lax.fori_loop))
        j_x = jnp.asarray(x0)
        jax_loop = _quiet(lambda: (j_loop(j_x).block_until_ready(), jax.effects_barrier()))
    yield compare(
        f"debug.print in a jitted loop, {STEPS} steps",
        _quiet(lambda: (e_loop(e_x).block_until_ready(), ember.effects_barrier())),
        jax_loop,
        number=3,
        unit="ms",
        target=1.2,
    )

    xs = np.random.default_rng(0).normal(size=(STEPS, 4)).astype(np.float32)
    e_scan = ember.jit(_callback_scan(ember.pure_callback, lax.scan, ember.ShapeDtypeStruct))
    e_args = (enp.asarray(x0), enp.asarray(xs))
    jax_scan = None
    if have_jax:
        j_scan = jax.jit(_callback_scan(jax.pure_callback, jax.lax.scan, jax.ShapeDtypeStruct))
        j_args = (jnp.asarray(x0), jnp.asarray(xs))
        jax_scan = lambda: jax.block_until_ready(j_scan(*j_args))
    yield compare(
        f"pure_callback in a jitted scan, {STEPS} steps",
        lambda: ember.block_until_ready(e_scan(*e_args)),
        jax_scan,
        number=3,
        unit="ms",
    )
