"""ember.experimental.topologies with a stand-in plugin whose platform has named topologies:
the description, meshes over its devices, lowering with ShapeDtypeStructs laid out on them,
and a compile-only executable that refuses to run."""

from __future__ import annotations

import types

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember._src.plugin import manager as manager_module
from ember._src.plugin.manager import PluginManager, PluginSource, discover_entry_points
from ember._src.reference.backend import ReferenceBackend, ReferenceExecutable
from ember.errors import ExecutionError, UnknownPlatformError
from ember.experimental import topologies
from ember.extend import PlatformSpec, hookimpl
from ember.sharding import NamedSharding, PartitionSpec as P

SLICES = {"slice:2x2": 4, "slice:2x4": 8}


class CompileOnlyStandIn(ReferenceExecutable):
    compile_only = True


class SliceBackend(ReferenceBackend):
    """The reference backend's devices standing for a slice's compile-only devices."""

    def __init__(self, count: int, options: dict):
        super().__init__(count)
        self.options = options
        for device in self._devices:
            device.device_kind = "stand-in chip"

    def compile(self, computation):
        return CompileOnlyStandIn(computation)


def make_slice(topology_name: str, **options):
    if topology_name not in SLICES:
        raise ValueError(f"unknown slice {topology_name!r}: known are {sorted(SLICES)}")
    return SliceBackend(SLICES[topology_name], options)


@hookimpl
def ember_platforms():
    return [
        PlatformSpec(
            name="slice",
            make_backend=lambda: ReferenceBackend(1),
            make_topology=make_slice,
            priority=-1,
        )
    ]


@pytest.fixture
def with_slices(monkeypatch):
    plugin = types.SimpleNamespace(ember_platforms=ember_platforms)
    sources = [*discover_entry_points(), PluginSource("slice", "stand_in", obj=plugin)]
    monkeypatch.setattr(manager_module, "_manager", PluginManager(sources))


def test_a_named_topology_has_the_plugins_devices_and_takes_its_options(with_slices):
    topo = topologies.get_topology_desc("slice:2x4", "slice", chips_per_host_bounds="2x2x1")
    assert len(topo.devices) == 8
    assert topo.devices[0].backend.options == {"chips_per_host_bounds": "2x2x1"}
    assert topo.name == "slice:2x4"
    assert repr(topo) == "TopologyDescription('slice:2x4', 8 x stand-in chip)"


def test_the_plugins_error_for_an_unknown_name_reaches_the_user(with_slices):
    with pytest.raises(ValueError, match=r"unknown slice 'slice:9x9': known are"):
        topologies.get_topology_desc("slice:9x9", "slice")
    with pytest.raises(ValueError, match="name a topology, such as 'v5e:2x2'"):
        topologies.get_topology_desc("", "slice")


def test_platforms_without_topologies_or_not_installed_are_refused(with_slices):
    with pytest.raises(NotImplementedError, match="platform 'reference' has no named topologies"):
        topologies.get_topology_desc("v5e:2x2", "reference")
    with pytest.raises(UnknownPlatformError, match="nosuch"):
        topologies.get_topology_desc("v5e:2x2", "nosuch")


def test_make_mesh_lays_the_devices_out_in_order_and_refuses_shapes_that_do_not_fit(with_slices):
    topo = topologies.get_topology_desc("slice:2x2", "slice")
    mesh = topologies.make_mesh(topo, (2, 2), ("x", "y"))
    assert mesh.axis_names == ("x", "y")
    assert [d.id for d in mesh.devices.flat] == [0, 1, 2, 3]
    with pytest.raises(ValueError, match=r"\(2, 4\) does not fit the topology slice:2x2: it has 4"):
        topologies.make_mesh(topo, (2, 4), ("x", "y"))
    with pytest.raises(ValueError, match="needs 2 axis names"):
        topologies.make_mesh(topo, (2, 2), ("x",))


def test_lowering_for_the_topology_and_running_the_compiled_program_is_refused(with_slices):
    topo = topologies.get_topology_desc("slice:2x2", "slice")
    mesh = topologies.make_mesh(topo, (4,), ("x",))
    rows = NamedSharding(mesh, P("x"))

    def f(x):
        return jnp.sin(x) * 2

    lowered = ember.jit(f).lower(ember.ShapeDtypeStruct((8, 3), np.float32, sharding=rows))
    text = lowered.as_text()
    assert "mhlo.num_partitions = 4" in text and '[{"x"}, {}]' in text
    compiled = lowered.compile()
    with pytest.raises(ExecutionError, match=r"compile-only devices \(4 x stand-in chip"):
        compiled(np.ones((8, 3), np.float32))


def test_a_shape_struct_sharding_must_agree_with_in_shardings(with_slices):
    mesh = topologies.make_mesh(topologies.get_topology_desc("slice:2x2", "slice"), (4,), ("x",))
    rows, whole = NamedSharding(mesh, P("x")), NamedSharding(mesh, P())
    fn = ember.jit(lambda x: x + 1, in_shardings=whole)
    with pytest.raises(ValueError, match="ShapeDtypeStruct with sharding"):
        fn.lower(ember.ShapeDtypeStruct((8,), np.float32, sharding=rows))
    agreeing = ember.ShapeDtypeStruct((8,), np.float32, sharding=whole)
    assert "mhlo.num_partitions = 4" in fn.lower(agreeing).as_text()


def test_shape_structs_compare_with_their_sharding(with_slices):
    mesh = topologies.make_mesh(topologies.get_topology_desc("slice:2x2", "slice"), (4,), ("x",))
    rows = NamedSharding(mesh, P("x"))
    laid_out = ember.ShapeDtypeStruct((8,), np.float32, sharding=rows)
    assert laid_out == ember.ShapeDtypeStruct((8,), np.float32, sharding=rows)
    assert laid_out != ember.ShapeDtypeStruct((8,), np.float32)
    assert "sharding=" in repr(laid_out)
