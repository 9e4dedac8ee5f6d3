"""ember.numpy.linalg beside jax.numpy.linalg on the CPU: jitted cholesky, solve, inv, det, qr,
eigh, svd and eig of float32 matrices, n = 64, 256, 512 (ms/call).

Each figure is taken twice, in two processes: ``generic`` with the CPU plugin's LAPACK
lowerings off (``EMBER_CPU_LAPACK=0``: ember's own algorithms, what ember did before the
overrides) and ``lapack`` with them on; JAX (which calls LAPACK) runs beside ember in both, so
each row's ratio is paired with JAX in the same process at the same moment.

    python bench/bench_linalg.py             # both, generic in a subprocess
    python bench/bench_linalg.py --generic   # only the generic figures (this process)
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
from harness import compare, header

import ember
import ember.numpy as enp

SIZES = (64, 256, 512)
# Seconds one repeat aims at, and the repeats.
REPEAT_SECONDS = 0.3
REPEATS = 5
# The generic eigensolvers take seconds a call at n = 256 (Jacobi sweeps): a call slower than
# SLOW_CALL_SECONDS is timed once, and a case slower than GIVE_UP_SECONDS skips its larger sizes.
SLOW_CALL_SECONDS = 1.0
GIVE_UP_SECONDS = 10.0
GENERIC_FLAG = "--generic"


def _inputs(n: int):
    rng = np.random.default_rng(n)
    general = rng.normal(size=(n, n)).astype(np.float32)
    spd = (general @ general.T / n + np.eye(n)).astype(np.float32)
    symmetric = ((general + general.T) / 2).astype(np.float32)
    rhs = rng.normal(size=(n, 4)).astype(np.float32)
    return general, spd, symmetric, rhs


def _cases(np_module):
    linalg = np_module.linalg
    return {
        "cholesky": (lambda spd: linalg.cholesky(spd), "spd"),
        "solve": (lambda a, b: linalg.solve(a, b), "general+rhs"),
        "inv": (lambda a: linalg.inv(a), "general"),
        "det": (lambda a: linalg.det(a), "general"),
        "qr": (lambda a: linalg.qr(a), "general"),
        "eigh": (lambda s: linalg.eigh(s), "symmetric"),
        "svd": (lambda a: linalg.svd(a), "general"),
        "eig": (lambda a: linalg.eig(a), "general"),
    }


def _operands(kind: str, general, spd, symmetric, rhs):
    return {
        "spd": (spd,),
        "general+rhs": (general, rhs),
        "general": (general,),
        "symmetric": (symmetric,),
    }[kind]


def _seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run(have_jax: bool, label: str | None = None):
    if label is None:
        label = "generic" if not ember.config.read("cpu_lapack") else "lapack"
    if have_jax:
        import jax
        import jax.numpy as jnp

        jax_cases = _cases(jnp)
    for name, (fn, kind) in _cases(enp).items():
        ember_fn = ember.jit(fn)
        jax_fn = jax.jit(jax_cases[name][0]) if have_jax else None
        slowest = 0.0
        for n in SIZES:
            if slowest > GIVE_UP_SECONDS:
                print(
                    f"linalg.{name} [{label}], f32[{n},{n}]: skipped (a smaller size took "
                    f"{slowest:.0f} s a call)",
                    flush=True,
                )
                continue
            host = _operands(kind, *_inputs(n))
            e_args = [enp.asarray(x) for x in host]

            def e_call(e_args=e_args, ember_fn=ember_fn):
                return ember.block_until_ready(ember_fn(*e_args))

            j_call = None
            if have_jax:
                j_args = [jnp.asarray(x) for x in host]

                def j_call(j_args=j_args, jax_fn=jax_fn):
                    return jax.block_until_ready(jax_fn(*j_args))

            e_call()  # compile before sizing the repeats
            if j_call is not None:
                j_call()
            once = slowest = _seconds(e_call)
            slow = once > SLOW_CALL_SECONDS
            yield compare(
                f"linalg.{name} [{label}], f32[{n},{n}]",
                e_call,
                j_call,
                number=max(1, int(REPEAT_SECONDS / max(once, 1e-6))),
                repeats=1 if slow else REPEATS,
                unit="ms",
                warmup=0 if slow else 1,
            )


def _generic_in_subprocess() -> None:
    """The generic figures, from a process whose CPU plugin registered no LAPACK lowerings."""
    env = dict(os.environ, EMBER_CPU_LAPACK="0")
    subprocess.run(
        [sys.executable, __file__, "--no-header", GENERIC_FLAG], env=env, check=True, timeout=3600
    )


def main(argv: list[str]) -> None:
    try:
        import jax  # noqa: F401

        have_jax = True
    except ImportError:
        have_jax = False
    if "--no-header" not in argv:
        print(header(), flush=True)
    if GENERIC_FLAG in argv:
        for result in run(have_jax, "generic"):
            print(result.row(), flush=True)
        return
    _generic_in_subprocess()
    for result in run(have_jax, "lapack"):
        print(result.row(), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
