"""Data-parallel training over 8 devices follows the single-device run's loss curve."""

from __future__ import annotations

import numpy as np

import ember
import ember.numpy as enp
from ember import lax
from ember.sharding import NamedSharding, P


def _loss(params, x, y):
    (w1, b1), (w2, b2) = params
    h = enp.tanh(x @ w1 + b1)
    return ((h @ w2 + b2 - y) ** 2).mean()


def _update(params, grads):
    return [(w - 0.2 * gw, b - 0.2 * gb) for (w, b), (gw, gb) in zip(params, grads)]


def _data(rng):
    params = [
        (rng.normal(0, 0.5, (6, 16)).astype(np.float32), np.zeros(16, np.float32)),
        (rng.normal(0, 0.5, (16, 2)).astype(np.float32), np.zeros(2, np.float32)),
    ]
    x = rng.normal(size=(64, 6)).astype(np.float32)
    y = np.stack([np.sin(x[:, 0]), x[:, 1] * x[:, 2]], 1).astype(np.float32)
    return params, x, y


def _curve(step, params, x, y, steps=8):
    losses = []
    for _ in range(steps):
        params, loss = step(params, x, y)
        losses.append(float(loss))
    return np.array(losses)


def test_jit_data_parallel_matches_single_device(mesh, rng):
    params, x, y = _data(rng)

    def step(p, x, y):
        loss, grads = ember.value_and_grad(_loss)(p, x, y)
        return _update(p, grads), loss

    single = _curve(ember.jit(step), params, x, y)
    rows = NamedSharding(mesh, P(("data", "model")))
    replicated = NamedSharding(mesh, P())
    sharded = ember.jit(step, in_shardings=(replicated, rows, rows), out_shardings=replicated)
    curve = _curve(sharded, params, x, y)
    assert single[-1] < single[0]
    np.testing.assert_allclose(curve, single, rtol=1e-5)


def test_shard_map_data_parallel_matches_single_device(mesh, rng):
    params, x, y = _data(rng)

    def per_device(p, xb, yb):
        loss, grads = ember.value_and_grad(_loss)(p, xb, yb)
        return _update(p, lax.pmean(grads, "data")), lax.pmean(loss, "data")

    data_mesh = ember.make_mesh((8,), ("data",))
    step = ember.jit(
        ember.shard_map(
            per_device, mesh=data_mesh, in_specs=(P(), P("data"), P("data")), out_specs=P()
        )
    )

    def single_step(p, x, y):
        loss, grads = ember.value_and_grad(_loss)(p, x, y)
        return _update(p, grads), loss

    single = _curve(ember.jit(single_step), params, x, y)
    np.testing.assert_allclose(_curve(step, params, x, y), single, rtol=1e-5)
