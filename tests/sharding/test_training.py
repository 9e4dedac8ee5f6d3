"""Data-parallel training over 8 devices follows the single-device run's loss curve."""

from __future__ import annotations

import numpy as np

import ember
import ember.numpy as enp
from ember import lax
from ember.sharding import AxisType, NamedSharding, P


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
        # Cast to varying, each device's gradient is its own batch's (of a replicated `p`
        # the gradient would be their sum already, as in JAX).
        mine = lax.pcast(p, "data", to="varying")
        loss, grads = ember.value_and_grad(_loss)(mine, xb, yb)
        return _update(p, lax.pmean(grads, "data")), lax.pmean(loss, "data")

    data_mesh = ember.make_mesh((8,), ("data",), axis_types=(AxisType.Auto,))
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


def test_two_dimensional_tensor_parallel_matches_single_device(mesh, rng):
    """Hidden units split over `model`, batch over `data`: by jit shardings and by hand."""
    params, x, y = _data(rng)
    keys = ("w1", "b1", "w2", "b2")
    flat = dict(zip(keys, [a for pair in params for a in pair]))

    def loss(p, x, y):
        return _loss([(p["w1"], p["b1"]), (p["w2"], p["b2"])], x, y)

    def step(p, x, y):
        value, grads = ember.value_and_grad(loss)(p, x, y)
        return {k: p[k] - 0.2 * grads[k] for k in p}, value

    single = _curve(ember.jit(step), flat, x, y)
    spec = {"w1": P(None, "model"), "b1": P("model"), "w2": P("model", None), "b2": P()}
    layout = {k: NamedSharding(mesh, s) for k, s in spec.items()}
    rows = NamedSharding(mesh, P("data"))
    by_jit = ember.jit(step, in_shardings=(layout, rows, rows), out_shardings=(layout, None))
    np.testing.assert_allclose(_curve(by_jit, flat, x, y), single, rtol=1e-5)

    def per_device(p, xb, yb):
        h = enp.tanh(xb @ p["w1"] + p["b1"])
        out = lax.psum(h @ p["w2"], "model") + p["b2"]
        return lax.pmean(((out - yb) ** 2).mean(), "data")

    sharded_loss = ember.shard_map(
        per_device, mesh=mesh, in_specs=(spec, P("data"), P("data")), out_specs=P()
    )

    @ember.jit
    def by_hand(p, x, y):
        value, grads = ember.value_and_grad(sharded_loss)(p, x, y)
        return {k: p[k] - 0.2 * grads[k] for k in p}, value

    np.testing.assert_allclose(_curve(by_hand, flat, x, y), single, rtol=1e-5)
