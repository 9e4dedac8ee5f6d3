"""This process's place in a multi-process job, and waits on the other processes that end.

``ember.distributed.initialize`` connects to XLA's coordination service and makes a ``Job``
current; backends created afterwards read it (``current_job()``) to see the job's global
devices. Everything that blocks on the other processes goes through ``Job.wait``, which never
waits forever:

- each process publishes a heartbeat (and how many cross-process programs it has started) in
  the coordination service's key-value store from a background thread;
- a wait runs the blocking call on a helper thread and watches it: a peer whose heartbeat has
  not moved for ``heartbeat_timeout`` seconds is dead (``ProcessFailedError``), and a wait
  longer than the collective timeout names the processes that have started fewer
  cross-process programs than this one, i.e. those that never joined (``CollectiveTimeoutError``).

Why ember keeps its own heartbeats: XLA's own detection, when it notices a dead peer, ends the
surviving processes from a C++ thread (a fatal log, no Python exception), and an established
gloo collective whose peer stops waits forever. The coordination service is therefore started
in its "recoverable" mode (a dead process is dropped, nobody is terminated) and the deadlines
live here, on top of its key-value store.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ember._src import errors
from ember._src.config import config

config.define(
    "collective_timeout_seconds",
    1200.0,
    help="In a multi-process job, the longest a wait on the other processes (a computation "
    "spanning processes, a barrier) may take before ember raises CollectiveTimeoutError naming "
    "the processes that did not join; 0 waits without a deadline (dead processes are still "
    "detected by their heartbeats).",
)

HEARTBEAT_PREFIX = "ember/heartbeat/"


class Coordination(Protocol):
    """A client of XLA's coordination service, as a plugin's distributed runtime hands it over
    (``ember_plugin_kit.pjrt`` wraps jaxlib's). Timeouts are in milliseconds."""

    def connect(self) -> None: ...

    def key_value_set(self, key: str, value: str, allow_overwrite: bool = False) -> None: ...

    def blocking_key_value_get(self, key: str, timeout_ms: int) -> str: ...

    def key_value_dir_get(self, prefix: str) -> list[tuple[str, str]]: ...

    def wait_at_barrier(
        self, name: str, timeout_ms: int, process_ids: Sequence[int] | None = None
    ) -> None: ...

    def shutdown(self) -> None: ...


class Job:
    """One process's view of a multi-process job."""

    def __init__(
        self,
        *,
        process_id: int,
        num_processes: int,
        coordinator_address: str,
        coordination: Coordination,
        heartbeat_timeout: float,
        local_device_ids: Sequence[int] | None = None,
        service: Any = None,
        cluster: str = "explicit",
        initialization_timeout: float = 300.0,
        shutdown_timeout: float = 300.0,
        host_address: str | None = None,
        registration: Any = None,
    ):
        self.process_id = process_id
        self.num_processes = num_processes
        self.coordinator_address = coordinator_address
        self.coordination = coordination
        self.heartbeat_timeout = float(heartbeat_timeout)
        self.local_device_ids = None if local_device_ids is None else list(local_device_ids)
        self.service = service  # process 0 hosts the coordination service
        self.cluster = cluster  # how the job's shape was found (the doctor shows it)
        self.initialization_timeout = float(initialization_timeout)
        self.shutdown_timeout = float(shutdown_timeout)
        # The address other processes reach this one at (None: let the transport pick).
        self.host_address = host_address
        # This process's claim to its process_id at the coordinator, held while in the job.
        self.registration = registration
        # Cross-process programs this process has started: every process of an SPMD job starts
        # the same ones in the same order, so a peer whose count is lower has not reached the
        # collective this process waits on.
        self.launched = 0
        # Set once a wait gave up on a peer: later waits fail at once instead of hanging too.
        self.failure: errors.DistributedError | None = None
        self._beat = 0
        self._stop = threading.Event()
        self._beats: threading.Thread | None = None
        self._heartbeat_error: BaseException | None = None
        now = time.monotonic()
        self._seen: dict[int, tuple[str | None, float]] = {
            p: (None, now) for p in range(num_processes) if p != process_id
        }
        self._waiter: _Waiter | None = None
        # How long recent waits of each kind (``what``) took, to choose between polling and
        # handing off (see ``wait``).
        self._wait_seconds: dict[str, float] = {}
        # (backend, buffers) of this process's last launch: while those are pending, a new
        # launch may queue behind a collective on the devices, so it runs under a deadline.
        self.last_launch: tuple[Any, list[Any]] | None = None

    # -- heartbeats -------------------------------------------------------------------------------

    @property
    def heartbeat_interval(self) -> float:
        return min(max(self.heartbeat_timeout / 5, 0.1), 10.0)

    def start_heartbeats(self) -> None:
        self._publish()
        self._beats = threading.Thread(
            target=self._heartbeat_loop, name="ember-heartbeat", daemon=True
        )
        self._beats.start()

    def _publish(self) -> None:
        self._beat += 1
        self.coordination.key_value_set(
            f"{HEARTBEAT_PREFIX}{self.process_id}",
            f"{self._beat}:{self.launched}",
            allow_overwrite=True,
        )

    def _heartbeat_loop(self) -> None:
        while not self._stop.wait(self.heartbeat_interval):
            try:
                self._publish()
            except Exception as exc:  # the coordinator is gone: waits report it
                self._heartbeat_error = exc
                return

    def stop_heartbeats(self) -> None:
        self._stop.set()
        if self._beats is not None:
            self._beats.join(timeout=max(self.heartbeat_interval, 1.0) + 1.0)

    # -- what the other processes are doing -----------------------------------------------------

    def peers(self) -> dict[int, tuple[int, float]]:
        """For each other process: (cross-process programs it has started, seconds since its
        heartbeat last moved), read from the coordination service now."""
        entries = self.coordination.key_value_dir_get(HEARTBEAT_PREFIX)
        now = time.monotonic()
        launched: dict[int, int] = {}
        for key, value in entries:
            process = int(key.rsplit("/", 1)[-1])
            if process == self.process_id or process not in self._seen:
                continue
            previous, since = self._seen[process]
            if value != previous:
                self._seen[process] = (value, now)
            launched[process] = int(value.split(":")[1])
        return {p: (launched.get(p, 0), now - self._seen[p][1]) for p in self._seen}

    def _check_peers(self, what: str) -> None:
        try:
            peers = self.peers()
        except Exception as exc:
            raise self._fail(
                errors.ProcessFailedError(
                    f"{what}: the coordination service of process 0 at "
                    f"{self.coordinator_address} cannot be reached ({_first_line(exc)}); "
                    f"process 0 has probably died"
                )
            ) from None
        silent = sorted(p for p, (_, age) in peers.items() if age > self.heartbeat_timeout)
        if silent:
            ages = ", ".join(f"process {p} for {peers[p][1]:.0f} s" for p in silent)
            raise self._fail(
                errors.ProcessFailedError(
                    f"{what}: {_processes(silent)} stopped sending heartbeats ({ages}; "
                    f"heartbeat_timeout_seconds={self.heartbeat_timeout:g}): it died or is "
                    f"frozen; this process (process {self.process_id} of "
                    f"{self.num_processes}) cannot go on without it"
                )
            )

    def _behind(self) -> list[int]:
        try:
            peers = self.peers()
        except Exception:
            return []
        return sorted(p for p, (count, _) in peers.items() if count < self.launched)

    def _fail(self, error: errors.DistributedError) -> errors.DistributedError:
        self.failure = error
        return error

    # -- waits ------------------------------------------------------------------------------------

    def wait(
        self, block: Callable[[], Any], what: str, ready: Callable[[], bool] | None = None
    ) -> Any:
        """``block()`` (a call that may wait on other processes), given up with an exception
        when a peer dies or the collective timeout passes; returns what ``block`` returns.

        ``ready``, when given, tells without waiting whether ``block`` would return at once.
        It is polled on this thread for up to ``POLL_SECONDS`` first, since handing the call
        to the waiter thread costs about as much as a small collective's own latency; but a
        kind of wait that recently took well beyond that (a training step's result) is
        handed off at once: polling would only wake this thread for nothing, on cores the
        computation itself needs."""
        if self.failure is not None:
            raise type(self.failure)(
                f"{what}: the job already lost a process earlier ({self.failure})"
            )
        if ready is not None:
            if ready():
                if what in self._wait_seconds:
                    self._took(what, 0.0)
                return self._run_here(block, what)
            start = time.perf_counter()
            typical = self._wait_seconds.get(what, 0.0)
            if typical < LONG_WAIT_POLLS * POLL_SECONDS and _poll(ready, POLL_SECONDS):
                self._took(what, time.perf_counter() - start)
                return self._run_here(block, what)
            try:
                return self._handed_off(block, what)
            finally:
                self._took(what, time.perf_counter() - start)
        return self._handed_off(block, what)

    def _run_here(self, block: Callable[[], Any], what: str) -> Any:
        try:
            return block()
        except Exception as exc:
            raise self._explained(exc, what) from None

    def _took(self, what: str, seconds: float) -> None:
        """Remember how long a wait of kind ``what`` took (a moving average, so that one
        slow wait does not decide for the next ones)."""
        known = self._wait_seconds
        if what not in known and len(known) >= _WAIT_KINDS:
            known.clear()  # kinds come from array shapes and program names: keep few
        previous = known.get(what)
        known[what] = seconds if previous is None else 0.75 * previous + 0.25 * seconds

    def _handed_off(self, block: Callable[[], Any], what: str) -> Any:
        """``block()`` on the waiter thread, this thread watching the deadlines."""
        waiter = self._waiter
        if waiter is None or waiter.stuck:
            waiter = self._waiter = _Waiter()
        done = waiter.submit(block)
        timeout = float(config.read("collective_timeout_seconds") or 0)
        start = time.monotonic()
        check_every = min(1.0, self.heartbeat_interval * 2)
        while not done.event.wait(check_every):
            self._check_peers(what)
            waited = time.monotonic() - start
            if timeout and waited > timeout:
                waiter.stuck = True
                behind = self._behind()
                who = (
                    f"{_processes(behind)} did not join (it has started fewer cross-process "
                    f"computations than this process's {self.launched})"
                    if behind
                    else "every process is alive; one of them is computing something else"
                )
                raise self._fail(
                    errors.CollectiveTimeoutError(
                        f"{what}: waited {waited:.0f} s for the other processes "
                        f"(collective_timeout_seconds={timeout:g}): {who}"
                    )
                )
        if done.error is not None:
            raise self._explained(done.error, what) from None
        return done.result

    def _explained(self, error: BaseException, what: str) -> BaseException:
        """``error`` from a wait; a transport's report of a vanished peer becomes the
        ProcessFailedError that names it."""
        if _lost_connection(error):
            return self._fail(self._lost_peer(what, error))
        return error

    def _lost_peer(self, what: str, error: BaseException) -> errors.ProcessFailedError:
        """The error for a collective whose connection to a peer broke: the peer is named
        once its heartbeats are seen to have stopped (at most ``heartbeat_timeout`` later)."""
        deadline = time.monotonic() + self.heartbeat_timeout + 2 * self.heartbeat_interval
        while time.monotonic() < deadline:
            try:
                self._check_peers(what)
            except errors.ProcessFailedError as named:
                return named
            time.sleep(min(0.25, self.heartbeat_interval))
        return errors.ProcessFailedError(
            f"{what}: the connection to another process broke ({_first_line(error)}), though "
            f"every process still sends heartbeats"
        )

    def barrier(self, name: str, timeout: float | None = None) -> None:
        """Wait until every process reaches the barrier ``name`` (deadline: ``timeout`` or the
        collective timeout)."""
        if timeout is None:
            timeout = float(config.read("collective_timeout_seconds") or 0) or 86400.0
        try:
            self.coordination.wait_at_barrier(name, max(int(timeout * 1000), 1))
        except Exception as exc:
            self._check_peers(f"barrier {name!r}")
            raise self._fail(
                errors.CollectiveTimeoutError(
                    f"barrier {name!r}: not every process arrived within {timeout:g} s "
                    f"({_first_line(exc)})"
                )
            ) from None


# How long a wait polls before handing off to the waiter thread, and how often.
POLL_SECONDS = 0.002
POLL_INTERVAL = 50e-6
# A kind of wait whose recent ones took longer than this many poll windows on average is
# handed off without polling. Generous: a small collective's waits swing from under one
# window to three on a busy machine, and those still poll as they always did.
LONG_WAIT_POLLS = 4
# How many kinds of waits a job remembers the durations of.
_WAIT_KINDS = 256


def _poll(ready: Callable[[], bool], seconds: float) -> bool:
    end = time.perf_counter() + seconds
    while True:
        if ready():
            return True
        if time.perf_counter() >= end:
            return False
        time.sleep(POLL_INTERVAL)


class _Done:
    __slots__ = ("event", "result", "error")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None


class _Waiter:
    """A daemon thread that runs blocking calls for ``Job.wait``. One that had to be given up
    (its call never returned) is marked ``stuck`` and replaced; being a daemon, it does not
    keep the interpreter from exiting."""

    def __init__(self) -> None:
        self.stuck = False
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._run, name="ember-wait", daemon=True).start()

    def submit(self, block: Callable[[], Any]) -> _Done:
        done = _Done()
        self._jobs.put((block, done))
        return done

    def _run(self) -> None:
        while True:
            block, done = self._jobs.get()
            try:
                done.result = block()
            except BaseException as exc:  # handed to the waiting thread, which raises it
                done.error = exc
            done.event.set()


