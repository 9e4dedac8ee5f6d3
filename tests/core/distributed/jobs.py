"""Starting small multi-process jobs on 127.0.0.1 for the distributed suites.

``run_job`` starts the processes of one job (each told its rank through the ``EMBER_*``
variables ``initialize()`` reads), waits for all of them under one deadline, kills whatever
is left, and returns each process's exit status, output and ``RESULT`` lines (JSON printed by
the job's script with ``report(...)``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field

import pytest

from ember._src.distributed import launch

# Prepended to every job's script: report() prints one JSON line the test reads back.
PRELUDE = """\
import json as _json, sys as _sys
def report(**values):
    print("RESULT " + _json.dumps(values), flush=True)
"""


@dataclass
class Finished:
    rank: int
    returncode: int | None  # None: killed at the deadline
    stdout: str
    stderr: str
    seconds: float
    results: dict = field(default_factory=dict)


def needs_cpu_plugin() -> None:
    pytest.importorskip("jaxlib", reason="multi-process jobs need the CPU plugin (jaxlib)")
    pytest.importorskip("ember_plugin_cpu", reason="multi-process jobs need ember-plugin-cpu")


def free_port() -> int:
    """A free port whose next one is free too (the coordinator's desk listens there)."""
    return launch.free_port()


def run_job(
    script: str,
    tmp_path,
    *,
    processes: int = 2,
    devices: int = 2,
    timeout: float = 150.0,
    env: dict[str, str] | None = None,
    rank_env: dict[int, dict[str, str]] | None = None,
    start_ranks: list[int] | None = None,
) -> list[Finished]:
    """Run ``script`` as a job of ``processes`` processes with ``devices`` CPU devices each
    (``start_ranks``: start only these ranks, e.g. to leave the coordinator out)."""
    path = tmp_path / f"job_{free_port()}.py"
    path.write_text(PRELUDE + textwrap.dedent(script))
    address = f"127.0.0.1:{free_port()}"
    started = []
    begin = time.monotonic()
    try:
        for rank in start_ranks if start_ranks is not None else range(processes):
            child_env = {
                **os.environ,
                "EMBER_PLATFORMS": "cpu",
                "EMBER_CPU_DEVICE_COUNT": str(devices),
                "EMBER_COORDINATOR_ADDRESS": address,
                "EMBER_NUM_PROCESSES": str(processes),
                "EMBER_PROCESS_ID": str(rank),
                "PYTHONUNBUFFERED": "1",
                "TF_CPP_MIN_LOG_LEVEL": "2",
                **(env or {}),
                **((rank_env or {}).get(rank, {})),
            }
            proc = subprocess.Popen(
                [sys.executable, str(path)],
                env=child_env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            started.append((rank, proc))
        finished = []
        for rank, proc in started:
            remaining = max(begin + timeout - time.monotonic(), 0.1)
            try:
                out, err = proc.communicate(timeout=remaining)
                code = proc.returncode
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate(timeout=10)
                code = None
            finished.append(Finished(rank, code, out, err, time.monotonic() - begin, _results(out)))
        return finished
    finally:
        for _, proc in started:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


def _results(stdout: str) -> dict:
    found: dict = {}
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            found.update(json.loads(line[len("RESULT ") :]))
    return found


def describe(finished: list[Finished]) -> str:
    """Every process's status and output, for assertion messages."""
    return "\n".join(
        f"--- rank {f.rank}: status {f.returncode} after {f.seconds:.1f} s\n{f.stdout}\n{f.stderr}"
        for f in finished
    )


def assert_all_succeeded(finished: list[Finished]) -> None:
    assert all(f.returncode == 0 for f in finished), describe(finished)
