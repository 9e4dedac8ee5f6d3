"""Timing helpers for the benchmarks: interleaved repeats, medians, ember/JAX ratios.

Each benchmark gives a pair of zero-argument callables doing the same work in ember and in
JAX. They are timed alternately (so drift in the machine's speed hits both alike) and the
report shows each median and the ratio ember/JAX, which is the number the targets are about.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Result:
    name: str
    unit: str
    ember: float
    jax: float | None
    target: float | None
    paired_ratio: float | None = None

    @property
    def ratio(self) -> float | None:
        if self.paired_ratio is not None:
            return self.paired_ratio
        return None if self.jax in (None, 0) else self.ember / self.jax

    def row(self) -> str:
        jax = f"{self.jax:10.2f}" if self.jax is not None else "         -"
        ratio = f"{self.ratio:6.2f}x" if self.ratio is not None else "      -"
        target = f"<= {self.target:.2f}x" if self.target is not None else ""
        verdict = ""
        if self.ratio is not None and self.target is not None:
            verdict = "ok" if self.ratio <= self.target else "MISSED"
        return (
            f"{self.name:44s} {self.ember:10.2f} {jax} {self.unit:6s} {ratio} {target:9s} {verdict}"
        )


def per_call(fn: Callable[[], object], number: int) -> float:
    """Seconds per call of ``fn``, over ``number`` back-to-back calls."""
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def compare(
    name: str,
    ember_fn: Callable[[], object],
    jax_fn: Callable[[], object] | None,
    *,
    number: int,
    repeats: int = 11,
    unit: str = "us",
    target: float | None = None,
    warmup: int = 5,
) -> Result:
    """Median over ``repeats`` of the per-call time, alternating ember and JAX.

    The ratio is the median of the per-repeat ratios: each pair of neighbouring runs shares
    the machine's state at that moment, which makes the ratio steadier than either time.
    """
    scale = {"us": 1e6, "ms": 1e3, "s": 1.0}[unit]
    # Warm up both sides alike: compile, fill caches, and let the C allocator settle (the first
    # calls that free large buffers move glibc's mmap threshold, which changes later timings).
    for _ in range(warmup):
        ember_fn()
        if jax_fn is not None:
            jax_fn()
    ember_times, jax_times = [], []
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            ember_times.append(per_call(ember_fn, number))
            if jax_fn is not None:
                jax_times.append(per_call(jax_fn, number))
    finally:
        if gc_was_enabled:
            gc.enable()
    ember_median = statistics.median(ember_times) * scale
    jax_median = statistics.median(jax_times) * scale if jax_times else None
    paired = None
    if jax_times:
        paired = statistics.median(e / j for e, j in zip(ember_times, jax_times))
    return Result(name, unit, ember_median, jax_median, target, paired)


def header() -> str:
    return f"{'benchmark':44s} {'ember':>10s} {'jax':>10s} {'unit':6s} {'ratio':>7s} target"
