"""Pallas, ember's kernel language (as ``jax.experimental.pallas``): ``import
ember.experimental.pallas as pl``.

A kernel is a Python function over *Refs* to blocks of its inputs and outputs;
``pl.pallas_call(kernel, out_shape, grid=..., in_specs=..., out_specs=...)`` runs it once per
point of the grid, each time on the blocks the ``BlockSpec``s' index maps choose::

    def add_kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + y_ref[...]

    spec = pl.BlockSpec((128,), lambda i: (i,))
    add = pl.pallas_call(add_kernel, out_shape=ember.ShapeDtypeStruct((1024,), jnp.float32),
                         grid=(8,), in_specs=[spec, spec], out_specs=spec)

With ``interpret=True`` (and on platforms without a native kernel compiler) the call runs as
a loop of ordinary array operations: on every backend, under ``jit``, ``vmap`` and the rest.
Outputs a kernel does not write read as uninitialised there (NaN for floats, the smallest
integer for ints); blocks that do not divide their array are padded, and writes past the edge
are dropped. docs/kernels.md is the guide.
"""

from ember._src.pallas.core import (
    ANY as ANY,
    BlockSpec as BlockSpec,
    GridSpec as GridSpec,
    MemoryRef as MemoryRef,
    MemorySpace as MemorySpace,
    NoBlockSpec as NoBlockSpec,
    Squeezed as Squeezed,
    no_block_spec as no_block_spec,
    squeezed as squeezed,
)
from ember._src.pallas.pallas_call import (
    pallas_call as pallas_call,
    pallas_call_p as pallas_call_p,
)
from ember._src.pallas.primitives import (
    atomic_add as atomic_add,
    atomic_and as atomic_and,
    atomic_cas as atomic_cas,
    atomic_max as atomic_max,
    atomic_min as atomic_min,
    atomic_or as atomic_or,
    atomic_xchg as atomic_xchg,
    atomic_xor as atomic_xor,
    cdiv as cdiv,
    debug_print as debug_print,
    dot as dot,
    ds as ds,
    dslice as dslice,
    load as load,
    max_contiguous as max_contiguous,
    multiple_of as multiple_of,
    num_programs as num_programs,
    program_id as program_id,
    store as store,
    swap as swap,
    when as when,
)
from ember._src.state_types import Slice as Slice
from ember.experimental.pallas import triton as triton
