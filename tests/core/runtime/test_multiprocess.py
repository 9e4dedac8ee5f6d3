"""A multi-process job never hangs: a dead process, or one alive but stuck, makes the others
raise (ProcessFailedError within heartbeat_timeout_seconds, CollectiveTimeoutError within
the collective timeout, each naming the process), and the survivors exit with status 1."""

from __future__ import annotations

import threading
import time

from ember._src.runtime import multiprocess
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


# --------------------------------------------------------------------------------------------
# Job.wait within one process (a stand-in for the coordination service)


class _Coordination:
    """Every peer's heartbeat moves on each reading: nobody is ever dead."""

    def __init__(self) -> None:
        self.reads = 0

    def key_value_dir_get(self, prefix: str) -> list[tuple[str, str]]:
        self.reads += 1
        return [(f"{prefix}1", f"{self.reads}:0")]


class _Computation:
    """A result that is ready after ``polls`` looks at it (a short wait), or else
    ``seconds`` after it starts (a long one); counts how often it is looked at."""

    def __init__(self, *, polls: int | None = None, seconds: float = 0.0) -> None:
        self.polls = 0
        self.threads: list[int] = []
        self._ready_after = polls
        self._done = threading.Event()
        if polls is None:
            threading.Timer(seconds, self._done.set).start()

    def ready(self) -> bool:
        self.polls += 1
        if self._ready_after is not None and self.polls >= self._ready_after:
            self._done.set()
        return self._done.is_set()

    def block(self) -> str:
        self.threads.append(threading.get_ident())
        assert self._done.wait(10)
        return "value"


def _job() -> multiprocess.Job:
    return multiprocess.Job(
        process_id=0,
        num_processes=2,
        coordinator_address="127.0.0.1:1",
        coordination=_Coordination(),
        heartbeat_timeout=60,
    )


def test_a_short_wait_polls_and_returns_on_this_thread(monkeypatch):
    monkeypatch.setattr(multiprocess, "POLL_SECONDS", 1.0)  # however loaded the machine
    job = _job()
    short = _Computation(polls=3)
    assert job.wait(short.block, "waiting for f32[4]", short.ready) == "value"
    assert short.polls == 3
    assert short.threads == [threading.get_ident()]  # no hand-off to the waiter thread


def test_a_kind_of_wait_that_takes_long_is_handed_off_without_polling(monkeypatch):
    monkeypatch.setattr(multiprocess, "POLL_SECONDS", 0.02)
    job = _job()
    what = "waiting for f32[]"
    first = _Computation(seconds=0.2)
    start = time.perf_counter()
    assert job.wait(first.block, what, first.ready) == "value"
    assert time.perf_counter() - start >= 0.2
    assert first.polls > 2  # it polled for POLL_SECONDS before handing off
    assert first.threads != [threading.get_ident()]
    # The same kind again: known to take long, it is handed off after one look.
    second = _Computation(seconds=0.2)
    assert job.wait(second.block, what, second.ready) == "value"
    assert second.polls == 1
    assert second.threads != [threading.get_ident()]
    # Another kind still polls first.
    other = _Computation(polls=2)
    assert job.wait(other.block, "waiting for f32[8]", other.ready) == "value"
    assert other.polls == 2 and other.threads == [threading.get_ident()]


def test_a_kind_of_wait_that_becomes_short_polls_again(monkeypatch):
    monkeypatch.setattr(multiprocess, "POLL_SECONDS", 0.02)
    job = _job()
    what = "running jit_step"
    for computation in [_Computation(seconds=0.2)] + [_Computation(polls=1) for _ in range(12)]:
        job.wait(computation.block, what, computation.ready)
    # The moving average of the waits fell back within the poll windows: polled, and run here.
    last = _Computation(polls=2)
    job.wait(last.block, what, last.ready)
    assert last.polls == 2 and last.threads == [threading.get_ident()]
