"""A multi-process job never hangs: a dead process, or one alive but stuck, makes the others
raise (ProcessFailedError within heartbeat_timeout_seconds, CollectiveTimeoutError within
the collective timeout, each naming the process), and the survivors exit with status 1."""

from __future__ import annotations

from tests.core.distributed.jobs import describe, needs_cpu_plugin, run_job

# Process 1 leaves (dies, or sleeps) after the first cross-process psum; process 0 then runs
# a second one, which needs process 1.
LOSES_A_PEER = """
import os, sys, time
import numpy as np
import ember
from ember import distributed, errors, lax
from ember.sharding import NamedSharding, PartitionSpec as P

MODE = os.environ["JOB_MODE"]
LEAVER = int(os.environ["JOB_LEAVER"])
distributed.initialize(heartbeat_timeout_seconds=3)
ember.config.update("collective_timeout_seconds", 5)
me = ember.process_index()
mesh = ember.make_mesh((ember.device_count(),), ("i",))
psum = ember.jit(ember.shard_map(lambda v: lax.psum(v, "i"), mesh=mesh, in_specs=P("i"),
                                 out_specs=P()))
x = ember.make_array_from_process_local_data(NamedSharding(mesh, P("i")), np.ones(2) * me)
report(first=float(np.asarray(psum(x))[0]))
if me == LEAVER:
    if MODE == "dies":
        os._exit(3)
    if MODE == "stuck":
        time.sleep(15)
        sys.exit(0)
    if MODE == "barrier":
        time.sleep(15)
        sys.exit(0)
start = time.monotonic()
try:
    if MODE == "barrier":
        ember.experimental.multihost_utils.sync_global_devices("after")
    else:
        float(np.asarray(psum(x))[0])
except errors.DistributedError as err:
    report(error=type(err).__name__, message=str(err), seconds=time.monotonic() - start)
    raise
"""


def _lose_a_peer(tmp_path, mode, leaver=1):
    needs_cpu_plugin()
    script = LOSES_A_PEER.replace(
        "import ember\n", "import ember\nimport ember.experimental.multihost_utils\n", 1
    )
    env = {"JOB_MODE": mode, "JOB_LEAVER": str(leaver)}
    finished = run_job(script, tmp_path, env=env, timeout=120)
    survivor = finished[1 - leaver]
    assert survivor.results.get("first") == 1.0 * 2, describe(finished)
    assert "error" in survivor.results, describe(finished)
    return survivor


def test_a_dead_process_is_detected_by_its_heartbeats(tmp_path):
    survivor = _lose_a_peer(tmp_path, "dies")
    seen = survivor.results
    assert seen["error"] == "ProcessFailedError"
    assert "process 1 stopped sending heartbeats" in seen["message"]
    assert "heartbeat_timeout_seconds=3" in seen["message"]
    assert seen["seconds"] < 3 + 3  # the heartbeat timeout, plus a check or two
    assert survivor.returncode == 1  # the exception ended it, without XLA ending it first


def test_process_0_dying_does_not_take_the_others_with_it(tmp_path):
    # Process 0 started the coordination service in a process of its own: it outlives
    # process 0, so process 1 raises (naming process 0) instead of being ended by XLA.
    survivor = _lose_a_peer(tmp_path, "dies", leaver=0)
    seen = survivor.results
    assert seen["error"] == "ProcessFailedError"
    assert "process 0 stopped sending heartbeats" in seen["message"]
    assert seen["seconds"] < 3 + 3
    assert survivor.returncode == 1


def test_a_stuck_process_is_named_when_the_collective_times_out(tmp_path):
    survivor = _lose_a_peer(tmp_path, "stuck")
    seen = survivor.results
    assert seen["error"] == "CollectiveTimeoutError"
    assert "collective_timeout_seconds=5" in seen["message"]
    assert "process 1 did not join" in seen["message"]
    assert 5 <= seen["seconds"] < 5 + 3
    assert survivor.returncode == 1
    assert survivor.seconds < 15  # it left without waiting for process 1 to wake up


def test_a_barrier_that_a_process_never_reaches(tmp_path):
    survivor = _lose_a_peer(tmp_path, "barrier")
    seen = survivor.results
    assert seen["error"] == "CollectiveTimeoutError"
    assert "barrier" in seen["message"] and "within 5 s" in seen["message"]
    assert seen["seconds"] < 5 + 3
    assert survivor.returncode == 1
