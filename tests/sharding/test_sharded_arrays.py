"""Arrays laid out over 8 devices: device_put, shards, reading back, eager ops, jit with
in/out shardings, and the errors that name the array, the axis and the sizes."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
import ember.random as er
from ember.sharding import AxisType, NamedSharding, P


@pytest.mark.parametrize(
    "spec", [P("data", "model"), P("data"), P(None, "model"), P(("data", "model")), P()]
)
def test_device_put_lays_out_and_reads_back(mesh, spec, rng):
    x = rng.normal(size=(8, 4)).astype(np.float32)
    sharding = NamedSharding(mesh, spec)
    a = ember.device_put(x, sharding)
    assert a.sharding == sharding and a.shape == (8, 4)
    assert a.devices() == set(mesh.device_list)
    assert a.is_fully_replicated == (spec == P())
    shards = a.addressable_shards
    assert len(shards) == 8
    for shard in shards:
        np.testing.assert_array_equal(np.asarray(shard.data), x[shard.index])
        assert shard.data.shape == sharding.shard_shape(x.shape)
        assert shard.data.devices() == {shard.device}
    np.testing.assert_array_equal(np.asarray(a), x)


def test_eager_ops_keep_the_layout(mesh, rng):
    x = rng.normal(size=(8, 4)).astype(np.float32)
    a = ember.device_put(x, NamedSharding(mesh, P("data", "model")))
    b = enp.tanh(a) * 2 + 1
    assert isinstance(b.sharding, NamedSharding)
    np.testing.assert_allclose(np.asarray(b), np.tanh(x) * 2 + 1, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(float(a.sum()), x.sum(), rtol=1e-5)


def test_jit_partitions_and_reports_output_layouts(mesh, rng):
    x = rng.normal(size=(8, 4)).astype(np.float32)
    w = rng.normal(size=(4, 6)).astype(np.float32)
    xs = ember.device_put(x, NamedSharding(mesh, P("data")))
    ws = ember.device_put(w, NamedSharding(mesh, P(None, "model")))
    f = ember.jit(lambda a, b: enp.tanh(a @ b))
    out = f(xs, ws)
    np.testing.assert_allclose(np.asarray(out), np.tanh(x @ w), rtol=2e-5, atol=1e-6)
    assert isinstance(out.sharding, NamedSharding)
    if ember.default_backend() != "reference":  # which has no partitioner: whole values
        assert out.sharding.spec in (P("data", "model"), P("data"))
    # Same layouts again: no new compile.
    f(xs, ws)
    assert len(f._exec_cache) == 1
    # Another layout: one more.
    f(ember.device_put(x, NamedSharding(mesh, P())), ws)
    assert len(f._exec_cache) == 2


def test_in_and_out_shardings(mesh, rng):
    x = rng.normal(size=(8, 4)).astype(np.float32)
    row = NamedSharding(mesh, P("data"))
    col = NamedSharding(mesh, P(None, "model"))
    g = ember.jit(lambda a: a * 3, in_shardings=row, out_shardings=col)
    out = g(x)
    assert out.sharding == col
    np.testing.assert_allclose(np.asarray(out), x * 3)
    # Shardings as a pytree prefix of the arguments and of the result.
    h = ember.jit(
        lambda p, a: {"y": p["w"] * a, "z": a.sum()},
        in_shardings=({"w": NamedSharding(mesh, P())}, row),
        out_shardings={"y": row, "z": None},
    )
    out = h({"w": np.float32(2.0)}, x)
    assert out["y"].sharding == row
    np.testing.assert_allclose(np.asarray(out["y"]), 2 * x)
    np.testing.assert_allclose(float(out["z"]), x.sum(), rtol=1e-5)
    with mesh:  # bare specs resolve against the mesh in scope
        k = ember.jit(lambda a: a + 1, in_shardings=P("data"))
        assert k(x).shape == (8, 4)


def test_grad_through_sharded_jit_matches_numpy(mesh, rng):
    x = rng.normal(size=(8, 4)).astype(np.float32)
    w = rng.normal(size=(4,)).astype(np.float32)
    xs = ember.device_put(x, NamedSharding(mesh, P("data")))
    loss = ember.jit(ember.grad(lambda w, x: ((x @ w) ** 2).mean()))
    g = loss(ember.device_put(w, NamedSharding(mesh, P())), xs)
    np.testing.assert_allclose(np.asarray(g), 2 * x.T @ (x @ w) / 8, rtol=1e-5)


def test_errors_name_the_axis_and_sizes(mesh):
    with pytest.raises(ValueError, match="not divisible"):
        ember.device_put(np.zeros((6, 4), np.float32), NamedSharding(mesh, P("data")))
    with pytest.raises(ValueError, match="does not have"):
        NamedSharding(mesh, P("rows"))
    other = ember.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))
    a = ember.device_put(np.zeros(8, np.float32), NamedSharding(mesh, P("data")))
    b = ember.device_put(np.zeros(8, np.float32), NamedSharding(other, P("x")))
    with pytest.raises(ValueError, match="share one mesh"):
        ember.jit(lambda u, v: u + v)(a, b)


def test_single_device_arrays_joining_a_mesh_call(mesh):
    sharded = ember.device_put(np.ones(8, np.float32), NamedSharding(mesh, P("data")))
    # made where ember puts arrays nobody placed: replicated onto the mesh, as JAX does with
    # its uncommitted arrays
    made_here = enp.arange(8.0)
    np.testing.assert_allclose(np.asarray(sharded + made_here), 1 + np.arange(8.0))
    # put on another device on purpose: refused, naming the argument and the device
    elsewhere = ember.device_put(np.ones(8, np.float32), ember.devices()[3])
    for call in (lambda: sharded + elsewhere, lambda: ember.jit(enp.add)(sharded, elsewhere)):
        with pytest.raises(ValueError, match=r"argument #1 \(f32\[8\]\) is committed.*id=3"):
            call()
    replicated = ember.device_put(elsewhere, NamedSharding(mesh, P()))
    np.testing.assert_allclose(np.asarray(sharded + replicated), 2 * np.ones(8))


def test_with_sharding_constraint(mesh, rng):
    x = rng.normal(size=(8, 4)).astype(np.float32)
    cols = NamedSharding(mesh, P(None, "model"))

    def f(a):
        b = ember.lax.with_sharding_constraint(a * 2, cols)
        return b + 1

    jf = ember.jit(f)
    text = jf.lower(x).as_text()
    assert "sdy.mesh @mesh" in text and '"sdy.sharding_constraint"' in text
    assert '[{}, {"model"}]' in text
    compiled = jf.lower(x).compile()
    assert compiled.cost_analysis()
    out = jf(x)
    np.testing.assert_allclose(np.asarray(out), x * 2 + 1)
    if ember.default_backend() != "reference":
        assert out.sharding.spec in (P(None, "model"), P())
    # Eagerly it is a device_put; inside `with mesh:` a bare spec will do.
    assert ember.lax.with_sharding_constraint(x, cols).sharding == cols
    with mesh:
        y = ember.jit(lambda a: ember.lax.with_sharding_constraint(a, P("data")))(x)
    np.testing.assert_array_equal(np.asarray(y), x)
    # Differentiable and batchable.
    g = ember.grad(lambda a: (ember.lax.with_sharding_constraint(a, cols) ** 2).sum())(x)
    np.testing.assert_allclose(np.asarray(ember.jit(lambda a: a)(g)), 2 * x, rtol=1e-6)
    v = ember.jit(ember.vmap(lambda a: ember.lax.with_sharding_constraint(a * 3, cols)))(
        np.stack([x, x])
    )
    np.testing.assert_allclose(np.asarray(v), 3 * np.stack([x, x]))
    with pytest.raises(ValueError, match="not divisible"):
        ember.jit(lambda a: ember.lax.with_sharding_constraint(a, cols))(np.zeros((8, 3)))


def test_make_array_from_callback_and_single_device_arrays(mesh, rng):
    x = rng.normal(size=(8, 6)).astype(np.float32)
    sharding = NamedSharding(mesh, P("data", "model"))
    seen = []

    def piece(index):
        seen.append(index)
        return x[index]

    a = ember.make_array_from_callback(x.shape, sharding, piece)
    assert a.sharding == sharding and len(seen) == 8
    np.testing.assert_array_equal(np.asarray(a), x)
    singles = [
        ember.device_put(x[i], d)
        for d, i in sharding.addressable_devices_indices_map(x.shape).items()
    ]
    b = ember.make_array_from_single_device_arrays(x.shape, sharding, singles[::-1])
    assert b.sharding == sharding
    np.testing.assert_array_equal(np.asarray(b), x)
    np.testing.assert_allclose(np.asarray(ember.jit(lambda v: v * 2)(b)), 2 * x)
    with pytest.raises(ValueError, match="returned shape"):
        ember.make_array_from_callback(x.shape, sharding, lambda index: x)
    with pytest.raises(ValueError, match="exactly one array"):
        ember.make_array_from_single_device_arrays(x.shape, sharding, singles[:7])


def test_visualize_array_sharding(mesh, capsys):
    a = ember.device_put(np.zeros((8, 4), np.float32), NamedSharding(mesh, P("data", "model")))
    ember.debug.visualize_array_sharding(a)
    drawn = capsys.readouterr().out
    platform = ember.default_backend().upper()
    for i in range(8):
        assert f"{platform} {i}" in drawn
    assert drawn.count("│") == 4 * 3  # four rows of two boxes
    b = ember.device_put(np.zeros(8, np.float32), NamedSharding(mesh, P("model")))
    text = ember.debug.sharding_layout_text(b)
    assert f"{platform} 0,2,4,6" in text and f"{platform} 1,3,5,7" in text


def test_resharding_between_layouts_of_one_mesh(mesh, rng):
    x = rng.normal(size=(8, 4)).astype(np.float32)
    a = ember.jit(lambda v: v + 0)(ember.device_put(x, NamedSharding(mesh, P("data"))))
    for spec in (P(None, "model"), P(("model", "data")), P(), P("data", "model")):
        b = ember.device_put(a, NamedSharding(mesh, spec))
        assert b.sharding == NamedSharding(mesh, spec)
        for shard in b.addressable_shards:
            np.testing.assert_array_equal(np.asarray(shard.data), x[shard.index])
    with pytest.raises(ValueError, match="not divisible"):
        ember.device_put(a, NamedSharding(mesh, P(None, ("data", "model"))))


@pytest.mark.slow
def test_samplers_lay_out_their_samples(mesh):
    rows = NamedSharding(mesh, P("data"))
    key = er.key(1)
    for sample in (
        er.uniform(key, (8, 4), out_sharding=rows),
        er.normal(key, (8, 4), out_sharding=rows),
        er.gamma(key, 2.0, (8, 4), out_sharding=rows),
        er.poisson(key, 3.0, (8, 4), out_sharding=rows),
    ):
        assert sample.sharding.is_equivalent_to(rows, 2)
    laid = er.uniform(key, (8, 4), out_sharding=rows)
    np.testing.assert_array_equal(np.asarray(laid), np.asarray(er.uniform(key, (8, 4))))
    inside = ember.jit(lambda k: er.normal(k, (8, 4), out_sharding=rows))(key)
    if ember.default_backend() != "reference":  # which has no partitioner: whole values
        assert inside.sharding.is_equivalent_to(rows, 2)
