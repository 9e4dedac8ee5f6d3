"""The persistent compilation cache in a multi-process job (2 processes x 2 CPU devices,
started by ``python -m ember launch``): process 0 writes the program it compiled, process 1
compiles it too but does not write; in the next job both load it from the cache and compute
the same value. Every run is bounded: the launcher by its ``--timeout``, the launcher's
process by a timeout here after which it is stopped (SIGTERM, then SIGKILL)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("jaxlib", reason="the CPU plugin needs jaxlib")
pytest.importorskip("ember_plugin_cpu", reason="multi-process jobs need the CPU plugin")

pytestmark = pytest.mark.slow

LAUNCH_TIMEOUT_S = 100
SUBPROCESS_TIMEOUT_S = 140
STOP_GRACE_S = 20
MARK = "CACHE_STATS "

PROGRAM = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import ember
    from ember import compilation_cache
    from ember.sharding import NamedSharding, PartitionSpec as P

    ember.distributed.initialize()
    ember.config.update("persistent_cache_min_compile_time_secs", 0.0)
    ember.config.update("compilation_cache_dir", sys.argv[1])
    sharding = NamedSharding(ember.make_mesh((4,), ("x",)), P("x"))
    values = np.arange(8, dtype=np.float32)
    x = ember.make_array_from_callback((8,), sharding, lambda index: values[index])
    total = ember.jit(lambda x: (x * 2.0).sum())(x)
    result = {"total": float(total), **compilation_cache.stats()}
    print("MARK" + json.dumps(result), flush=True)
    """
).replace("MARK", MARK)


def launch(script, cache_dir) -> list[dict]:
    """Run a 2-process job of ``script``; each process's printed result, by process."""
    command = [
        sys.executable, "-m", "ember", "launch", "-n", "2", "--devices-per-process", "2",
        "--timeout", str(LAUNCH_TIMEOUT_S), str(script), str(cache_dir),
    ]  # fmt: skip
    env = dict(os.environ, EMBER_PLATFORMS="cpu")
    for name in ("EMBER_COORDINATOR_ADDRESS", "EMBER_NUM_PROCESSES", "EMBER_PROCESS_ID"):
        env.pop(name, None)  # a run inside a launched job must not join that job
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        out, err = process.communicate(timeout=SUBPROCESS_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGTERM)  # the launcher stops its processes first
        try:
            out, err = process.communicate(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
        pytest.fail(f"the job ran past {SUBPROCESS_TIMEOUT_S} s\n{out[-2000:]}\n{err[-2000:]}")
    assert process.returncode == 0, f"{out[-2000:]}\n{err[-2000:]}"
    results = {}
    for line in out.splitlines():
        rank, _, text = line.partition(" ")
        if text.startswith(MARK):
            results[int(rank.strip("[]"))] = json.loads(text[len(MARK) :])
    return [results[0], results[1]]


def test_process_0_writes_and_every_process_reads(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    cache_dir = tmp_path / "cache"
    first = launch(script, cache_dir)
    assert [r["total"] for r in first] == [56.0, 56.0]
    assert (first[0]["writes"], first[1]["writes"], first[1]["write_skipped"]) == (1, 0, 1)
    assert len(os.listdir(cache_dir)) == 1
    second = launch(script, cache_dir)
    assert [r["total"] for r in second] == [56.0, 56.0]
    assert [(r["hits"], r["misses"]) for r in second] == [(1, 0), (1, 0)]
