"""Eager dispatch (execution/eager.py): operands placed where a primitive runs."""

from __future__ import annotations

import numpy as np

import ember
from ember import lax
from ember.sharding import PartitionSpec as P


def test_indexing_a_result_typed_over_a_one_device_mesh():
    # the index lives on a device, the array is typed over a one-device Explicit mesh: the
    # program over the mesh annotates both over it (this crashed at lowering)
    mesh = ember.make_mesh((1,), ("i",))
    x = np.arange(4.0, dtype=np.float32)
    total = ember.shard_map(
        lambda b: lax.scan(lambda c, v: (c + v, None), b[0] * 0, b)[0][None],
        mesh=mesh,
        in_specs=P("i"),
        out_specs=P("i"),
    )(x)
    assert float(total[0]) == 6.0
    assert np.asarray(total[np.int32(0)] + x[1]) == 7.0
