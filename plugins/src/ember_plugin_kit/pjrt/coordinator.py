"""The coordination service of a multi-process job, in a process of its own.

``python -m ember_plugin_kit.pjrt.coordinator --bind HOST:PORT --num-processes N ...`` starts
XLA's coordination service and its registration desk (``registration``), prints ``ready`` and
serves until told ``shutdown`` on its standard input. Process 0 of a job starts it
(``XlaCoordination.start_service``) rather than hosting the service itself: every client of
the service is ended by XLA, from a C++ thread, as soon as the service goes away, so a service
inside process 0 would take the whole job down with process 0 before anyone could raise an
exception. Here, when process 0 dies (its end of the pipe closes without ``shutdown``), the
service outlives it for ``--linger`` seconds: long enough for the other processes to notice
that process 0's heartbeats stopped, raise, and leave.

Every process of the job waits for this one to start, so it imports as little as it can: not
ember, and jaxlib (~0.1-0.2 s, most of its start-up) only once its registration desk listens,
so that claims arriving meanwhile wait in the desk's queue rather than being refused.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time

from ember_plugin_kit.pjrt import registration

READY = "ready"
SHUTDOWN = "shutdown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ember_plugin_kit.pjrt.coordinator")
    parser.add_argument("--bind", required=True)
    parser.add_argument("--num-processes", type=int, required=True)
    parser.add_argument("--heartbeat-timeout", type=float, required=True)
    parser.add_argument("--shutdown-timeout", type=float, required=True)
    parser.add_argument("--linger", type=float, required=True)
    args = parser.parse_args(argv)
    try:
        desk = registration.Desk(args.bind, args.num_processes)
        jaxlib_bridge = importlib.import_module("ember_plugin_kit.pjrt._jaxlib")
        service = jaxlib_bridge.start_coordination_service(
            args.bind, args.num_processes, args.heartbeat_timeout, args.shutdown_timeout
        )
    except Exception as exc:
        print(f"failed: {type(exc).__name__}: {exc}", flush=True)
        return 1
    desk.open()
    print(READY, flush=True)
    told = sys.stdin.readline().strip()  # blocks until process 0 speaks or its pipe closes
    if told != SHUTDOWN:
        time.sleep(args.linger)  # process 0 is gone: let the others find out and leave
    desk.close()
    service.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
