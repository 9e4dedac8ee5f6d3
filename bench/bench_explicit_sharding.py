"""Sharding in types on 8 host devices: what explicit mode costs against automatic mode, in
ember and beside JAX's explicit mode.

- tracing a 200-layer MLP whose activations are typed ``f32[B@data,D]`` (every equation
  runs its sharding rule) against the same trace over Auto axes (no rule runs);
- a compiled training step of a 2-D (data x model) MLP in explicit mode against the same
  layout in automatic mode (argument layouts alike, the partitioner choosing the rest).

Both frameworks need 8 CPU devices from the start, so this module runs in its own process
(``run_all.py`` starts it); run it alone with ``python bench/bench_explicit_sharding.py``.
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
from ember.sharding import AxisType, NamedSharding, P

LAYERS = 200
WIDTH = 16
BATCH = 64
SIZES = (64, 512, 64)  # the 2-D MLP: in, hidden (split over "model"), out
STEP_BATCH = 256


def _deep_mlp(np_like):
    def forward(params, x):
        for w in params:
            x = np_like.tanh(x @ w)
        return np_like.sum(x)

    return forward


def _two_d_step(np_like, grad, matmul, spec):
    """One SGD step of a Megatron-style MLP: the hidden layer split over "model", the batch
    over "data"; the second contraction runs over the split hidden dimension, so its result's
    split is given (``out_sharding``), as explicit mode requires and automatic mode allows."""

    def loss(params, x, y):
        (w1, b1), (w2, b2) = params
        h = np_like.tanh(x @ w1 + b1)
        out = matmul(h, w2, out_sharding=spec("data", None)) + b2
        return ((out - y) ** 2).mean()

    def step(params, x, y):
        value, grads = grad(loss)(params, x, y)
        new = [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, grads)]
        return new, value

    return step


def _inputs():
    rng = np.random.default_rng(0)
    deep = [
        rng.normal(0, 1 / np.sqrt(WIDTH), (WIDTH, WIDTH)).astype(np.float32) for _ in range(LAYERS)
    ]
    deep_x = rng.normal(size=(BATCH, WIDTH)).astype(np.float32)
    d_in, d_hidden, d_out = SIZES
    params = [
        (
            rng.normal(0, 1 / np.sqrt(d_in), (d_in, d_hidden)).astype(np.float32),
            np.zeros(d_hidden, np.float32),
        ),
        (
            rng.normal(0, 1 / np.sqrt(d_hidden), (d_hidden, d_out)).astype(np.float32),
            np.zeros(d_out, np.float32),
        ),
    ]
    x = rng.normal(size=(STEP_BATCH, d_in)).astype(np.float32)
    y = rng.normal(size=(STEP_BATCH, d_out)).astype(np.float32)
    return deep, deep_x, params, x, y


# How each parameter of the 2-D MLP is laid out: w1 and b1 split over "model" on the hidden
# dimension, w2 on its rows, b2 whole (as spec arguments: each framework builds its own).
PARAM_SPECS = [((None, "model"), ("model",)), (("model", None), ())]


class _Mode:
    """The arrays and functions of one framework in one mode (explicit or automatic)."""

    def __init__(self, fw, np_like, mesh, inputs):
        deep, deep_x, params, x, y = inputs
        put, spec = fw.device_put, fw.sharding.PartitionSpec

        def named(mesh, entries):
            return fw.sharding.NamedSharding(mesh, entries)

        replicated = named(mesh, spec())
        self.mesh = mesh
        self.deep = put(deep, replicated)
        self.deep_x = put(deep_x, named(mesh, spec("data", None)))
        self.forward = _deep_mlp(np_like)
        self.make_jaxpr = fw.make_jaxpr
        layouts = [(named(mesh, spec(*a)), named(mesh, spec(*b))) for a, b in PARAM_SPECS]
        self.params = [(put(w, lw), put(b, lb)) for (w, b), (lw, lb) in zip(params, layouts)]
        rows = named(mesh, spec("data", None))
        self.x, self.y = put(x, rows), put(y, rows)
        self.step = fw.jit(_two_d_step(np_like, fw.value_and_grad, np_like.matmul, spec))
        self.block = fw.block_until_ready

    def trace(self):
        return self.make_jaxpr(self.forward)(self.deep, self.deep_x)

    def train(self):
        with self.mesh_scope():
            return self.block(self.step(self.params, self.x, self.y))

    def mesh_scope(self):
        raise NotImplementedError


def _ember_mode(types, inputs):
    mesh = ember.make_mesh((4, 2), ("data", "model"), axis_types=(types,) * 2)
    mode = _Mode(ember, enp, mesh, inputs)
    mode.mesh_scope = lambda: ember.sharding.use_mesh(mesh)
    return mode


def _jax_mode(inputs):
    import jax
    import jax.numpy as jnp

    explicit = (jax.sharding.AxisType.Explicit,) * 2
    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=explicit)
    mode = _Mode(jax, jnp, mesh, inputs)
    mode.mesh_scope = lambda: jax.set_mesh(mesh)
    return mode


def run(have_jax: bool):
    inputs = _inputs()
    explicit = _ember_mode(AxisType.Explicit, inputs)
    auto = _ember_mode(AxisType.Auto, inputs)
    jax_explicit = _jax_mode(inputs) if have_jax else None
    check_same_losses(explicit, auto)
    # The second column is ember in automatic mode here: the target is about ember alone.
    yield compare(
        f"trace {LAYERS}-layer MLP: explicit vs auto",
        explicit.trace,
        auto.trace,
        number=3,
        unit="ms",
        target=1.2,
    )
    yield compare(
        f"trace {LAYERS}-layer MLP explicit (vs JAX)",
        explicit.trace,
        jax_explicit.trace if jax_explicit else None,
        number=3,
        unit="ms",
    )
    yield compare(
        "2-D MLP step: explicit vs auto",
        explicit.train,
        auto.train,
        number=20,
        target=1.05,
    )
    yield compare(
        "2-D MLP step explicit (vs JAX explicit)",
        explicit.train,
        jax_explicit.train if jax_explicit else None,
        number=20,
    )


def check_same_losses(explicit: _Mode, auto: _Mode) -> None:
    """The two modes compute the same step: refuse to time them otherwise."""
    a, b = explicit.train()[1], auto.train()[1]
    if not np.allclose(np.asarray(a), np.asarray(b), rtol=1e-5):
        raise AssertionError(f"explicit and automatic modes disagree: {a} vs {b}")
    if explicit.params[0][0].sharding.spec != NamedSharding(explicit.mesh, P(None, "model")).spec:
        raise AssertionError("the explicit-mode parameters are not laid out as asked")


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
