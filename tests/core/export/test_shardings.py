"""The mesh and layouts of a program exported over several devices, as JSON (shardings.py).
The programs themselves run in tests/sharding/test_export.py, on 8 devices."""

import json

import pytest

import ember
from ember._src.export import shardings
from ember.errors import ExportError
from ember.sharding import AbstractMesh, AxisType, P

MESH = AbstractMesh((4, 2), ("data", "model"), (AxisType.Auto, AxisType.Explicit))


def through_json(value):
    return json.loads(json.dumps(value))


def test_mesh_round_trips():
    data = through_json(shardings.encode_mesh(MESH))
    assert data == {
        "axis_names": ["data", "model"],
        "axis_sizes": [4, 2],
        "axis_types": ["Auto", "Explicit"],
    }
    assert shardings.decode_mesh(data) == MESH
    assert shardings.encode_mesh(None) is None and shardings.decode_mesh(None) is None


@pytest.mark.parametrize(
    "data",
    [
        [],
        {"axis_names": ["x"], "axis_sizes": [2]},
        {"axis_names": ["x"], "axis_sizes": [0], "axis_types": ["Auto"]},
        {"axis_names": ["x", "x"], "axis_sizes": [2, 2], "axis_types": ["Auto", "Auto"]},
        {"axis_names": ["x"], "axis_sizes": [2], "axis_types": ["Sideways"]},
        {"axis_names": ["x"], "axis_sizes": [True], "axis_types": ["Auto"]},
    ],
)
def test_bad_meshes_raise_export_error(data):
    with pytest.raises(ExportError, match="is not a mesh"):
        shardings.decode_mesh(data)


@pytest.mark.parametrize("spec", [P(), P("data"), P(None, "model"), P(("data", "model"), None)])
def test_specs_round_trip(spec):
    assert shardings.decode_spec(through_json(shardings.encode_spec(spec)), MESH) == spec


def test_bad_specs_raise_export_error():
    with pytest.raises(ExportError, match="not a PartitionSpec over the mesh"):
        shardings.decode_spec(["rows"], MESH)  # an axis the mesh does not have
    with pytest.raises(ExportError, match="not a PartitionSpec over the mesh"):
        shardings.decode_spec(["data", "data"], MESH)
    with pytest.raises(ExportError, match="is not a PartitionSpec"):
        shardings.decode_spec("data", MESH)
    with pytest.raises(ExportError, match="of a program on one device"):
        shardings.decode_spec(["data"], None)


def test_hlo_shardings_use_mesh_positions():
    assert shardings.hlo_sharding(MESH, P(), 2) == "{replicated}"
    assert shardings.hlo_sharding(MESH, P("data", "model"), 2) == "{devices=[4,2]0,1,2,3,4,5,6,7}"
    assert (
        shardings.hlo_sharding(MESH, P(None, "model"), 2)
        == "{devices=[1,2,4]0,2,4,6,1,3,5,7 last_tile_dim_replicate}"
    )
    assert shardings.hlo_sharding(None, None, 2) is None
    assert shardings.hlo_sharding(MESH, None, 2) is None


def test_mesh_on_lays_the_axes_over_the_given_devices():
    device = ember.devices()[0]
    one = AbstractMesh((1,), ("batch",), (AxisType.Explicit,))
    mesh = shardings.mesh_on(one, [device])
    assert mesh.shape_tuple == (("batch", 1),) and mesh.axis_types == (AxisType.Explicit,)
    assert mesh.device_list == [device]
