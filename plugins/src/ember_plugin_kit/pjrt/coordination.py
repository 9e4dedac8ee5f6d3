"""XLA's distributed runtime for ember's multi-process jobs: the coordination service (hosted
by process 0), its clients (key-value store, barriers), and the hook that hands them to
``ember.distributed.initialize``.

Every PJRT backend plugin of a multi-process job shares one coordination client: the CPU
plugin gives it to XLA's CPU client (with gloo collectives over TCP); a GPU plugin gives it to
its PJRT client (``make_plugin_client(..., job=...)``: NCCL ids travel through its key-value
store). ``ember_distributed_runtime`` returns ``XlaCoordination()``; a plugin with its own
coordination engine returns an object with the same two methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember_plugin_kit.pjrt import _jaxlib


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
    ) -> Any:
        """The service, hosted in this process until its ``shutdown()``."""
        return _jaxlib.start_coordination_service(
            bind_address, num_processes, heartbeat_timeout, shutdown_timeout
        )

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
        raw = _jaxlib.coordination_client(
            address, process_id, init_timeout, heartbeat_timeout, shutdown_timeout
        )
        return CoordinationClient(raw)
