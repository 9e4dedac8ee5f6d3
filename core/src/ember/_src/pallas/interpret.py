"""Interpret mode: a ``PallasCall`` as ordinary array code, on any backend.

The kernel's Refs are discharged (``discharge_state``) into a function from block values to
new block values, and the grid becomes a loop. Each step finds every operand's block from
its index map, cuts it out with ``dynamic_slice``, runs the discharged kernel with the
step's grid indices in place of ``program_id``, and writes the blocks back with
``dynamic_update_slice``. The grid's *parallel* axes (each output block written by exactly
one of their points) are not looped over: every step runs all their points at once, batched
with ``vmap`` (``parallel_grid.py``), so XLA fuses across them and uses its threads; only
the axes along which an output block is revisited (a reduction) stay a loop. The same traced
program is lowered to StableHLO (``cpu`` and every other platform without a native kernel
compiler) and evaluated with NumPy (``reference``).

What the kernel sees where it has not written:

- outputs start *uninitialised*: NaN for floats (complex: NaN+NaNj), the smallest value for
  signed and unsigned integers (``iinfo.min``), False for booleans, as JAX's interpreter
  does (to make reads of unwritten memory visible); an output aliased to an input starts as
  that input's value;
- scratch buffers start the same way;
- a block that runs past the edge of its array (a block shape that does not divide the
  array) reads the same uninitialised values beyond the edge, and what the kernel writes
  there is dropped (the arrays are padded to whole blocks for the loop and cut back after).

Writes to input Refs persist from one grid step to the next (the inputs are carried too), as
in JAX's interpreter; they are not visible outside the call.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src.core import ShapedArray
from ember._src.interpreters.discharge import discharge_state
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.ir import ClosedJaxpr
from ember._src.lax.slicing import dynamic_slice, dynamic_update_slice, full
from ember._src.pallas.core import BlockMapping, PallasCall
from ember._src.pallas.kernel_eval import block_starts, evaluate_kernel
from ember._src.pallas.parallel_grid import (
    batched_scratch,
    from_blocks,
    parallel_axes,
    resident_operands,
    run_batched_step,
    to_blocks,
)
from ember._src.primitives.control_flow.loops import while_loop
from ember._src.primitives.shape import reshape
from ember._src.primitives.slicing import pad, slice_op

_INT32 = np.dtype(np.int32)


def uninitialized_value(aval: ShapedArray) -> Any:
    """An array of type ``aval`` that reads as uninitialised memory (see the module doc)."""
    return full(aval.shape, uninitialized_fill(aval.dtype), aval.dtype)


def uninitialized_fill(dtype: np.dtype) -> Any:
    if dtype.kind in "fc" or dtype.name in ("bfloat16",) or np.issubdtype(dtype, np.floating):
        return np.nan
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    if dtype.kind == "b":
        return False
    return 0


_jaxprs: weakref.WeakKeyDictionary[PallasCall, ClosedJaxpr] = weakref.WeakKeyDictionary()


def interpret_jaxpr(call: PallasCall, in_avals: Sequence[ShapedArray]) -> ClosedJaxpr:
    """The traced interpret loop of ``call`` (operands of types ``in_avals`` in, outputs out),
    built once per call."""
    found = _jaxprs.get(call)
    if found is None:
        found = trace_to_jaxpr(
            lambda *args: interpret(call, args), list(in_avals), name=f"interpret({call.name})"
        )
        _jaxprs[call] = found
    return found


def interpret(call: PallasCall, args: Sequence[Any], *, batch_parallel: bool = True) -> list[Any]:
    """The outputs of ``call`` on ``args``, computed by looping over the grid: its parallel
    axes as one batched step inside each step of the loop over the others
    (``parallel_grid.py``), unless ``batch_parallel`` is False."""
    kernel = discharge_state(call.kernel)
    aliased = {out: inp for inp, out in call.input_output_aliases}
    outs = [
        args[aliased[i]] if i in aliased else uninitialized_value(m.array_aval)
        for i, m in enumerate(call.out_block_mappings)
    ]
    arrays = [_padded(x, m) for x, m in zip([*args, *outs], call.block_mappings)]
    written = _written_refs(kernel, len(call.block_mappings))
    axes = parallel_axes(call, kernel, written) if batch_parallel else ()
    scratch = [uninitialized_value(aval) for aval in call.scratch_avals]
    # Resident operands (see parallel_grid.py) are carried as blocks and written back into
    # the outputs' starting values after the loop.
    starting_outs = arrays[call.num_inputs :]
    resident = [False] * len(arrays)
    if axes:
        scratch = [batched_scratch(x, axes, call.grid) for x in scratch]
        resident = resident_operands(call, axes)
        arrays = [
            to_blocks(x, m, axes, call.grid) if r else x
            for x, m, r in zip(arrays, call.block_mappings, resident)
        ]
    loop_axes = [a for a in range(len(call.grid)) if a not in axes]

    def step(loop_indices: Sequence[Any], arrays: list[Any], scratch: list[Any]) -> list[Any]:
        if axes:
            at = dict(zip(loop_axes, loop_indices))
            new_arrays, new_scratch = run_batched_step(
                call, kernel, axes, written, at, arrays, scratch, resident
            )
            return [*new_arrays, *new_scratch]
        starts = [block_starts(m, loop_indices) for m in call.block_mappings]
        blocks = [_read_block(x, m, s) for x, m, s in zip(arrays, call.block_mappings, starts)]
        new_values = evaluate_kernel(kernel, call.grid, loop_indices, [*blocks, *scratch])
        new_blocks = new_values[: len(blocks)]
        new_arrays = [
            _write_block(x, m, s, b) if w else x
            for x, m, s, b, w in zip(arrays, call.block_mappings, starts, new_blocks, written)
        ]
        return [*new_arrays, *new_values[len(blocks) :]]

    loop_grid = tuple(call.grid[a] for a in loop_axes)
    n = math.prod(loop_grid) if call.num_iterations else 0
    carry = [*arrays, *scratch]
    if n == 1:
        carry = step([np.int32(0)] * len(loop_grid), arrays, scratch)
    elif n > 1:

        def cond(state: list[Any]) -> Any:
            return state[0] < np.int32(n)

        def body(state: list[Any]) -> list[Any]:
            i, *rest = state
            loop_indices = _unravel(i, loop_grid)
            values = step(loop_indices, rest[: len(arrays)], rest[len(arrays) :])
            return [i + np.int32(1), *values]

        carry = while_loop(cond, body, [np.int32(0), *carry])[1:]
    results = carry[call.num_inputs : len(call.block_mappings)]
    results = [
        from_blocks(start, x, m, axes, call.grid) if r else x
        for start, x, m, r in zip(
            starting_outs, results, call.out_block_mappings, resident[call.num_inputs :]
        )
    ]
    return [_unpadded(x, m) for x, m in zip(results, call.out_block_mappings)]


def _unravel(i: Any, grid: tuple[int, ...]) -> list[Any]:
    """The grid indices of step ``i`` (row-major: the last grid axis moves fastest)."""
    indices = []
    for size in reversed(grid):
        indices.append(i % np.int32(size))
        i = i // np.int32(size)
    return indices[::-1]


def _written_refs(kernel: ClosedJaxpr, count: int) -> list[bool]:
    """For each of the first ``count`` Refs, whether the kernel may change it (its final
    value is not simply its input): blocks it only reads need no write back."""
    jaxpr = kernel.jaxpr
    finals = jaxpr.outvars[len(jaxpr.outvars) - len(jaxpr.invars) :]
    return [final is not invar for final, invar in zip(finals[:count], jaxpr.invars[:count])]


# -- blocks ------------------------------------------------------------------------------------


def _read_block(array: Any, mapping: BlockMapping, starts: list[Any]) -> Any:
    block = dynamic_slice(array, starts, mapping.block_sizes)
    return reshape(block, mapping.block_aval.shape)


def _write_block(array: Any, mapping: BlockMapping, starts: list[Any], block: Any) -> Any:
    return dynamic_update_slice(array, reshape(block, mapping.block_sizes), starts)


def _padded(array: Any, mapping: BlockMapping) -> Any:
    """``array`` padded at the end to whole blocks, with uninitialised values."""
    shape = mapping.array_aval.shape
    target = mapping.padded_shape
    if target == tuple(shape):
        return array
    fill = np.asarray(uninitialized_fill(mapping.array_aval.dtype), mapping.array_aval.dtype)
    return pad(array, fill, [(0, t - n, 0) for n, t in zip(shape, target)])


def _unpadded(array: Any, mapping: BlockMapping) -> Any:
    shape = tuple(mapping.array_aval.shape)
    if mapping.padded_shape == shape:
        return array
    return slice_op(array, (0,) * len(shape), shape, None)
