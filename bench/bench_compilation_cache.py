"""Process start to first results with the persistent compilation cache, ember beside JAX.

The workload is a small training program of several jitted functions: an MLP's
``value_and_grad`` SGD step, a loss-and-accuracy evaluation, a prediction and an input
normalisation. Each measurement is one fresh process, timed inside it from just before
``import ember`` / ``import jax`` to the first results on the host (a few training steps and
an evaluation). Two states of the cache directory:

- cold: an empty directory (everything is compiled, then stored);
- warm: the directory the cold run of the same framework filled (everything is loaded).

Both frameworks store every program (minimum compile time 0, minimum entry size 0). Rounds
alternate ember and JAX in ABBA order so drift in the machine's speed hits both alike; rows
show medians and the paired ember/JAX ratios. Every worker has a deadline.

    python bench/bench_compilation_cache.py                  # report rows
    python bench/bench_compilation_cache.py --worker ember --cache DIR   # one worker
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from harness import Result, header

ROUNDS = 5
WORKER_DEADLINE_S = 120.0
MARK = "EMBER_BENCH_COMPILATION_CACHE "
SIZES = (784, 512, 512, 10)
BATCH = 128
STEPS = 3


# --------------------------------------------------------------------------------------------
# The program both frameworks run, in one process each


def worker(framework: str, cache_dir: str) -> dict:
    start = time.perf_counter()
    if framework == "ember":
        import ember as fw
        import ember.numpy as fnp

        fw.config.update("persistent_cache_min_compile_time_secs", 0.0)
        fw.config.update("compilation_cache_dir", cache_dir)
    else:
        import jax as fw
        import jax.numpy as fnp

        fw.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        fw.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
        fw.config.update("jax_compilation_cache_dir", cache_dir)
    import numpy as np

    tree_map = fw.tree_util.tree_map

    def logits_of(params, x):
        for w, b in params[:-1]:
            x = fnp.tanh(x @ w + b)
        w, b = params[-1]
        return x @ w + b

    def loss(params, x, y):
        logits = logits_of(params, x)
        logits = logits - fnp.max(logits, axis=-1, keepdims=True)
        log_probs = logits - fnp.log(fnp.sum(fnp.exp(logits), -1, keepdims=True))
        return -fnp.mean(fnp.sum(y * log_probs, axis=-1))

    @fw.jit
    def normalize(x):
        return (x - fnp.mean(x, axis=0)) / (fnp.std(x, axis=0) + 1e-6)

    @fw.jit
    def step(params, x, y):
        value, grads = fw.value_and_grad(loss)(params, x, y)
        return tree_map(lambda p, g: p - 0.01 * g, params, grads), value

    @fw.jit
    def evaluate(params, x, y):
        logits = logits_of(params, x)
        correct = fnp.argmax(logits, axis=-1) == fnp.argmax(y, axis=-1)
        return loss(params, x, y), fnp.mean(correct.astype(fnp.float32))

    @fw.jit
    def predict(params, x):
        return fnp.argmax(logits_of(params, x), axis=-1)

    rng = np.random.default_rng(0)
    params = [
        (
            fnp.asarray(rng.normal(size=(m, n)).astype(np.float32) / np.sqrt(m)),
            fnp.asarray(np.zeros(n, np.float32)),
        )
        for m, n in zip(SIZES[:-1], SIZES[1:])
    ]
    x = normalize(fnp.asarray(rng.normal(size=(BATCH, SIZES[0])).astype(np.float32)))
    y = fnp.asarray(np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], BATCH)])
    losses = []
    for _ in range(STEPS):
        params, value = step(params, x, y)
        losses.append(float(value))
    eval_loss, accuracy = evaluate(params, x, y)
    labels = np.asarray(predict(params, x))
    result = {"losses": losses, "eval": [float(eval_loss), float(accuracy)]}
    result["seconds"] = time.perf_counter() - start
    result["labels"] = int(labels.sum())
    if framework == "ember":
        result["stats"] = fw.compilation_cache.stats()
    return result


# --------------------------------------------------------------------------------------------
# Rounds of fresh processes


def run_worker(framework: str, cache_dir: str) -> dict:
    command = [sys.executable, __file__, "--worker", framework, "--cache", cache_dir]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=WORKER_DEADLINE_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(
            f"the {framework} worker passed its {WORKER_DEADLINE_S}s deadline"
        ) from None
    if done.returncode != 0:
        raise RuntimeError(f"the {framework} worker failed:\n{done.stderr}")
    line = next(s for s in done.stdout.splitlines() if s.startswith(MARK))
    return json.loads(line[len(MARK) :])


def one_round(framework: str, root: str) -> tuple[float, float, dict]:
    """(cold seconds, warm seconds, entry sizes) of one framework in a fresh directory."""
    cache_dir = tempfile.mkdtemp(prefix=f"{framework}-", dir=root)
    cold = run_worker(framework, cache_dir)
    warm = run_worker(framework, cache_dir)
    if framework == "ember":
        assert warm["stats"]["misses"] == 0, warm["stats"]  # everything was loaded
    if cold["losses"] != warm["losses"]:
        raise AssertionError(f"{framework}: the warm run computed {warm} , the cold {cold}")
    sizes = [os.path.getsize(os.path.join(cache_dir, n)) for n in os.listdir(cache_dir)]
    shutil.rmtree(cache_dir)
    return cold["seconds"], warm["seconds"], {"entries": len(sizes), "bytes": sum(sizes)}


def run(have_jax: bool, rounds: int = ROUNDS, verbose: bool = False) -> list[Result]:
    times: dict[str, dict[str, list[float]]] = {
        f: {"cold": [], "warm": []} for f in ("ember", "jax")
    }
    with tempfile.TemporaryDirectory(prefix="bench-compilation-cache-") as root:
        for index in range(rounds):
            order = ["ember", "jax"] if index % 2 == 0 else ["jax", "ember"]
            for framework in order:
                if framework == "jax" and not have_jax:
                    continue
                cold, warm, sizes = one_round(framework, root)
                times[framework]["cold"].append(cold)
                times[framework]["warm"].append(warm)
                if verbose:
                    print(
                        f"{framework}: cold {cold:.3f}s warm {warm:.3f}s {sizes}", file=sys.stderr
                    )
    results = []
    for state, target in (("cold", None), ("warm", 1.0)):
        ember_times, jax_times = times["ember"][state], times["jax"][state]
        paired = None
        if jax_times:
            paired = statistics.median(e / j for e, j in zip(ember_times, jax_times))
        results.append(
            Result(
                f"start to first results, {state} cache",
                "s",
                statistics.median(ember_times),
                statistics.median(jax_times) if jax_times else None,
                target,
                paired,
            )
        )
    return results


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", choices=["ember", "jax"])
    parser.add_argument("--cache")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--no-header", action="store_true")
    parser.add_argument("--verbose", action="store_true", help="each round's figures on stderr")
    args = parser.parse_args(argv)
    if args.worker is not None:
        if args.cache is None:
            parser.error("--worker needs --cache")
        print(MARK + json.dumps(worker(args.worker, args.cache)), flush=True)
        return
    have_jax = importlib.util.find_spec("jax") is not None
    if not args.no_header:
        print(header())
    for result in run(have_jax, args.rounds, args.verbose):
        print(result.row(), flush=True)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ.setdefault("EMBER_PLATFORMS", "cpu")
    main(sys.argv[1:])
