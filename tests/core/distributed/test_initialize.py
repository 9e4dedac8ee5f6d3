"""ember.distributed.initialize: a job of several processes on 127.0.0.1 sees one set of
global devices; global arrays, jit over them and shard_map collectives work across the
processes; bad input is refused with clear errors, within deadlines."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import errors
from tests.core.distributed.jobs import assert_all_succeeded, describe, needs_cpu_plugin, run_job

GLOBAL_ARRAYS = """
import numpy as np
import ember
import ember.numpy as enp
from ember import distributed, errors, lax
from ember.sharding import NamedSharding, PartitionSpec as P

distributed.initialize()
me, count = ember.process_index(), ember.process_count()
report(initialized=distributed.is_initialized(), me=me, count=count,
       devices=[d.id for d in ember.devices()],
       owners=[d.process_index for d in ember.devices()],
       local=[d.id for d in ember.local_devices()],
       local_count=ember.local_device_count(), device_count=ember.device_count())

mesh = ember.make_mesh((ember.device_count(),), ("i",))
rows = NamedSharding(mesh, P("i"))
local = np.arange(4 * 3, dtype=np.float32).reshape(4, 3) + 100 * me
x = ember.make_array_from_process_local_data(rows, local)
report(shape=list(x.shape), addressable=x.is_fully_addressable,
       shard_rows=[[s.index[0].start, s.index[0].stop] for s in x.addressable_shards],
       shard_values=[np.asarray(s.data).tolist() for s in x.addressable_shards])
try:
    np.asarray(x)
except errors.DistributedError as err:
    report(asarray_error=str(err))

total = ember.jit(lambda v: enp.sum(v * v), out_shardings=NamedSharding(mesh, P()))(x)
report(total=float(total))
doubled = ember.jit(lambda v: 2 * v)(x)
report(doubled_sharding=str(doubled.sharding.spec),
       doubled_local=[np.asarray(s.data).tolist() for s in doubled.addressable_shards])

y = ember.make_array_from_callback(
    (8, 2), rows, lambda index: np.full((2, 2), index[0].start, np.int32))
report(callback_local=[np.asarray(s.data).tolist() for s in y.addressable_shards])
pieces = [ember.device_put(np.full((2, 2), d.id, np.float32), d) for d in ember.local_devices()]
z = ember.make_array_from_single_device_arrays((8, 2), rows, pieces)
report(assembled_total=float(ember.jit(enp.sum, out_shardings=NamedSharding(mesh, P()))(z)))

def collectives(v):
    return (lax.psum(v, "i"), lax.all_gather(v, "i", tiled=True, to="invarying"),
            lax.ppermute(v, "i", [(k, (k + 1) % 4) for k in range(4)]),
            lax.psum_scatter(enp.tile(v, (4, 1)), "i", tiled=True),
            lax.all_to_all(enp.tile(v, (4, 1)), "i", 0, 0, tiled=True), lax.axis_index("i")[None])
f = ember.jit(ember.shard_map(collectives, mesh=mesh, in_specs=P("i"),
                              out_specs=(P(), P(), P("i"), P("i"), P("i"), P("i"))))
