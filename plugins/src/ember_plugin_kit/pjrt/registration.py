"""The registration desk of a job's coordination service: each process's claim to its
``process_id`` is checked before it registers with XLA's service.

XLA's service refuses a process_id outside the job or one already taken by ending the
offending process from a C++ thread, with no exception for Python to report. So the
coordinator process (``coordinator``) also listens one port above the service, and every
process first states its claim there: ``{"process_id", "num_processes", "host", "pid"}`` as
one JSON line, answered by one JSON line, ``{"ok": true}`` or ``{"error": "..."}``. The
connection stays open while the process lives: when it closes, the id is free again (a
restarted process may take it).

The desk listens before the service starts but answers only once it is up (``open()``): a
claim that arrives early waits in the listen queue, under its own deadline, and its process
then reaches a service that is ready (XLA's client, finding nobody there, would back off for
about a second before trying again).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from typing import Any

# The desk listens at the coordinator's port plus this.
PORT_OFFSET = 1

# The longest a claim's line may take to arrive once connected.
LINE_TIMEOUT_S = 30.0


def desk_address(coordinator_address: str) -> tuple[str, int]:
    host, _, port = coordinator_address.rpartition(":")
    return host.strip("[]"), int(port) + PORT_OFFSET


class Desk:
    """The server side, in the coordinator process: a thread per connected process. It
    listens from the start and answers claims once ``open()``."""

    def __init__(self, bind_address: str, num_processes: int):
        host, port = desk_address(bind_address)
        try:
            self._listener = _listen(host, port)
        except OSError:
            if host != "::":
                raise
            self._listener = _listen("0.0.0.0", port)  # a host without IPv6
        self._count = num_processes
        self._claims: dict[int, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def open(self) -> None:
        """Start answering claims (those waiting in the listen queue first)."""
        threading.Thread(target=self._accept, name="ember-desk", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        claimed = None
        with connection:
            try:
                connection.settimeout(LINE_TIMEOUT_S)
                claim = json.loads(connection.makefile("r").readline())
                error, claimed = self._check(claim)
                answer = {"error": error} if error else {"ok": True}
                connection.sendall((json.dumps(answer) + "\n").encode())
                if claimed is None:
                    return
                connection.settimeout(None)
                while connection.recv(1024):  # held until the process goes away
                    pass
            except (OSError, ValueError):
                pass
            finally:
                if claimed is not None:
                    with self._lock:
                        self._claims.pop(claimed, None)

    def _check(self, claim: dict[str, Any]) -> tuple[str | None, int | None]:
        me, count = claim.get("process_id"), claim.get("num_processes")
        if count != self._count:
            return (
                f"process {me} says num_processes={count}, but the coordinator (process 0) "
                f"was started with num_processes={self._count}",
                None,
            )
        if not isinstance(me, int) or not 0 <= me < self._count:
            return f"process_id {me!r} is outside the job's range [0, {self._count})", None
        with self._lock:
            holder = self._claims.get(me)
            if holder is not None:
                return (
                    f"process_id {me} is already taken by the process {holder['pid']} on "
                    f"{holder['host']}; give each process a distinct process_id",
                    None,
                )
            self._claims[me] = claim
        return None, me

    def close(self) -> None:
        self._listener.close()


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(64)
    return listener


def claim(
    coordinator_address: str, process_id: int, num_processes: int, timeout: float
) -> socket.socket:
    """Claim ``process_id`` at the job's desk, retrying until it answers or ``timeout``
    passes. Returns the connection, to be kept open while this process is in the job.
    Raises ``ValueError`` when the claim is refused, ``TimeoutError`` when nobody answers."""
    host, port = desk_address(coordinator_address)
    deadline = time.monotonic() + timeout
    pause, last = RETRY_FIRST_S, "no attempt"
    line = json.dumps(
        {
            "process_id": process_id,
            "num_processes": num_processes,
            "host": socket.gethostname(),
            "pid": os.getpid(),
        }
    )
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(last)
        try:
            answer, connection = _ask(host, port, line, remaining)
        except (OSError, ValueError) as exc:
            # Nobody listens yet (process 0 has not started the desk), or the desk went away
            # before answering: try again until the deadline.
            last = f"{type(exc).__name__}: {exc}"
            time.sleep(min(pause, max(deadline - time.monotonic(), 0)))
            pause = min(pause * 2, RETRY_MAX_S)
            continue
        if "error" in answer or not answer.get("ok"):
            connection.close()
            raise ValueError(answer.get("error", "the coordinator refused the claim"))
        connection.settimeout(None)
        return connection


# Pauses between attempts to reach a desk that is not listening yet: short, since a refused
# connection costs next to nothing, and process 0 is often only a few milliseconds behind.
RETRY_FIRST_S = 0.005
RETRY_MAX_S = 0.1


def _ask(host: str, port: int, line: str, seconds: float) -> tuple[dict, socket.socket]:
    """Send the claim ``line``; the desk's answer and the open connection. The answer may
    take until the service is up: it is waited for, up to ``seconds``."""
    deadline = time.monotonic() + seconds
    connection = socket.create_connection((host, port), timeout=min(seconds, 2.0))
    try:
        connection.settimeout(max(deadline - time.monotonic(), 0.01))
        connection.sendall((line + "\n").encode())
        text = connection.makefile("r").readline()
        if not text:
            raise ConnectionResetError("the desk closed the connection without answering")
        return json.loads(text), connection
    except BaseException:
        connection.close()
        raise
