"""XLA's distributed runtime for ember's multi-process jobs: the coordination service (which
process 0 starts in a child process of its own, so that it survives process 0's death long
enough for the others to raise), its clients (key-value store, barriers), and the object the
``ember_distributed_runtime`` hook hands to ``ember.distributed.initialize``.

Every PJRT backend plugin of a multi-process job shares one coordination client: the CPU
plugin gives it to XLA's CPU client (with gloo collectives over TCP); a GPU plugin gives it to
its PJRT client (``make_plugin_client(..., job=...)``: NCCL ids travel through its key-value
store). ``ember_distributed_runtime`` returns ``XlaCoordination()``; a plugin with its own
coordination engine returns an object with the same two methods.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Any

from ember_plugin_kit.pjrt import coordinator, registration

# How long the service waits for its process to start and say it is ready.
START_TIMEOUT_S = 60.0


class CoordinationClient:
    """One process's connection to the coordination service (timeouts in milliseconds).

    ``raw`` is jaxlib's client, which PJRT clients of the job are created with.
    """

    def __init__(self, raw: Any):
        self.raw = raw

    def connect(self) -> None:
        """Register with the service; returns once every process of the job has."""
        self.raw.connect()

    def key_value_set(self, key: str, value: str, allow_overwrite: bool = False) -> None:
        self.raw.key_value_set(key, value, allow_overwrite=allow_overwrite)

    def blocking_key_value_get(self, key: str, timeout_ms: int) -> str:
        return self.raw.blocking_key_value_get(key, int(timeout_ms))

    def key_value_dir_get(self, prefix: str) -> list[tuple[str, str]]:
        return list(self.raw.key_value_dir_get(prefix))

    def wait_at_barrier(
        self, name: str, timeout_ms: int, process_ids: Sequence[int] | None = None
    ) -> None:
        self.raw.wait_at_barrier(name, int(timeout_ms), process_ids)

    def shutdown(self) -> None:
        self.raw.shutdown()


class XlaCoordination:
    """Starts XLA's coordination service and connects clients to it (jaxlib's)."""

    name = "xla"

    def start_service(
        self,
        bind_address: str,
        num_processes: int,
        *,
        heartbeat_timeout: float,
        shutdown_timeout: float,
    ) -> ServiceProcess:
        """The service, in a process of its own (``coordinator``) until ``shutdown()``: it
        outlives this process if this one dies, so the others can raise instead of being
        ended with it."""
        return ServiceProcess(bind_address, num_processes, heartbeat_timeout, shutdown_timeout)

    def claim(self, address: str, process_id: int, num_processes: int, *, timeout: float) -> Any:
        """Claim ``process_id`` at the registration desk of the service at ``address``
        before registering with the service (which ends the process, instead of refusing,
        an id that is taken or out of range). Returns a handle to ``close()`` on leaving;
        ``ValueError``: refused, with the reason; ``TimeoutError``: no answer in time."""
        # The client made next needs jaxlib: loaded now, while process 0's service may still
        # be starting, rather than after the claim is answered.
        _jaxlib()
        return registration.claim(address, process_id, num_processes, timeout)

    def client(
        self,
        address: str,
        process_id: int,
        *,
        init_timeout: float,
        heartbeat_timeout: float,
        shutdown_timeout: float,
    ) -> CoordinationClient:
        """A client of the service at ``address``, not connected yet: ``connect()`` blocks
        until every process of the job has connected (the caller bounds it)."""
        raw = _jaxlib().coordination_client(
            address, process_id, init_timeout, heartbeat_timeout, shutdown_timeout
        )
        return CoordinationClient(raw)


def _jaxlib() -> Any:
    """The kit's jaxlib bridge. Not imported with this module: a process loads it (~35 ms)
    while the service's process starts, rather than before (process 0 starts it)."""
    return importlib.import_module("ember_plugin_kit.pjrt._jaxlib")


class ServiceProcess:
    """XLA's coordination service running in a child process (see ``coordinator``)."""

    def __init__(
        self, bind: str, num_processes: int, heartbeat_timeout: float, shutdown_timeout: float
    ):
        self._timeout = shutdown_timeout
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                coordinator.__name__,
                "--bind",
                bind,
                "--num-processes",
                str(num_processes),
                "--heartbeat-timeout",
                str(heartbeat_timeout),
                "--shutdown-timeout",
                str(shutdown_timeout),
                # Outlive a dead process 0 until the others have noticed and left.
                "--linger",
                str(2 * heartbeat_timeout + 10),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            # Not this process's stderr: whoever reads this process's output to its end would
            # otherwise also wait for the service, which may outlive it.
            stderr=subprocess.DEVNULL,
            text=True,
        )
        reader = _LineReader(self._process)
        try:
            _jaxlib()  # this process's own client needs it: loaded while the service starts
        except BaseException:
            self._process.kill()
            self._process.wait()
            raise
        line = reader.line(START_TIMEOUT_S)
        if line != coordinator.READY:
            self._process.kill()
            self._process.wait()
            raise RuntimeError(
                f"the coordination service at {bind} did not start: {line or 'no answer'}"
            )

    def shutdown(self, wait: bool = True) -> None:
        """Stop the service (``wait=False``: tell it to, without waiting for it to finish)."""
        if self._process.poll() is not None:
            return
        try:
            self._process.stdin.write(coordinator.SHUTDOWN + "\n")
            self._process.stdin.close()
            if wait:
                self._process.wait(timeout=self._timeout + 10)
        except (OSError, subprocess.TimeoutExpired):
            self._process.kill()
            self._process.wait()


class _LineReader:
    """Reads a child's first line of output on a thread, from the moment it is made."""

    def __init__(self, process: subprocess.Popen):
        self._found: list[str] = []
        self._thread = threading.Thread(
            target=lambda: self._found.append(process.stdout.readline().strip()), daemon=True
        )
        self._thread.start()

    def line(self, timeout: float) -> str:
        """The line, or '' when none came within ``timeout`` seconds from now."""
        self._thread.join(timeout)
        return self._found[0] if self._found else ""