outs = f(ember.make_array_from_process_local_data(rows, np.arange(2.0) + 2 * me))
gather = ember.experimental.multihost_utils.process_allgather
gathered = [np.asarray(o) if o.is_fully_addressable else gather(o) for o in outs]
report(collectives=[np.asarray(g).tolist() for g in gathered])
"""


@pytest.fixture(scope="module")
def global_job(tmp_path_factory):
    needs_cpu_plugin()
    script = GLOBAL_ARRAYS.replace(
        "import ember\n", "import ember\nimport ember.experimental.multihost_utils\n", 1
    )
    finished = run_job(script, tmp_path_factory.mktemp("job"), processes=2, devices=2)
    assert_all_succeeded(finished)
    return [f.results for f in finished]


def test_every_process_sees_the_global_devices(global_job):
    for me, seen in enumerate(global_job):
        assert seen["initialized"] and seen["me"] == me and seen["count"] == 2
        assert seen["device_count"] == 4 and seen["local_count"] == 2
        assert seen["owners"] == [0, 0, 1, 1]
        mine = [d for d, owner in zip(seen["devices"], seen["owners"]) if owner == me]
        assert seen["local"] == mine
    assert global_job[0]["devices"] == global_job[1]["devices"]


def test_a_global_array_holds_only_this_process_shards(global_job):
    for me, seen in enumerate(global_job):
        assert seen["shape"] == [8, 3] and seen["addressable"] is False
        assert seen["shard_rows"] == [[4 * me, 4 * me + 2], [4 * me + 2, 4 * me + 4]]
        local = np.arange(12, dtype=np.float32).reshape(4, 3) + 100 * me
        assert seen["shard_values"] == [local[:2].tolist(), local[2:].tolist()]
        assert "process_allgather" in seen["asarray_error"]
        assert "addressable_shards" in seen["asarray_error"]


def test_jit_over_a_mesh_of_two_processes(global_job):
    whole = np.concatenate(
        [np.arange(12, dtype=np.float32).reshape(4, 3) + 100 * p for p in range(2)]
    )
    for me, seen in enumerate(global_job):
        np.testing.assert_allclose(seen["total"], float((whole**2).sum()), rtol=1e-6)
        assert seen["doubled_sharding"] == "PartitionSpec('i', None)"
        np.testing.assert_array_equal(
            np.concatenate(seen["doubled_local"]), 2 * whole[4 * me : 4 * me + 4]
        )


def test_make_array_from_callback_and_single_device_arrays(global_job):
    for me, seen in enumerate(global_job):
        starts = [4 * me, 4 * me + 2]
        assert seen["callback_local"] == [np.full((2, 2), s).tolist() for s in starts]
        # pieces filled with their device's id: 0, 1 on process 0; 2048, 2049 on process 1
        assert seen["assembled_total"] == 4 * (0 + 1 + 2048 + 2049)


def test_shard_map_collectives_across_processes(global_job):
    shards = np.arange(4.0).reshape(4, 1)  # device k's shard of the (4,) input: [k]
    for seen in global_job:
        psum, gathered, permuted, scattered, exchanged, index = (
            np.asarray(v) for v in seen["collectives"]
        )
        np.testing.assert_array_equal(psum, shards.sum(0))
        np.testing.assert_array_equal(gathered, shards.reshape(-1))
        np.testing.assert_array_equal(permuted, np.roll(shards, 1, axis=0).reshape(-1))
        tiled = np.tile(shards[:, None, :], (1, 4, 1))  # each device's (4, 1) operand
        np.testing.assert_array_equal(scattered, tiled.sum(0))
        np.testing.assert_array_equal(exchanged, tiled.transpose(1, 0, 2).reshape(16, 1))
        np.testing.assert_array_equal(index, np.arange(4))


FOUR = """
import numpy as np
import ember
from ember import distributed, lax
from ember.sharding import PartitionSpec as P
from ember.experimental import multihost_utils

distributed.initialize()
mesh = ember.make_mesh((4,), ("i",))
me = ember.process_index()
f = ember.jit(
    ember.shard_map(lambda v: lax.psum(v, "i"), mesh=mesh, in_specs=P("i"), out_specs=P()))
rows = ember.sharding.NamedSharding(mesh, P("i"))
x = ember.make_array_from_process_local_data(rows, np.array([me + 1.0]))
report(psum=float(np.asarray(f(x))[0]),
       gathered=multihost_utils.process_allgather(np.array(me * 10)).tolist())
from ember._src.plugin import doctor
report(doctor=doctor.report().split("distributed:")[1].split("problems")[0])
"""


def test_four_processes(tmp_path):
    needs_cpu_plugin()
    finished = run_job(FOUR, tmp_path, processes=4, devices=1)
    assert_all_succeeded(finished)
    for f in finished:
        doctor = f.results.pop("doctor")
        assert f.results == {"psum": 10.0, "gathered": [0, 10, 20, 30]}, describe(finished)
        assert f"process {f.rank} of 4, coordinator 127.0.0.1:" in doctor
        assert "(found from: environment_variables)" in doctor
        assert "devices per process: 0: 1, 1: 1, 2: 1, 3: 1" in doctor


# --------------------------------------------------------------------------------------------
# Bad input


BAD_ARGUMENTS = """
import ember
from ember import distributed

def refused(**kwargs):
    try:
        distributed.initialize(**kwargs)
    except (ValueError, ember.errors.DistributedError) as err:
        return f"{type(err).__name__}: {err}"
    return "accepted"

report(
    out_of_range=refused(coordinator_address="127.0.0.1:1", num_processes=2, process_id=2),
    bad_count=refused(coordinator_address="127.0.0.1:1", num_processes=0, process_id=0),
    bad_address=refused(coordinator_address="nowhere", num_processes=2, process_id=1),
)
ember.numpy.zeros(3)  # the backend starts
report(after_start=refused(coordinator_address="127.0.0.1:1", num_processes=1, process_id=0))
"""


def test_bad_arguments_are_refused_before_connecting(tmp_path):
    needs_cpu_plugin()
    (finished,) = run_job(
        BAD_ARGUMENTS, tmp_path, processes=1, env={"EMBER_COORDINATOR_ADDRESS": ""}
    )
    assert finished.returncode == 0, describe([finished])
    seen = finished.results
    assert seen["out_of_range"].startswith("ValueError") and "[0, 2)" in seen["out_of_range"]
    assert "positive int" in seen["bad_count"]
    assert "'host:port'" in seen["bad_address"] and "nowhere" in seen["bad_address"]
    assert seen["after_start"].startswith("DistributedError")
    assert "before the first computation" in seen["after_start"]
    assert "'cpu' backend already started" in seen["after_start"]


TWICE = """
from ember import distributed, errors
distributed.initialize()
try:
    distributed.initialize()
