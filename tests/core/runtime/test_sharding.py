"""Meshes, PartitionSpecs and NamedShardings as data: shapes, index maps, GSPMD strings,
equality, and the errors that name the axis and the sizes."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.sharding import Mesh, NamedSharding, P


class FakeDevice:
    platform = "fake"
    process_index = 0  # every device names the process that owns it

    def __init__(self, i: int):
        self.id = i

    def __repr__(self) -> str:
        return f"D{self.id}"


@pytest.fixture
def mesh():
    devices = np.empty(8, dtype=object)
    for i in range(8):
        devices[i] = FakeDevice(i)
    return Mesh(devices.reshape(4, 2), ("data", "model"))


def test_mesh_basics(mesh):
    assert mesh.shape == {"data": 4, "model": 2} and mesh.size == 8
    assert mesh.device_ids.tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]]
    with mesh:
        assert ember.sharding.current_mesh() is mesh
    assert ember.sharding.current_mesh() is None
    with pytest.raises(ValueError, match="2-dimensional devices need 2 axis names"):
        Mesh(mesh.devices, ("x",))


def test_a_mesh_of_things_that_are_not_devices():
    with pytest.raises(TypeError, match=r"Mesh: 0 \(int\) is not a device; build meshes from"):
        Mesh(np.array([0, 7]), ("x",))


def test_shard_shapes_and_index_maps(mesh):
    rows = NamedSharding(mesh, P("data", None))
    assert rows.shard_shape((8, 6)) == (2, 6)
    indices = rows.addressable_devices_indices_map((8, 6))
    assert indices[mesh.devices[1, 0]] == (slice(2, 4), slice(0, 6))
    assert indices[mesh.devices[1, 1]] == indices[mesh.devices[1, 0]]  # replicated over model
    both = NamedSharding(mesh, P(("data", "model")))
    assert both.shard_shape((16,)) == (2,)
    assert both.addressable_devices_indices_map((16,))[mesh.devices[2, 1]] == (slice(10, 12),)
    assert NamedSharding(mesh, P()).is_fully_replicated
    assert not rows.is_fully_replicated


def test_gspmd_strings(mesh):
    assert NamedSharding(mesh, P()).hlo_sharding(2) == "{replicated}"
    assert (
        NamedSharding(mesh, P(("data", "model"))).hlo_sharding(1) == "{devices=[8]0,1,2,3,4,5,6,7}"
    )
    assert (
        NamedSharding(mesh, P(None, "model")).hlo_sharding(2)
        == "{devices=[1,2,4]0,2,4,6,1,3,5,7 last_tile_dim_replicate}"
    )


def test_equality_and_hashing(mesh):
    a, b = NamedSharding(mesh, P("data")), NamedSharding(mesh, P("data", None))
    assert a == b and hash(a) == hash(b)
    assert a != NamedSharding(mesh, P("model"))


def test_errors_name_the_axis_and_the_sizes(mesh):
    with pytest.raises(ValueError, match="names axis 'x'.*axes are \\('data', 'model'\\)"):
        NamedSharding(mesh, P("x"))
    with pytest.raises(ValueError, match="uses mesh axis 'data' twice"):
        NamedSharding(mesh, P("data", "data"))
    with pytest.raises(ValueError, match="dimension 0 of size 6 is not divisible by mesh axes"):
        NamedSharding(mesh, P("data")).shard_shape((6, 2))