# How transports report a peer that went away in the middle of a collective.
_CONNECTION_LOST = ("Connection closed by peer", "Connection reset by peer", "Broken pipe")


def _lost_connection(error: BaseException) -> bool:
    return any(sign in str(error) for sign in _CONNECTION_LOST)


def _processes(ids: Sequence[int]) -> str:
    if len(ids) == 1:
        return f"process {ids[0]}"
    return "processes " + ", ".join(str(i) for i in ids)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


# --------------------------------------------------------------------------------------------
# The current job

_job: Job | None = None


def current_job() -> Job | None:
    """The multi-process job this process belongs to (None when it runs alone)."""
    return _job


def this_process() -> int:
    """This process's index in its job (0 when it runs alone)."""
    job = _job
    return 0 if job is None else job.process_id


def addressable(devices: Sequence[Any]) -> list[Any]:
    """The devices among ``devices`` that this process owns, in their order."""
    here = this_process()
    return [d for d in devices if d.process_index == here]


def set_current_job(job: Job | None) -> None:
    global _job
    _job = job


def wait_ready(block: Callable[[], Any], what: str, ready: Callable[[], bool] | None = None) -> Any:
    """``block()``, with the job's deadlines when this process is part of one (``ready``: see
    ``Job.wait``)."""
    job = _job
    if job is None:
        return block()
    return job.wait(block, what, ready)
