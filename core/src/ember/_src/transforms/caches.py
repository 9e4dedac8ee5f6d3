"""``ember.clear_caches()``: forget every traced and compiled program, as ``jax.clear_caches``.

The next call of any jitted function (ember.numpy's compiled composites included) traces and
compiles again, and so does the next eager operation. Useful to free the memory compiled
programs hold, or to measure compilation. A persistent compilation cache on disk is kept.
"""

from __future__ import annotations

from ember._src.execution import eager
from ember._src.transforms.jit import clear_jit_caches


def clear_caches() -> None:
    """Clear every in-memory cache of traced jaxprs and compiled programs."""
    clear_jit_caches()
    eager.clear_caches()  # the eager programs, and placement's scalars and reshard programs
