"""Triton-specific Pallas APIs (as ``jax.experimental.pallas.triton``): the compiler's options
and the operations that Triton kernels use (also in ``ember.experimental.pallas``)."""

from ember._src.pallas.core import TritonCompilerParams as CompilerParams
from ember._src.pallas.primitives import (
    atomic_add as atomic_add,
    atomic_and as atomic_and,
    atomic_cas as atomic_cas,
    atomic_max as atomic_max,
    atomic_min as atomic_min,
    atomic_or as atomic_or,
    atomic_xchg as atomic_xchg,
    atomic_xor as atomic_xor,
    dot as dot,
    load as load,
    max_contiguous as max_contiguous,
    store as store,
)

__all__ = [
    "CompilerParams",
    "atomic_add",
    "atomic_and",
    "atomic_cas",
    "atomic_max",
    "atomic_min",
    "atomic_or",
    "atomic_xchg",
    "atomic_xor",
    "dot",
    "load",
    "max_contiguous",
    "store",
]
