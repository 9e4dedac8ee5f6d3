"""ember.experimental.multihost_utils across two processes (and alone)."""

from __future__ import annotations

import numpy as np

from ember.experimental import multihost_utils
from tests.core.distributed.jobs import assert_all_succeeded, describe, needs_cpu_plugin, run_job

SCRIPT = """
import numpy as np
import ember
from ember import distributed, errors
from ember.experimental import multihost_utils as mh
from ember.sharding import NamedSharding, PartitionSpec as P

distributed.initialize()
me = ember.process_index()
report(
    stacked=mh.process_allgather(np.array([me, 10 + me])).tolist(),
    tiled=mh.process_allgather(np.array([me, 10 + me]), tiled=True).tolist(),
    tree=mh.process_allgather({"a": np.float32(me), "b": [np.arange(2) * me]}),
    broadcast=mh.broadcast_one_to_all(np.array([me + 5.0, 1.0])).tolist(),
    broadcast_bool=bool(mh.broadcast_one_to_all(np.array(me == 0))),
    from_one=mh.broadcast_one_to_all(np.array(me * 7), is_source=me == 1).tolist(),
)
mh.sync_global_devices("in step")
mesh = ember.make_mesh((4,), ("i",))
x = ember.make_array_from_process_local_data(NamedSharding(mesh, P("i")), np.arange(2.0) + 2 * me)
local = mh.global_array_to_host_local_array(x, mesh, P("i"))
back = mh.host_local_array_to_global_array(local, mesh, P("i"))
report(
    gathered_global=mh.process_allgather(x).tolist(),
    local_shape=list(local.shape), local_value=np.asarray(local).tolist(),
    local_devices=[d.id for d in local.sharding.device_list],
    back_shape=list(back.shape), back=mh.process_allgather(back).tolist(),
    back_shares_buffers=all(
        a.data._buffer is b.data._buffer or np.shares_memory(np.asarray(a.data), np.asarray(b.data))
        for a, b in zip(local.addressable_shards, back.addressable_shards)),
)
try:
    mh.sync_global_devices(f"step {me}")
except errors.DistributedError as err:
    report(mismatch=str(err))
"""


def _jsonable(tree):
    return {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in tree.items()}


def test_between_two_processes(tmp_path):
    needs_cpu_plugin()
    script = SCRIPT.replace("tree=mh.process_allgather(", "tree=_tolist(mh.process_allgather(")
    script = script.replace("[np.arange(2) * me]}),", "[np.arange(2) * me]})),")
    script = script.replace(
        "distributed.initialize()",
        "distributed.initialize()\n"
        "def _tolist(t):\n"
        "    return {'a': t['a'].tolist(), 'b': [b.tolist() for b in t['b']]}",
    )
    finished = run_job(script, tmp_path)
    assert_all_succeeded(finished)
    for me, f in enumerate(finished):
        seen = f.results
        assert seen["stacked"] == [[0, 10], [1, 11]], describe(finished)
        assert seen["tiled"] == [0, 10, 1, 11]
        assert seen["tree"] == {"a": [0.0, 1.0], "b": [[[0, 0], [0, 1]]]}
        assert seen["broadcast"] == [5.0, 1.0] and seen["broadcast_bool"] is True
        assert seen["from_one"] == 7
        assert seen["gathered_global"] == [0.0, 1.0, 2.0, 3.0]
        assert seen["local_shape"] == [2] and seen["local_value"] == [2.0 * me, 2.0 * me + 1]
        assert seen["local_devices"] == ([0, 1] if me == 0 else [2048, 2049])
        assert seen["back_shape"] == [4] and seen["back"] == [0.0, 1.0, 2.0, 3.0]
        assert seen["back_shares_buffers"]
        assert "sync_global_devices" in seen["mismatch"]
        assert "not running the same program" in seen["mismatch"]


def test_alone():
    np.testing.assert_array_equal(multihost_utils.process_allgather(np.arange(3)), [[0, 1, 2]])
    np.testing.assert_array_equal(
        multihost_utils.process_allgather(np.arange(3), tiled=True), [0, 1, 2]
    )
    np.testing.assert_array_equal(multihost_utils.broadcast_one_to_all(np.ones(2)), [1.0, 1.0])
    multihost_utils.sync_global_devices("alone")  # no job: returns at once
