"""``ember.distributed.initialize``, ``shutdown`` and ``is_initialized``: joining a
multi-process job.

Process 0 hosts XLA's coordination service; every process connects to it, then the backends
created afterwards see the job's global devices (the CPU backend exchanges collectives with
the other processes through gloo). The job's shape comes from the arguments, else from the
first cluster environment detected (``EMBER_*`` variables, SLURM, Open MPI, ... and those of
plugins: ``ember._src.distributed.clusters``).

Every step has a deadline: reaching the coordinator and every process connecting
(``initialization_timeout``), shutting down (``shutdown_timeout_seconds``), and, afterwards,
every wait on the other processes (``ember._src.runtime.multiprocess``).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from ember._src import errors
from ember._src.distributed import clusters
from ember._src.plugin import manager
from ember._src.runtime import multiprocess

_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    local_device_ids: int | Sequence[int] | None = None,
    cluster_detection_method: str | None = None,
    initialization_timeout: int = 300,
    heartbeat_timeout_seconds: int = 100,
    shutdown_timeout_seconds: int = 300,
    coordinator_bind_address: str | None = None,
) -> None:
    """Join a multi-process job (JAX's ``jax.distributed.initialize``).

    Call it once, at the top of the program, before any computation: backends fix their
    devices when they start. Arguments left as None come from the cluster environment
    (``EMBER_COORDINATOR_ADDRESS``, ``EMBER_NUM_PROCESSES``, ``EMBER_PROCESS_ID``,
    ``EMBER_LOCAL_DEVICE_IDS``, or SLURM, Open MPI, Kubernetes, ...;
    ``cluster_detection_method`` names one, e.g. ``"mpi4py"``).
    """
    job = multiprocess.current_job()
    if job is not None:
        raise errors.DistributedError(
            f"ember.distributed.initialize() was already called: this is process "
            f"{job.process_id} of {job.num_processes} (coordinator {job.coordinator_address}); "
            f"call it once, at the top of the program{errors.where()}"
        )
    started = manager.manager().started_platforms()
    if started:
        raise errors.DistributedError(
            f"ember.distributed.initialize() must come before the first computation: the "
            f"{', '.join(repr(p) for p in started)} backend already started with this "
            f"process's devices only. Call it at the top of the program, before any ember "
            f"array is made{errors.where()}"
        )
    shape = _job_shape(
        coordinator_address, num_processes, process_id, local_device_ids, cluster_detection_method
    )
    runtime = manager.manager().distributed_runtime()
    if runtime is None:
        raise errors.DistributedError(
            "no installed plugin provides a distributed runtime for multi-process jobs: "
            "`pip install ember-plugin-cpu` gives XLA's (gloo collectives on CPU)"
            f"{errors.where()}"
        )
    address, count, me = shape.coordinator_address, shape.num_processes, shape.process_id
    service = None
    if me == 0:
        bind = coordinator_bind_address or os.environ.get("EMBER_COORDINATOR_BIND_ADDRESS")
        bind = bind or _default_bind_address(address)
        try:
            service = runtime.start_service(
                bind,
                count,
                heartbeat_timeout=heartbeat_timeout_seconds,
                shutdown_timeout=shutdown_timeout_seconds,
            )
        except Exception as exc:
            raise errors.DistributedError(
                f"process 0 could not start the coordination service at {bind} (it also needs "
                f"the next port): {exc}{errors.where()}"
            ) from None
    deadline = time.monotonic() + initialization_timeout
    registration = None
    try:
        registration = _claim(runtime, shape, deadline, initialization_timeout)
        # XLA's own deadline is set beyond ember's: when it expires XLA ends the process
        # from a C++ thread, while ember's raises an exception first.
        client = runtime.client(
            address,
            me,
            init_timeout=initialization_timeout + 60,
            heartbeat_timeout=heartbeat_timeout_seconds,
            shutdown_timeout=shutdown_timeout_seconds,
        )
        _connect(client, shape, deadline, initialization_timeout)
    except BaseException:
        _abandon(service, registration)
        raise
    job = multiprocess.Job(
        process_id=me,
        num_processes=count,
        coordinator_address=address,
        coordination=client,
        heartbeat_timeout=heartbeat_timeout_seconds,
        local_device_ids=shape.local_device_ids,
        service=service,
        cluster=shape.name,
        initialization_timeout=initialization_timeout,
        shutdown_timeout=shutdown_timeout_seconds,
        host_address="127.0.0.1" if _host(address) in _LOOPBACK else None,
        registration=registration,
    )
    multiprocess.set_current_job(job)
    job.start_heartbeats()
    atexit.register(_at_exit)


def is_initialized() -> bool:
    """Whether this process has joined a multi-process job."""
    return multiprocess.current_job() is not None


def shutdown() -> None:
    """Leave the job: waits (up to ``shutdown_timeout_seconds``) until every process leaves,
    then process 0 stops the coordination service. Called at exit when not called before.

    A process that gave up on a lost peer skips both (the barrier would wait on the lost
    process, and stopping the service would end the processes still connected to it): it
    leaves the job at exit, with status 1."""
    job = multiprocess.current_job()
    if job is None:
        return
    multiprocess.set_current_job(None)
    job.stop_heartbeats()
    if job.failure is not None:
        _lost.append(job)
        return
    try:
        _bounded(job.coordination.shutdown, job.shutdown_timeout + 10, "shutting down")
    finally:
        if job.registration is not None:
            job.registration.close()
        if job.service is not None:
            job.service.shutdown()


# Jobs left after losing a process: their clients and service stay alive until the process
# ends, since XLA ends a process from a C++ thread when its client loses the service.
_lost: list[multiprocess.Job] = []


def _at_exit() -> None:
    shutdown()
    if _lost:
        # Interpreter teardown would destroy the service and clients, and XLA would then end
        # this process (and those still connected) with a fatal log: leave now instead.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(1)


# --------------------------------------------------------------------------------------------
# The job's shape


def _job_shape(
    address: str | None,
    count: int | None,
    me: int | None,
    local_device_ids: Any,
    method: str | None,
) -> clusters.DetectedCluster:
    """The arguments, completed from the detected cluster environment, checked."""
    name = "arguments"
    if address is None or count is None or me is None or method is not None:
        detected = clusters.detect(method, clusters.all_environments())
        if detected is not None:
            name = detected.name
            address = address if address is not None else detected.coordinator_address
            count = count if count is not None else detected.num_processes
            me = me if me is not None else detected.process_id
            if local_device_ids is None:
                local_device_ids = detected.local_device_ids
    missing = [
        what
        for what, value in (
            ("coordinator_address", address),
            ("num_processes", count),
            ("process_id", me),
        )
        if value is None
    ]
    if missing:
        raise ValueError(
            f"ember.distributed.initialize: {', '.join(missing)} not given and no cluster "
            f"environment detected; pass them, or set EMBER_COORDINATOR_ADDRESS, "
            f"EMBER_NUM_PROCESSES and EMBER_PROCESS_ID (`python -m ember launch` does)"
            f"{errors.where()}"
        )
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError(
            f"ember.distributed.initialize: num_processes must be a positive int, not "
            f"{count!r}{errors.where()}"
        )
    if not isinstance(me, int) or isinstance(me, bool) or not 0 <= me < count:
        raise ValueError(
            f"ember.distributed.initialize: process_id must be an int in [0, {count}) for a "
            f"job of {count} processes, not {me!r}{errors.where()}"
        )
    _split_address(address)
    if local_device_ids is None:  # honoured whichever way the job's shape was found (as JAX)
        local_device_ids = clusters.local_device_ids_from_environment()
    if isinstance(local_device_ids, int):
        local_device_ids = [local_device_ids]
    if local_device_ids is not None:
        local_device_ids = list(local_device_ids)
        if not all(isinstance(i, int) and i >= 0 for i in local_device_ids):
            raise ValueError(
                f"ember.distributed.initialize: local_device_ids must be non-negative ints, "
                f"not {local_device_ids!r}{errors.where()}"
            )
    return clusters.DetectedCluster(name, address, count, me, local_device_ids)


def _split_address(address: Any) -> tuple[str, int]:
    """``(host, port)`` of ``address`` (brackets of an IPv6 host removed)."""
    if not isinstance(address, str):
        raise ValueError(
            f"ember.distributed.initialize: coordinator_address must be a 'host:port' string, "
            f"not {address!r}{errors.where()}"
        )
    try:
        host, port = clusters.split_address(address)
    except ValueError as err:
        raise ValueError(f"ember.distributed.initialize: {err}{errors.where()}") from None
    return host.strip("[]"), port


def _host(address: str) -> str:
    return _split_address(address)[0]


def _default_bind_address(address: str) -> str:
    """Where process 0's service listens: the coordinator's own address when that is a
    loopback one (nothing else can reach it anyway), else every interface (as JAX)."""
    host, port = _split_address(address)
    return address if host in _LOOPBACK else f"[::]:{port}"


# --------------------------------------------------------------------------------------------
# Connecting, with deadlines


def _claim(runtime: Any, shape: clusters.DetectedCluster, deadline: float, timeout: float):
    """This process's place in the job, checked by the coordinator before XLA's service sees
    it: XLA's client ends the process, without an exception, when the coordinator cannot be
    reached in time or refuses its process_id."""
    address, me = shape.coordinator_address, shape.process_id
    try:
        return runtime.claim(
            address, me, shape.num_processes, timeout=max(deadline - time.monotonic(), 0.1)
        )
    except TimeoutError as exc:
        raise errors.DistributedError(
            f"process {me} could not reach the coordinator at {address} within {timeout:g} s "
            f"(initialization_timeout; last error: {exc}); is process 0 running, and does that "
            f"address reach it?{errors.where()}"
        ) from None
    except ValueError as exc:
        raise errors.DistributedError(
            f"process {me} cannot join the job at {address}: {exc}{errors.where()}"
        ) from None


def _abandon(service: Any, registration: Any) -> None:
    """After a failed initialize: free the claim, and tell the service to stop without
    waiting for it (it waits on the processes that registered)."""
    if registration is not None:
        registration.close()
    if service is not None:
        service.shutdown(wait=False)


def _connect(client: Any, shape: clusters.DetectedCluster, deadline: float, timeout: float):
    """``client.connect()``, which returns once all processes have connected, bounded by
    ember's deadline (on a helper thread: the call itself cannot be interrupted)."""
    try:
        _bounded(client.connect, max(deadline - time.monotonic(), 0.1), "connecting")
    except TimeoutError:
        raise errors.DistributedError(
            f"process {shape.process_id}: not all {shape.num_processes} processes connected to "
            f"the coordinator at {shape.coordinator_address} within {timeout:g} s "
            f"(initialization_timeout); check that each of them started, with a distinct "
            f"process_id in [0, {shape.num_processes}), and that it reaches that address"
            f"{errors.where()}"
        ) from None
    except Exception as exc:
        raise errors.DistributedError(
            f"process {shape.process_id}: connecting to the coordinator at "
            f"{shape.coordinator_address} failed: {exc}{errors.where()}"
        ) from None


def _bounded(call: Any, seconds: float, what: str) -> Any:
    """``call()`` on a daemon thread; TimeoutError when it has not returned in ``seconds``."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = call()
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=run, name=f"ember-{what}", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise TimeoutError(f"{what} took longer than {seconds:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("result")
