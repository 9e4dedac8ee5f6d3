"""Run every benchmark and print ember/JAX ratios against the targets.

    python bench/run_all.py            # all of them
    python bench/run_all.py dispatch   # only those whose module name contains "dispatch"

JAX is imported here only (never by ember or its tests): install it in the bench
environment (``tox -e bench``). Without JAX the ember figures are printed alone.
"""

from __future__ import annotations

import importlib
import os
import pathlib
import subprocess
import sys

# XLA's CPU buffers come from glibc malloc. With its default, adaptive mmap threshold, programs
# whose outputs are a few MiB flip between two speeds from run to run (page faults on every
# call, or none), for JAX and ember alike; pinning the thresholds makes the figures repeatable.
_PINNED_MALLOC = {"MALLOC_MMAP_THRESHOLD_": "4294967296", "MALLOC_TRIM_THRESHOLD_": "4294967296"}
if any(os.environ.get(k) != v for k, v in _PINNED_MALLOC.items()):
    os.environ.update(_PINNED_MALLOC)
    os.execv(sys.executable, [sys.executable, *sys.argv])

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("EMBER_PLATFORMS", "cpu")
sys.path.insert(0, str(pathlib.Path(__file__).parent))

from harness import header  # noqa: E402 - after the path and environment set-up

MODULES = [
    "bench_dispatch",
    "bench_tracing",
    "bench_training",
    "bench_transforms",
    "bench_numpy",
    "bench_linalg",
    "bench_callbacks",
    "bench_export",
    "bench_sharding",
    "bench_explicit_sharding",
    "bench_multiprocess",
    "bench_compilation_cache",
    "bench_pallas",
    "bench_pallas_gpu",
    "bench_cuda_kernels",
]
# Modules that need their own process (a device count fixed before any backend starts, jobs
# of several processes started by the module itself, or fresh processes timed from their start).
SEPARATE = {
    "bench_sharding",
    "bench_explicit_sharding",
    "bench_multiprocess",
    "bench_compilation_cache",
    "bench_linalg",  # its generic figures come from a process without the LAPACK lowerings
}


def main(argv: list[str]) -> None:
    selected = [m for m in MODULES if not argv or any(a in m for a in argv)]
    try:
        import jax  # noqa: F401

        have_jax = True
    except ImportError:
        have_jax = False
        print("JAX is not installed: printing ember's figures alone")
    print(header())
    for name in selected:
        if name in SEPARATE:
            script = pathlib.Path(__file__).parent / f"{name}.py"
            subprocess.run([sys.executable, str(script), "--no-header"], check=True)
            continue
        module = importlib.import_module(name)
        for result in module.run(have_jax):
            print(result.row(), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
