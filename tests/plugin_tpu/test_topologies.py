"""Compiling for TPU slices this machine does not have, with the real libtpu (skipped
without it): the slice's devices, a program sharded over them compiled to a TPU executable,
its memory and cost analysis, and the errors (an unknown slice, a mesh that does not fit,
running the program)."""

from __future__ import annotations

import numpy as np
import pytest
from ember_plugin_tpu import plugin

import ember
import ember.numpy as jnp
from ember._src.plugin import manager as manager_module
from ember._src.plugin.manager import PluginManager, PluginSource
from ember.errors import ExecutionError
from ember.experimental import topologies
from ember.sharding import NamedSharding, PartitionSpec as P
from tests.plugin_tpu.util import HAVE_LIBTPU, NEEDS_LIBTPU

pytestmark = [
    pytest.mark.skipif(not HAVE_LIBTPU, reason=NEEDS_LIBTPU),
    pytest.mark.usefixtures("with_tpu_plugin"),
]


def test_a_v5e_2x2_slice_has_four_chips_in_a_2x2_grid():
    topo = topologies.get_topology_desc("v5e:2x2", "tpu")
    assert [d.device_kind for d in topo.devices] == ["TPU v5 lite"] * 4
    assert [d.platform for d in topo.devices] == ["tpu"] * 4
    assert [d.coords for d in topo.devices] == [(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0)]
    assert [d.core_on_chip for d in topo.devices] == [0] * 4
    assert repr(topo.devices[1]) == "TpuDevice(id=1, coords=(1, 0, 0), core_on_chip=0)"


def test_tpu_is_the_default_platform_and_other_generations_are_known():
    assert len(topologies.get_topology_desc("v4:2x2x1").devices) == 8  # two cores per chip
    assert topologies.get_topology_desc("v6e:2x2").devices[0].device_kind == "TPU v6 lite"


def test_topology_options_reach_libtpu():
    with pytest.raises(ValueError, match=r"'v5e:1x1'.*not divisible by the given"):
        topologies.get_topology_desc("v5e:1x1", "tpu")
    one = topologies.get_topology_desc("v5e:1x1", "tpu", chips_per_host_bounds=(1, 1, 1))
    assert [d.coords for d in one.devices] == [(0, 0, 0)]


def test_an_unknown_slice_lists_the_known_forms():
    with pytest.raises(ValueError, match=r"unknown TPU topology 'v5e-8': a TPU topology is named"):
        topologies.get_topology_desc("v5e-8", "tpu")
    with pytest.raises(ValueError, match=r"unknown TPU topology 'v9:2x2'.*Invalid TPU external"):
        topologies.get_topology_desc("v9:2x2", "tpu")


def test_a_mesh_that_does_not_fit_the_slice_is_refused():
    topo = topologies.get_topology_desc("v5e:2x2", "tpu")
    with pytest.raises(ValueError, match=r"\(2, 4\) does not fit the topology v5e:2x2"):
        topologies.make_mesh(topo, (2, 4), ("data", "model"))


@pytest.fixture(scope="module")
def compiled():
    """``tanh(x @ w)`` on a v5e 2x2 slice: w f32[1024,1024] replicated, x bf16[8192,1024]
    split by rows over the four chips."""
    previous = manager_module._manager
    manager_module._manager = PluginManager([PluginSource("tpu", "p", obj=plugin)])
    try:
        topo = topologies.get_topology_desc("v5e:2x2", "tpu")
        mesh = topologies.make_mesh(topo, (4,), ("x",))
        rows, whole = NamedSharding(mesh, P("x")), NamedSharding(mesh, P())

        def layer(w, x):
            return jnp.tanh(x @ w)

        fn = ember.jit(layer, out_shardings=rows)
        lowered = fn.lower(
            ember.ShapeDtypeStruct((1024, 1024), jnp.float32, sharding=whole),
            ember.ShapeDtypeStruct((8192, 1024), jnp.bfloat16, sharding=rows),
        )
        return lowered.compile()
    finally:
        manager_module._manager = previous


def test_the_memory_analysis_is_per_chip(compiled):
    memory = compiled.memory_analysis()
    w_bytes = 1024 * 1024 * 4
    x_rows_bytes = 8192 // 4 * 1024 * 2
    assert memory.argument_size_in_bytes == w_bytes + x_rows_bytes
    assert memory.output_size_in_bytes == 8192 // 4 * 1024 * 4  # f32: bf16 @ f32 promotes
    assert memory.generated_code_size_in_bytes > 0


def test_the_cost_analysis_counts_one_chips_flops(compiled):
    assert compiled.cost_analysis()["flops"] == 2 * (8192 // 4) * 1024 * 1024


def test_the_executable_is_tpu_code(compiled):
    text = compiled.as_text()
    assert "num_partitions=4" in text
    assert "bf16[2048,1024]{1,0:T(8,128)(2,1)}" in text  # TPU's tiled layout


def test_running_it_is_a_clear_error(compiled):
    with pytest.raises(ExecutionError, match=r"compile-only devices \(4 x TPU v5 lite"):
        compiled(np.ones((1024, 1024), np.float32), np.ones((8192, 1024), np.float32))
