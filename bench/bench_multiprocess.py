"""Multi-process ember beside multi-process JAX: jobs of 2 processes x 2 CPU devices on
127.0.0.1 (collectives through gloo), both frameworks running the same program.

Workloads, each timed inside the job's processes:

- a data-parallel training step (the batch split over the job's 4 devices, parameters
  replicated, a jitted value_and_grad SGD step, the loss read on the host every step);
- ``multihost_utils.process_allgather`` of an f32[1024] held by each process;
- a jitted shard_map ``psum`` of f32[1024] shards over the 4 devices, read back on the host;
- from just before ``import ember`` / ``import jax`` to the first cross-process psum value on
  the host (joining the job, building the mesh and the input, compiling, running).

Both frameworks start from compiled bytecode, as installed packages do: JAX's comes with its
installation, and ember's workers (often run from a source tree, maybe with
PYTHONDONTWRITEBYTECODE set) get a bytecode cache of their own (PYTHONPYCACHEPREFIX), filled
by one untimed ember job first; otherwise every timed start-up would include compiling
ember's ~400 modules (about twice the import's own time).

Running it as a script starts the jobs itself: ember and JAX jobs alternate for a few rounds,
in ABBA order (so drift in the machine's speed hits both alike); each worker prints its timings
as JSON on a marked line, and this process prints the medians and the paired ember/JAX ratios
through the harness's rows. Every job has a deadline; its processes are killed when it passes,
when a peer fails, when this process leaves, and (on Linux) when this process dies.

    python bench/bench_multiprocess.py           # report rows
    python bench/bench_multiprocess.py --worker ember --rank 0 --port 12345   # one worker
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import importlib.util
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from harness import Result, header, per_call

PROCESSES = 2
LOCAL_DEVICES = 2
DEVICES = PROCESSES * LOCAL_DEVICES
VECTOR = 1024  # elements of each process's allgather input, and of each device's psum shard
SIZES = (64, 256, 256, 10)  # the MLP of bench_sharding.py
BATCH = 512  # global batch: each process holds BATCH // PROCESSES rows
ROUNDS = 5  # jobs per framework, alternating (the machine is noisy: medians of 5)
JOB_DEADLINE_S = 120.0
MARK = "EMBER_BENCH_MULTIPROCESS "

# (key in the workers' JSON, row name, unit, target, number of calls per repeat)
WORKLOADS = [
    ("train_step", "2x2-process data-parallel MLP step", "us", 1.1, 20),
    ("allgather", "2x2-process process_allgather f32[1024]", "us", 1.2, 50),
    ("psum", "2x2-process shard_map psum f32[1024] shards", "us", 1.2, 50),
    ("init_to_first_result", "2x2-process import to first psum on host", "s", 1.0, None),
]
REPEATS, WARMUP = 7, 5


# --------------------------------------------------------------------------------------------
# The program both frameworks run


@dataclass
class Framework:
    """What the benchmark program uses of a framework, under one set of names."""

    np: Any
    lax: Any
    jit: Callable
    value_and_grad: Callable
    shard_map: Callable
    make_mesh: Callable
    named_sharding: Callable
    spec: Callable
    make_array_from_process_local_data: Callable
    process_allgather: Callable
    shutdown: Callable


def _join_ember(rank: int, port: int) -> Framework:
    import ember
    import ember.distributed
    import ember.numpy as enp
    from ember import lax
    from ember.experimental import multihost_utils
    from ember.sharding import NamedSharding, P

    ember.distributed.initialize(f"127.0.0.1:{port}", PROCESSES, rank)
    return Framework(
        enp,
        lax,
        ember.jit,
        ember.value_and_grad,
        ember.shard_map,
        ember.make_mesh,
        NamedSharding,
        P,
        ember.make_array_from_process_local_data,
        multihost_utils.process_allgather,
        ember.distributed.shutdown,
    )


def _join_jax(rank: int, port: int) -> Framework:
    import jax
    import jax.numpy as jnp
    from jax.experimental import multihost_utils
    from jax.sharding import NamedSharding, PartitionSpec

    jax.config.update("jax_num_cpu_devices", LOCAL_DEVICES)
    # gloo is already JAX's default for CPU collectives (0.10): set anyway, to be explicit.
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=PROCESSES, process_id=rank)
    return Framework(
        jnp,
        jax.lax,
        jax.jit,
        jax.value_and_grad,
        jax.shard_map,
        jax.make_mesh,
        NamedSharding,
        PartitionSpec,
        jax.make_array_from_process_local_data,
        multihost_utils.process_allgather,
        jax.distributed.shutdown,
    )


def _params(rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    return [
        (rng.normal(0, 1 / np.sqrt(m), (m, n)).astype(np.float32), np.zeros(n, np.float32))
        for m, n in zip(SIZES[:-1], SIZES[1:])
    ]


def _sgd_step(fw: Framework) -> Callable:
    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = fw.np.tanh(h @ w + b)
        w, b = params[-1]
        return ((h @ w + b - y) ** 2).mean()

    def step(params, x, y):
        value, grads = fw.value_and_grad(loss)(params, x, y)
        return [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, grads)], value

    return fw.jit(step)


def _median_per_call(fn: Callable[[], object], number: int) -> float:
    """Median seconds per call over REPEATS runs of ``number`` calls, after WARMUP calls. Both
    processes make the same calls, so their collectives keep them in step."""
    for _ in range(WARMUP):
        fn()
    gc.disable()
    try:
        times = [per_call(fn, number) for _ in range(REPEATS)]
    finally:
        gc.enable()
    return statistics.median(times)


def worker(framework: str, rank: int, port: int) -> dict[str, float]:
    """One process of a job: its timings (seconds) and the final training loss."""
    start = time.perf_counter()
    fw = (_join_ember if framework == "ember" else _join_jax)(rank, port)
    mesh = fw.make_mesh((DEVICES,), ("data",))
    rows = fw.named_sharding(mesh, fw.spec("data"))
    total = fw.shard_map(
        lambda v: fw.lax.psum(v, "data"), mesh=mesh, in_specs=fw.spec("data"), out_specs=fw.spec()
    )
    psum = fw.jit(total)
    # Device d's shard is filled with d + 1: the psum is 1 + 2 + ... + DEVICES everywhere.
    first_device = rank * LOCAL_DEVICES
    shards = np.arange(first_device + 1, first_device + LOCAL_DEVICES + 1, dtype=np.float32)
    vector = fw.make_array_from_process_local_data(rows, np.repeat(shards[:, None], VECTOR, axis=1))
    first = np.asarray(psum(vector))
    init_to_first_result = time.perf_counter() - start
    expected = DEVICES * (DEVICES + 1) / 2
    if first.shape != (1, VECTOR) or not np.all(first == expected):
        raise AssertionError(f"psum gave {first!r}, not {expected} everywhere")

    timings = {"init_to_first_result": init_to_first_result}
    number = {key: n for key, _, _, _, n in WORKLOADS}

    timings["psum"] = _median_per_call(lambda: np.asarray(psum(vector)), number["psum"])

    mine = np.full(VECTOR, rank, np.float32)
    gathered = fw.process_allgather(mine)
    if gathered.shape != (PROCESSES, VECTOR) or not all(
        np.all(gathered[p] == p) for p in range(PROCESSES)
    ):
        raise AssertionError(f"process_allgather gave {gathered!r}")
    timings["allgather"] = _median_per_call(lambda: fw.process_allgather(mine), number["allgather"])

    # The same global batch and parameters in every process and both frameworks; each process
    # holds its rows of the batch.
    rng = np.random.default_rng(0)
    replicated = fw.named_sharding(mesh, fw.spec())
    state = {
        "params": [
            tuple(fw.make_array_from_process_local_data(replicated, a) for a in layer)
            for layer in _params(rng)
        ]
    }
    x = rng.normal(size=(BATCH, SIZES[0])).astype(np.float32)
    y = rng.normal(size=(BATCH, SIZES[-1])).astype(np.float32)
    mine_rows = slice(rank * BATCH // PROCESSES, (rank + 1) * BATCH // PROCESSES)
    x = fw.make_array_from_process_local_data(rows, x[mine_rows])
    y = fw.make_array_from_process_local_data(rows, y[mine_rows])
    step = _sgd_step(fw)
    losses: list[float] = []

    def train() -> None:
        state["params"], loss = step(state["params"], x, y)
        losses.append(float(loss))

    timings["train_step"] = _median_per_call(train, number["train_step"])
    timings["steps"] = len(losses)
    timings["final_loss"] = losses[-1]
    fw.shutdown()
    return timings


# --------------------------------------------------------------------------------------------
# Running jobs


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    """In the child, before exec: be killed when the bench process dies (Linux)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _worker_environment(
    framework: str, bytecode: str | None, write_bytecode: bool = False
) -> dict[str, str]:
    """``bytecode``: the directory of ember's bytecode cache, which the workers read, or
    fill when ``write_bytecode``."""
    env = dict(os.environ)
    # As run_all.py pins them (repeatable XLA CPU timings), whether or not it started us.
    env.update(MALLOC_MMAP_THRESHOLD_="4294967296", MALLOC_TRIM_THRESHOLD_="4294967296")
    env.update(TF_CPP_MIN_LOG_LEVEL="2", JAX_PLATFORMS="cpu", EMBER_PLATFORMS="cpu")
    flags = [f for f in env.get("XLA_FLAGS", "").split() if "device_count" not in f]
    env["XLA_FLAGS"] = " ".join(flags)
    for name in ("EMBER_COORDINATOR_ADDRESS", "EMBER_NUM_PROCESSES", "EMBER_PROCESS_ID"):
        env.pop(name, None)
    if framework == "ember":
        env["EMBER_CPU_DEVICE_COUNT"] = str(LOCAL_DEVICES)
        if bytecode is not None:
            env["PYTHONPYCACHEPREFIX"] = bytecode
            if write_bytecode:
                env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_job(
    framework: str,
    deadline_s: float = JOB_DEADLINE_S,
    bytecode: str | None = None,
    write_bytecode: bool = False,
) -> list[dict[str, float]]:
    """Start a job of PROCESSES workers of ``framework``; each one's timings, by rank
    (``bytecode``, ``write_bytecode``: see ``_worker_environment``)."""
    port = _free_port()
    env = _worker_environment(framework, bytecode, write_bytecode)
    procs: list[subprocess.Popen] = []
    logs = [tempfile.TemporaryFile(mode="w+") for _ in range(PROCESSES)]
    try:
        for rank in range(PROCESSES):
            command = [sys.executable, os.path.abspath(__file__), "--worker", framework]
            command += ["--rank", str(rank), "--port", str(port)]
            procs.append(
                subprocess.Popen(
                    command,
                    stdout=logs[rank],
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=env,
                    preexec_fn=_die_with_parent,
                )
            )
        deadline = time.monotonic() + deadline_s
        while any(p.poll() is None for p in procs):
            failed = [r for r, p in enumerate(procs) if p.returncode not in (None, 0)]
            if failed:  # its peers would wait on it until their own timeouts
                raise RuntimeError(
                    f"{framework} worker {failed[0]} exited with status "
                    f"{procs[failed[0]].returncode}:\n{_tail(logs[failed[0]])}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{framework} job did not finish within {deadline_s:g} s:\n"
                    + "\n".join(f"[{r}] {_tail(log)}" for r, log in enumerate(logs))
                )
            time.sleep(0.2)
        failed = [r for r, p in enumerate(procs) if p.returncode != 0]
        if failed:
            raise RuntimeError(
                f"{framework} worker {failed[0]} exited with status "
                f"{procs[failed[0]].returncode}:\n{_tail(logs[failed[0]])}"
            )
        return [_parse(framework, rank, log) for rank, log in enumerate(logs)]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass  # killed with SIGKILL: gone as soon as the kernel reaps it
        for log in logs:
            log.close()


