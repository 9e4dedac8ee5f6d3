"""Host callbacks in programs over a mesh: once on the first device outside shard_map, once
per device inside it; ordered effects over several devices are refused."""

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.errors import EmberError
from ember.sharding import NamedSharding, PartitionSpec as P


def test_a_callback_in_a_mesh_program_runs_once_with_the_whole_value(mesh):
    seen = []
    x = ember.device_put(enp.arange(8.0), NamedSharding(mesh, P("data")))
    f = ember.jit(
        lambda x: (ember.debug.callback(lambda s: seen.append(float(s)), x.sum()), 2 * x)[1]
    )
    np.testing.assert_array_equal(np.asarray(f(x)), 2 * np.arange(8.0))
    ember.effects_barrier()
    assert seen == [28.0]


def test_a_pure_callback_in_a_mesh_program_feeds_the_partitioned_rest(mesh):
    x = ember.device_put(enp.arange(8.0), NamedSharding(mesh, P("data")))
    f = ember.jit(
        lambda x: (
            ember.pure_callback(
                lambda v: np.cumsum(np.asarray(v)).astype(np.float32),
                ember.ShapeDtypeStruct((8,), np.float32),
                x,
            )
            + x
        )
    )
    np.testing.assert_array_equal(np.asarray(f(x)), np.cumsum(np.arange(8.0)) + np.arange(8.0))


def test_inside_shard_map_every_device_calls_back_with_its_part(mesh):
    seen = []

    def body(block):
        ember.debug.callback(lambda b: seen.append(np.asarray(b).tolist()), block)
        return block * 2

    f = ember.jit(ember.shard_map(body, mesh=mesh, in_specs=P("data"), out_specs=P("data")))
    x = ember.device_put(enp.arange(8.0), NamedSharding(mesh, P("data")))
    np.testing.assert_array_equal(np.asarray(f(x)), 2 * np.arange(8.0))
    ember.effects_barrier()
    # 4 x 2 devices: each of the 4 data blocks is seen by the 2 devices that hold it
    assert sorted(seen) == sorted([[2.0 * i, 2.0 * i + 1] for i in range(4)] * 2)


def test_ordered_effects_over_several_devices_are_refused(mesh):
    x = ember.device_put(enp.arange(8.0), NamedSharding(mesh, P("data")))
    f = ember.jit(lambda x: ember.debug.print("{}", x.sum(), ordered=True))
    with pytest.raises(EmberError, match="ordered effects run on one device"):
        f(x)
