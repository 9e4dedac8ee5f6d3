"""The coordination service's process and its registration desk: what every process of a job
waits on while it starts (sockets on 127.0.0.1 only; every wait bounded)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time

import pytest

from ember_plugin_kit.pjrt import registration
from tests.core.util import run_python


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _address() -> str:
    # The desk listens one port above the service's: pick a free one for the desk.
    return f"127.0.0.1:{_free_port() - registration.PORT_OFFSET}"


def test_a_claim_made_before_the_desk_opens_waits_for_its_answer():
    address = _address()
    desk = registration.Desk(address, 2)
    answered: dict[str, object] = {}

    def claim() -> None:
        start = time.monotonic()
        answered["connection"] = registration.claim(address, 1, 2, timeout=20)
        answered["seconds"] = time.monotonic() - start

    claimer = threading.Thread(target=claim, daemon=True)
    claimer.start()
    time.sleep(0.3)  # the claim sits in the listen queue meanwhile
    assert claimer.is_alive() and not answered
    desk.open()
    claimer.join(20)
    try:
        assert "connection" in answered
        assert 0.25 < answered["seconds"] < 20
        # The id is now taken: a second claim to it is refused with the holder named.
        with pytest.raises(ValueError, match="process_id 1 is already taken"):
            registration.claim(address, 1, 2, timeout=5)
    finally:
        answered["connection"].close()
        desk.close()


def test_a_claim_reaches_a_desk_that_starts_listening_late():
    address = _address()
    desks: list[registration.Desk] = []

    def start_late() -> None:
        time.sleep(0.2)
        desks.append(registration.Desk(address, 1))
        desks[0].open()

    threading.Thread(target=start_late, daemon=True).start()
    start = time.monotonic()
    connection = registration.claim(address, 0, 1, timeout=20)
    took = time.monotonic() - start
    connection.close()
    desks[0].close()
    # Retries are short once nobody listens: well under the deadline, soon after the desk.
    assert 0.15 < took < 5


def test_a_claim_nobody_answers_times_out_at_its_deadline():
    address = _address()
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="ConnectionRefusedError"):
        registration.claim(address, 0, 2, timeout=0.5)
    assert 0.45 < time.monotonic() - start < 3


def test_a_desk_that_closes_without_answering_is_retried_until_the_deadline():
    address = _address()
    host, port = registration.desk_address(address)
    with socket.create_server((host, port)) as listener:
        threading.Timer(0.2, listener.close).start()  # closes with the claim still queued
        start = time.monotonic()
        with pytest.raises(TimeoutError):
            registration.claim(address, 0, 2, timeout=1.0)
        assert 0.95 < time.monotonic() - start < 4


def test_the_service_process_answers_claims_without_importing_ember():
    pytest.importorskip("jaxlib")
    done = run_python(
        "import sys\n"
        "import ember_plugin_kit.pjrt.coordinator, ember_plugin_kit.pjrt._jaxlib\n"
        "print(sorted(m for m in sys.modules if m == 'ember' or m.startswith('ember.')))\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"

    address = _address()
    command = [sys.executable, "-m", "ember_plugin_kit.pjrt.coordinator", "--bind", address]
    command += ["--num-processes", "1", "--heartbeat-timeout", "10", "--shutdown-timeout", "10"]
    command += ["--linger", "0"]
    service = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        # Claimed right away: the desk answers once the service is up, which it then is.
        connection = registration.claim(address, 0, 1, timeout=60)
        connection.close()
        assert service.stdout.readline().strip() == "ready"
        service.stdin.write("shutdown\n")
        service.stdin.close()
        assert service.wait(timeout=60) == 0
    finally:
        if service.poll() is None:
            service.kill()
            service.wait(timeout=10)


def test_claims_are_json_lines():
    # The wire format other coordinators must speak (documented in registration's docstring).
    address = _address()
    desk = registration.Desk(address, 2)
    desk.open()
    try:
        with socket.create_connection(registration.desk_address(address), timeout=10) as s:
            s.sendall(b'{"process_id": 5, "num_processes": 2, "host": "h", "pid": 1}\n')
            answer = json.loads(s.makefile("r").readline())
        assert answer == {"error": "process_id 5 is outside the job's range [0, 2)"}
    finally:
        desk.close()
