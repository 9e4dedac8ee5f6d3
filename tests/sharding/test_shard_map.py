"""shard_map and its collectives on 8 devices: values against NumPy, gradients against the
analytic ones, vmap, nesting under jit, and the errors for bad specs and outputs."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.sharding import P


def smap(f, mesh, in_specs, out_specs, **kw):
    return ember.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, **kw)


def test_psum_pmean_pmax_over_one_and_two_axes(mesh, rng):
    x = rng.normal(size=(8, 4)).astype(np.float32)
    blocks = x.reshape(4, 2, 2, 2).transpose(0, 2, 1, 3)  # [data, model, rows, cols]
    f = smap(lambda a: lax.psum(a, "data"), mesh, P("data", "model"), P(None, "model"))
    np.testing.assert_allclose(np.asarray(f(x)), x.reshape(4, 2, 4).sum(0), rtol=1e-6)
    g = smap(lambda a: lax.pmax(a, ("data", "model")), mesh, P("data", "model"), P())
    np.testing.assert_allclose(np.asarray(g(x)), blocks.max((0, 1)))
    h = smap(lambda a: lax.pmean(a, ("data", "model")), mesh, P("data", "model"), P())
    np.testing.assert_allclose(np.asarray(h(x)), blocks.mean((0, 1)), rtol=1e-5, atol=1e-6)


def test_axis_index_all_gather_psum_scatter(mesh, rng):
    x = rng.normal(size=(8, 4)).astype(np.float32)
    idx = smap(lambda a: a * lax.axis_index("data").astype(enp.float32), mesh, P("data"), P("data"))
    np.testing.assert_allclose(np.asarray(idx(x)), x * np.repeat(np.arange(4), 2)[:, None])
    # Gathered to="invarying": the same on every device, so out_specs may leave "data" out.
    gather = smap(
        lambda a: lax.all_gather(a, "data", tiled=True, to="invarying"), mesh, P("data"), P()
    )
    np.testing.assert_allclose(np.asarray(gather(x)), x)
    stacked = smap(lambda a: lax.all_gather(a, "data", to="invarying"), mesh, P("data"), P())
    np.testing.assert_allclose(np.asarray(stacked(x)), x.reshape(4, 2, 4))
    scatter = smap(
        lambda a: lax.psum_scatter(a, "data", tiled=True), mesh, P(), P("data"), check_rep=False
    )
    np.testing.assert_allclose(np.asarray(scatter(x)), 4 * x, rtol=1e-6)


def test_ring_all_reduce_with_ppermute(mesh, rng):
    """Sum over the data axis by passing blocks round a ring (size-1 steps)."""
    x = rng.normal(size=(4, 3)).astype(np.float32)

    def ring_sum(a):
        total, piece = a, a
        for _ in range(3):
            piece = lax.ppermute(piece, "data", [(i, (i + 1) % 4) for i in range(4)])
            total = total + piece
        return total

    f = smap(ring_sum, mesh, P("data"), P("data"))
    np.testing.assert_allclose(np.asarray(f(x)), np.tile(x.sum(0, keepdims=True), (4, 1)), 1e-6)
    shifted = smap(lambda a: lax.ppermute(a, "data", [(0, 1), (1, 2)]), mesh, P("data"), P("data"))
    want = np.zeros_like(x)
    want[1], want[2] = x[0], x[1]
    np.testing.assert_allclose(np.asarray(shifted(x)), want)


def test_gradients_match_the_analytic_ones(mesh, rng):
    x = rng.normal(size=(8, 4)).astype(np.float32)
    w = rng.normal(size=(4,)).astype(np.float32)

    def loss(w, x):
        def per_device(w, xb):
            return lax.psum(((xb @ w) ** 2).sum(), "data") / 8.0

        return smap(per_device, mesh, (P(), P("data")), P())(w, x)

    want = 2 * x.T @ (x @ w) / 8
    np.testing.assert_allclose(np.asarray(ember.grad(loss)(w, x)), want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(ember.jit(ember.grad(loss))(w, x)), want, rtol=1e-5)
    gather_loss = smap(
        lambda a: (lax.all_gather(a, "data", to="invarying") ** 2).sum(), mesh, P("data"), P()
    )
    np.testing.assert_allclose(np.asarray(ember.grad(gather_loss)(x)), 2 * x, rtol=1e-6)
    ring = smap(
        lambda a: lax.ppermute(a, "data", [(i, (i + 1) % 4) for i in range(4)]),
        mesh,
        P("data"),
        P("data"),
    )
    weights = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    g = ember.grad(lambda a: (ring(a) * weights).sum())(x)
    np.testing.assert_allclose(np.asarray(g), np.roll(weights, -2, axis=0))


def test_vmap_of_shard_map(mesh, rng):
    xs = rng.normal(size=(3, 8, 4)).astype(np.float32)
    f = smap(lambda a: lax.psum(a, "data"), mesh, P("data"), P())
    out = ember.vmap(f)(xs)
    np.testing.assert_allclose(np.asarray(out), xs.reshape(3, 4, 2, 4).sum(1), rtol=1e-6)


def test_bad_specs_and_outputs_are_reported(mesh):
    x = np.zeros((6, 4), np.float32)
    with pytest.raises(ValueError, match="not divisible"):
        smap(lambda a: a, mesh, P("data"), P("data"))(x)
    with pytest.raises(ValueError, match="does not have"):
        smap(lambda a: a, mesh, P("rows"), P())(np.zeros((8, 4), np.float32))
    with pytest.raises(ValueError, match="can differ along them"):
        smap(lambda a: a, mesh, P("data"), P())(np.zeros((8, 4), np.float32))
    with pytest.raises(ember.errors.UnboundAxisError, match="'rows'"):
        smap(lambda a: lax.psum(a, "rows"), mesh, P("data"), P("data"))(np.zeros((8, 4)))


def _all_to_all_answer(blocks, tiled):
    n = len(blocks)
    if tiled:  # member j: row-part j of every member, side by side
        rows = blocks[0].shape[0] // n
        return [np.concatenate([b[j * rows : (j + 1) * rows] for b in blocks], 1) for j in range(n)]
    return [np.stack([b[j] for b in blocks]) for j in range(n)]


@pytest.mark.parametrize("tiled", [True, False])
def test_all_to_all_values_and_gradients(mesh, rng, tiled):
    x = rng.normal(size=(16, 4)).astype(np.float32)
    f = smap(
        lambda a: lax.all_to_all(a, "data", 0, 1 if tiled else 0, tiled=tiled),
        mesh,
        P("data"),
        P("data"),
    )
    want = np.concatenate(_all_to_all_answer(list(x.reshape(4, 4, 4)), tiled))
    np.testing.assert_allclose(np.asarray(f(x)), want)
    weights = rng.normal(size=want.shape).astype(np.float32)
    grad = np.asarray(ember.grad(lambda a: (f(a) * weights).sum())(x))
    # all_to_all only moves values: the gradient is the weights moved back.
    probe = np.arange(x.size, dtype=np.float32).reshape(x.shape)
    moved = np.asarray(f(probe)).ravel().astype(int)
    back = np.zeros(x.size, np.float32)
    back[moved] = weights.ravel()
    np.testing.assert_allclose(grad, back.reshape(x.shape))
    with pytest.raises(ValueError, match="split_axis"):
        bad = np.zeros((16, 3), np.float32)
        smap(lambda a: lax.all_to_all(a, "data", 1, 0), mesh, P("data"), P("data"))(bad)


def test_all_gather_and_psum_scatter_over_several_axes(mesh):
    """Members are ordered major axis first, as one axis of size data * model."""
    x = np.arange(16 * 3, dtype=np.float32).reshape(16, 3)
    both = ("data", "model")
    tiled = smap(lambda a: lax.all_gather(a, both, tiled=True), mesh, P(both), P(), check_rep=False)
    np.testing.assert_array_equal(np.asarray(tiled(x)), x)
    stacked = smap(lambda a: lax.all_gather(a, both), mesh, P(both), P(), check_rep=False)
    np.testing.assert_array_equal(np.asarray(stacked(x)), x.reshape(8, 2, 3))
    y = np.arange(16, dtype=np.float32).reshape(8, 2)
    scatter = smap(
        lambda a: lax.psum_scatter(a, both, tiled=True), mesh, P(), P(both), check_rep=False
    )
    np.testing.assert_array_equal(np.asarray(scatter(y)), 8 * y)
    parts = smap(lambda a: lax.psum_scatter(a, both), mesh, P(), P(both), check_rep=False)
    np.testing.assert_array_equal(np.asarray(parts(y)), 8 * y.reshape(16))


def test_without_in_specs_each_argument_is_split_as_its_type_says(explicit_mesh):
    # JAX's shard_map tutorial (FSDP): params put with P('X') go in as their blocks
    with ember.sharding.use_mesh(explicit_mesh):
        x = ember.device_put(enp.arange(16.0).reshape(8, 2), P("X", None))
        y = enp.arange(2.0)  # not split: every block sees all of it

        @ember.shard_map(out_specs=P("X", None))
        def f(x_block, y):
            assert x_block.shape == (2, 2) and y.shape == (2,)
            return x_block * lax.axis_size("X") + y

        np.testing.assert_allclose(f(x, y), np.arange(16.0).reshape(8, 2) * 4 + np.arange(2.0))
        gathered = ember.shard_map(
            lambda b: lax.all_gather(b, "X", tiled=True, to="invarying"), out_specs=P()
        )(x)
        np.testing.assert_allclose(gathered, np.arange(16.0).reshape(8, 2))