def _tail(log: Any, lines: int = 30) -> str:
    log.flush()
    log.seek(0)
    return "\n".join(line for line in log.read().splitlines()[-lines:] if "[Gloo]" not in line)


def _parse(framework: str, rank: int, log: Any) -> dict[str, float]:
    log.seek(0)
    for line in log.read().splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :])
    raise RuntimeError(f"{framework} worker {rank} printed no timings:\n{_tail(log)}")


def _job_value(ranks: list[dict[str, float]], key: str) -> float:
    """A job's figure: the slowest process's (the job is as fast as its slowest member)."""
    return max(r[key] for r in ranks)


def run(have_jax: bool, rounds: int = ROUNDS, verbose: bool = False):
    """The report rows; ember and JAX jobs alternate, ``rounds`` of each (``verbose``: each
    job's figures on stderr too)."""
    with tempfile.TemporaryDirectory(prefix="ember-bench-bytecode-") as bytecode:
        yield from _run(have_jax, rounds, verbose, bytecode)


def _run(have_jax: bool, rounds: int, verbose: bool, bytecode: str):
    run_job("ember", bytecode=bytecode, write_bytecode=True)  # untimed: fills the cache
    jobs: dict[str, list[list[dict[str, float]]]] = {"ember": [], "jax": []}
    for round_ in range(rounds):
        order = ("ember", "jax") if round_ % 2 == 0 else ("jax", "ember")  # ABBA: drift evens out
        for framework in order if have_jax else ("ember",):
            ranks = run_job(framework, bytecode=bytecode if framework == "ember" else None)
            jobs[framework].append(ranks)
            if verbose:
                figures = ", ".join(
                    f"{key} {_job_value(ranks, key) * 1e3:.2f} ms" for key, *_ in WORKLOADS
                )
                print(f"round {round_} {framework}: {figures}", file=sys.stderr, flush=True)
    if have_jax:
        e_loss = jobs["ember"][0][0]["final_loss"]
        j_loss = jobs["jax"][0][0]["final_loss"]
        if not np.isclose(e_loss, j_loss, rtol=1e-3):
            raise AssertionError(f"final training losses differ: ember {e_loss}, JAX {j_loss}")
    for key, name, unit, target, _ in WORKLOADS:
        scale = {"us": 1e6, "ms": 1e3, "s": 1.0}[unit]
        ember_values = [_job_value(job, key) for job in jobs["ember"]]
        jax_values = [_job_value(job, key) for job in jobs["jax"]]
        paired = None
        if jax_values:
            paired = statistics.median(e / j for e, j in zip(ember_values, jax_values))
        yield Result(
            name,
            unit,
            statistics.median(ember_values) * scale,
            statistics.median(jax_values) * scale if jax_values else None,
            target,
            paired,
        )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", choices=["ember", "jax"])
    parser.add_argument("--rank", type=int)
    parser.add_argument("--port", type=int)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--no-header", action="store_true")
    parser.add_argument("--verbose", action="store_true", help="each job's figures on stderr")
    args = parser.parse_args(argv)
    if args.worker is not None:
        if args.rank is None or args.port is None:
            parser.error("--worker needs --rank and --port")
        timings = worker(args.worker, args.rank, args.port)
        print(MARK + json.dumps(timings), flush=True)
        return
    have_jax = importlib.util.find_spec("jax") is not None
    if not args.no_header:
        print(header())
    for result in run(have_jax, args.rounds, args.verbose):
        print(result.row(), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