except errors.DistributedError as err:
    report(twice=str(err))
"""


def test_initialize_twice(tmp_path):
    needs_cpu_plugin()
    (finished,) = run_job(TWICE, tmp_path, processes=1, devices=1)
    assert finished.returncode == 0, describe([finished])
    assert "already called: this is process 0 of 1" in finished.results["twice"]


UNREACHABLE = """
import time
from ember import distributed, errors
start = time.monotonic()
try:
    distributed.initialize(initialization_timeout=3)
except errors.DistributedError as err:
    report(error=str(err), seconds=time.monotonic() - start)
"""


def test_an_unreachable_coordinator_fails_within_the_timeout(tmp_path):
    needs_cpu_plugin()
    # Only rank 1 starts: nobody hosts the coordinator.
    (finished,) = run_job(UNREACHABLE, tmp_path, processes=2, start_ranks=[1], timeout=60)
    assert finished.returncode == 0, describe([finished])
    seen = finished.results
    assert 3 <= seen["seconds"] < 15  # the deadline, plus starting the CPU plugin
    assert "could not reach the coordinator at 127.0.0.1:" in seen["error"]
    assert "within 3 s" in seen["error"]


MISSING_PEER = """
import time
from ember import distributed, errors
start = time.monotonic()
try:
    distributed.initialize(initialization_timeout=3)
except errors.DistributedError as err:
    report(error=str(err), seconds=time.monotonic() - start)
"""


def test_a_process_that_never_comes_fails_initialize_within_the_timeout(tmp_path):
    needs_cpu_plugin()
    (finished,) = run_job(MISSING_PEER, tmp_path, processes=2, start_ranks=[0], timeout=60)
    assert finished.returncode == 0, describe([finished])
    seen = finished.results
    assert 3 <= seen["seconds"] < 15  # the deadline, plus starting the CPU plugin
    assert "not all 2 processes connected" in seen["error"]


REFUSED = """
import time
from ember import distributed, errors
start = time.monotonic()
try:
    distributed.initialize(initialization_timeout=5)
except errors.DistributedError as err:
    report(error=str(err), seconds=time.monotonic() - start)
"""


def test_processes_that_disagree_on_the_count(tmp_path):
    needs_cpu_plugin()
    finished = run_job(
        REFUSED, tmp_path, processes=2, rank_env={1: {"EMBER_NUM_PROCESSES": "3"}}, timeout=90
    )
    refused = finished[1].results.get("error", "")
    assert "process 1 cannot join the job" in refused, describe(finished)
    assert "num_processes=3, but the coordinator (process 0) was started with num_processes=2" in (
        refused
    )
    # Process 0 waits for process 1 until its deadline, then says so; nobody hangs or crashes.
    assert "not all 2 processes connected" in finished[0].results.get("error", "")
    assert all(f.returncode == 0 for f in finished), describe(finished)


def test_a_duplicate_process_id_is_refused(tmp_path):
    needs_cpu_plugin()
    # Ranks 1 and 2 both claim process_id 1; process_id 2 never comes.
    finished = run_job(
        REFUSED, tmp_path, processes=3, rank_env={2: {"EMBER_PROCESS_ID": "1"}}, timeout=90
    )
    messages = [f.results.get("error", "") for f in finished]
    taken = [m for m in messages if "process_id 1 is already taken by the process" in m]
    assert len(taken) == 1, describe(finished)
    assert "give each process a distinct process_id" in taken[0]
    assert all(f.returncode == 0 for f in finished), describe(finished)  # no process ended
    assert all(f.results["seconds"] < 5 + 10 for f in finished)


# --------------------------------------------------------------------------------------------
# One process (no job): what the same functions say


def test_without_a_job():
    assert not ember.distributed.is_initialized()
    assert ember.process_count() == 1 and ember.process_index() == 0
    devices = ember.devices()
    assert all(d.process_index == 0 for d in devices)
    mesh = ember.make_mesh((1,), ("i",), devices=devices[:1])
    sharding = ember.sharding.NamedSharding(mesh, ember.sharding.PartitionSpec("i"))
    x = ember.make_array_from_process_local_data(sharding, np.arange(4.0))
    np.testing.assert_array_equal(np.asarray(x), np.arange(4.0))
    with pytest.raises(ValueError, match="its devices cover a block of shape"):
        ember.make_array_from_process_local_data(sharding, np.arange(4.0), global_shape=(6,))


def test_collective_timeout_is_a_config_option():
    assert ember.config.read("collective_timeout_seconds") > 0
    assert issubclass(errors.CollectiveTimeoutError, TimeoutError)
    assert issubclass(errors.ProcessFailedError, errors.DistributedError)
