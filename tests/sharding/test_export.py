"""ember.export over several devices (8 CPU devices): programs exported over a mesh record it
and their layouts, survive serialisation, and run eagerly and inside jit over a mesh of as
many devices; a call over another device count is refused naming both."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.errors import ExportError
from ember.export import deserialize, export
from ember.sharding import AxisType, NamedSharding, P
from tests.core.export.golden.write_golden import sharded_affine_reference

pytestmark = pytest.mark.skipif(
    ember.default_backend() == "reference", reason="exports StableHLO: needs a PJRT backend"
)
f32 = np.float32
GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "core" / "export" / "golden"


def round_trip(exported):
    return deserialize(exported.serialize())


def close(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


# -- a data-parallel training step over a 4 x 2 mesh -------------------------------------------


def init_mlp(rng, sizes=(6, 16, 4)):
    return [
        {"w": rng.normal(size=(m, n)).astype(f32) * 0.3, "b": np.zeros(n, f32)}
        for m, n in zip(sizes[:-1], sizes[1:])
    ]


def loss(params, x, y):
    h = x
    for layer in params[:-1]:
        h = enp.tanh(h @ layer["w"] + layer["b"])
    out = h @ params[-1]["w"] + params[-1]["b"]
    return enp.mean((out - y) ** 2)


def sgd_step(params, x, y):
    value, grads = ember.value_and_grad(loss)(params, x, y)
    new = ember.tree.map(lambda p, g: p - 0.1 * g, params, grads)
    return new, value


def test_data_parallel_mlp_step_round_trips_and_matches(mesh, rng):
    params = init_mlp(rng)
    x = rng.normal(size=(16, 6)).astype(f32)
    y = rng.normal(size=(16, 4)).astype(f32)
    replicated, batch = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    step = ember.jit(
        sgd_step,
        in_shardings=(replicated, batch, batch),
        out_shardings=(replicated, replicated),
    )
    exported = export(step)(params, x, y)
    assert exported.nr_devices == 8
    assert exported.mesh.shape_tuple == (("data", 4), ("model", 2))
    assert exported.in_specs[-1] == P("data") and exported.out_specs == (P(),) * 5
    assert (
        exported.in_shardings_hlo[-1] == "{devices=[4,1,2]0,1,2,3,4,5,6,7 last_tile_dim_replicate}"
    )
    assert exported.in_shardings_hlo[0] == "{replicated}"

    restored = round_trip(exported)
    assert restored.mesh == exported.mesh and restored.in_specs == exported.in_specs
    assert restored.in_shardings_hlo == exported.in_shardings_hlo
    xs, ys = ember.device_put(x, batch), ember.device_put(y, batch)
    want_params, want_loss = step(params, xs, ys)
    got_params, got_loss = restored.call(params, xs, ys)
    close(got_loss, want_loss)
    for got, want in zip(ember.tree.leaves(got_params), ember.tree.leaves(want_params)):
        close(got, want)
        assert got.sharding == replicated
    # Several steps: the restored program's outputs feed it again.
    for _ in range(3):
        got_params, got_loss = restored.call(got_params, xs, ys)
        want_params, want_loss = step(want_params, xs, ys)
    close(got_loss, want_loss)


def test_shardings_are_in_the_metadata(mesh):
    f = ember.jit(
        lambda a, b: (a * 2, a @ b),
        in_shardings=(NamedSharding(mesh, P("data", "model")), NamedSharding(mesh, P("model"))),
        out_shardings=(NamedSharding(mesh, P(("data", "model"))), None),
    )
    blob = export(f)(np.ones((8, 4), f32), np.ones((4, 2), f32)).serialize()
    metadata = json.loads(blob[14 : 14 + int.from_bytes(blob[10:14], "little")])
    assert metadata["nr_devices"] == 8
    assert metadata["mesh"] == {
        "axis_names": ["data", "model"],
        "axis_sizes": [4, 2],
        "axis_types": ["Auto", "Auto"],
    }
    assert metadata["in_shardings"] == [["data", "model"], ["model"]]
    assert metadata["out_shardings"] == [[["data", "model"]], None]
    restored = deserialize(blob)
    assert restored.out_specs == (P(("data", "model")), None)
    assert restored.out_shardings_hlo == ("{devices=[8,1]0,1,2,3,4,5,6,7}", None)


def test_sharded_example_arrays_give_the_layouts(mesh, rng):
    x = ember.device_put(rng.normal(size=(8, 4)).astype(f32), NamedSharding(mesh, P("data")))
    exported = export(ember.jit(lambda a: enp.sin(a) * 2))(x)
    assert exported.nr_devices == 8 and exported.in_specs == (P("data"),)
    close(round_trip(exported).call(x), np.sin(np.asarray(x)) * 2)


# -- shard_map ----------------------------------------------------------------------------------


def test_shard_map_program_round_trips(mesh, rng):
    x = rng.normal(size=(8, 4)).astype(f32)

    def block_sums(a):
        return lax.psum(a.sum(0, keepdims=True), "data")

    f = ember.jit(
        ember.shard_map(
            block_sums, mesh=mesh, in_specs=P("data", "model"), out_specs=P(None, "model")
        )
    )
    exported = export(f)(x)
    assert exported.nr_devices == 8
    restored = round_trip(exported)
    want = x.sum(0, keepdims=True)
    xs = ember.device_put(x, NamedSharding(mesh, P("data", "model")))
    close(restored.call(xs), want)
    close(exported.call(xs), want)  # the program as exported, before serialising
    with ember.set_mesh(mesh):
        close(restored.call(x), want)  # NumPy arguments: laid out over the mesh in scope


# -- calling inside jit -------------------------------------------------------------------------


def test_called_inside_jit_over_the_mesh(mesh, rng):
    x = rng.normal(size=(8, 4)).astype(f32)
    rows = NamedSharding(mesh, P("data"))
    exported = export(ember.jit(lambda a: a * 3.0, in_shardings=rows, out_shardings=rows))(x)
    restored = round_trip(exported)
    xs = ember.device_put(x, rows)
    for program in (exported, restored):
        outer = ember.jit(lambda a, p=program: enp.cos(p.call(a + 1.0)).sum(0))
        close(outer(xs), np.cos((x + 1) * 3).sum(0))


def test_explicit_mesh_program(explicit_mesh, rng):
    x = rng.normal(size=(8, 4)).astype(f32)
    xs = ember.device_put(x, NamedSharding(explicit_mesh, P("X", "Y")))
    exported = export(ember.jit(lambda a: a * a + 1.0))(xs)
    assert exported.mesh.axis_types == (AxisType.Explicit,) * 2
    out = round_trip(exported).call(xs)
    close(out, x * x + 1)


# -- the device count ---------------------------------------------------------------------------


def test_wrong_device_count_is_refused_naming_both(mesh, rng):
    x = rng.normal(size=(8, 4)).astype(f32)
    rows = NamedSharding(mesh, P("data"))
    restored = round_trip(export(ember.jit(lambda a: a + 1.0, in_shardings=rows))(x))
    small = ember.make_mesh((4,), ("data",), devices=ember.devices()[:4])
    with pytest.raises(ExportError, match="exported for 8 devices.*mesh of 4 devices"):
        restored.call(ember.device_put(x, NamedSharding(small, P("data"))))
    with pytest.raises(ExportError, match="exported for 8 devices.*called on 1 device"):
        restored.call(x)
    with pytest.raises(ExportError, match="exported for 8 devices.*program over 4 devices"):
        ember.jit(restored.call)(ember.device_put(x, NamedSharding(small, P("data"))))
    with pytest.raises(ExportError, match="exported for 8 devices.*program over 1 device"):
        ember.jit(restored.call)(x)


def test_golden_two_device_program_loads_and_runs(rng):
    restored = deserialize((GOLDEN / "sharded_affine_2dev.emberexp").read_bytes())
    assert restored.nr_devices == 2 and restored.mesh.shape_tuple == (("batch", 2),)
    assert restored.in_specs == (P("batch"), P())
    pair = ember.make_mesh((2,), ("batch",), devices=ember.devices()[:2])
    x = rng.normal(size=(4, 3)).astype(f32)
    w = rng.normal(size=(3, 2)).astype(f32)
    xs = ember.device_put(x, NamedSharding(pair, P("batch")))
    out = restored.call(xs, w)
    close(out, sharded_affine_reference(x, w))
    assert out.sharding.spec == P("batch")


def test_grad_through_the_exported_vjp_over_the_mesh(mesh, rng):
    x = rng.normal(size=(8, 4)).astype(f32)
    rows = NamedSharding(mesh, P("data"))
    f = ember.jit(lambda a: (enp.sin(a) * 3).sum(0), in_shardings=rows)
    restored = deserialize(export(f)(x).serialize(vjp_order=1))
    assert restored.vjp().nr_devices == 8  # the VJP runs over the mesh too
    assert restored.vjp().in_specs == (P("data"), P())  # the cotangent: replicated
    xs = ember.device_put(x, rows)
    grad = ember.grad(lambda a: restored.call(a).sum())
    close(grad(xs), 3 * np.cos(x))
    close(ember.jit(grad)(xs), 3 * np.cos(x))


def test_called_over_a_mesh_of_another_shape(mesh, rng):
    """The same 8 devices as one axis: the exported mesh is declared beside the caller's."""
    x = rng.normal(size=(8, 4)).astype(f32)
    rows = NamedSharding(mesh, P("data"))
    exported = export(ember.jit(lambda a: a * 3.0, in_shardings=rows, out_shardings=rows))(x)
    flat = ember.make_mesh((8,), ("flat",), axis_types=(AxisType.Auto,))
    xs = ember.device_put(x, NamedSharding(flat, P("flat")))
    for program in (exported, round_trip(exported)):
        close(program.call(xs), 3 * x)
        outer = ember.jit(lambda a, p=program: p.call(a + 1.0) * 2)
        close(outer(xs), 6 * (x + 1))
        assert "sdy.mesh @_ember_exported_0_mesh" in outer.lower(xs).as_text()
