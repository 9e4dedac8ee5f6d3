"""pmap on 8 devices: values, collectives by axis name, in/out axes, gradients, errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax


def test_pmap_with_collectives(mesh, rng):
    x = rng.normal(size=(8, 3)).astype(np.float32)
    out = ember.pmap(lambda v: v - lax.pmean(v, "i"), axis_name="i")(x)
    np.testing.assert_allclose(np.asarray(out), x - x.mean(0), rtol=1e-5, atol=1e-6)
    assert out.shape == (8, 3) and len(out.addressable_shards) == 8
    idx = ember.pmap(lambda v: v * lax.axis_index("i"), axis_name="i")(np.ones(4, np.int32))
    np.testing.assert_array_equal(np.asarray(idx), np.arange(4))


def test_pmap_in_and_out_axes_and_statics(mesh, rng):
    x = rng.normal(size=(3, 8)).astype(np.float32)
    w = rng.normal(size=(3,)).astype(np.float32)
    f = ember.pmap(lambda v, w: v * w, in_axes=(1, None), out_axes=1)
    np.testing.assert_allclose(np.asarray(f(x, w)), x * w[:, None], rtol=1e-6)
    g = ember.pmap(lambda v, k: v**k, static_broadcasted_argnums=1)
    np.testing.assert_allclose(np.asarray(g(x.T, 2)), x.T**2, rtol=1e-6)


def test_pmap_gradients(mesh, rng):
    x = rng.normal(size=(8, 3)).astype(np.float32)

    def loss(x):
        per = ember.pmap(lambda v: lax.psum((v**2).sum(), "i"), axis_name="i")(x)
        return per[0]

    np.testing.assert_allclose(np.asarray(ember.grad(loss)(x)), 2 * x, rtol=1e-5)


def test_pmap_errors(mesh):
    with pytest.raises(ValueError, match="only 8 devices"):
        ember.pmap(lambda v: v)(np.zeros((9, 2), np.float32))
    with pytest.raises(ValueError, match="must all be equal"):
        ember.pmap(lambda a, b: a + b)(np.zeros(4, np.float32), enp.zeros(2))
