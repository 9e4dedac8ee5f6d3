"""The parallel axes of a kernel's grid, run as one batched step instead of a loop.

A grid axis is *parallel* when visiting its points in any order (or all at once) gives the
same outputs as the row-major loop: every output's index map passes that grid index straight
through to one block dimension (so distinct values of the axis write distinct blocks) and
no other block dimension depends on it, the axis fits inside the array (no clamped, repeated
block), the kernel writes none of its inputs and no output is aliased to an input. The other
axes (a reduction axis that an output ignores, such as matmul's ``k`` where
``pl.when(k == 0)`` initialises the accumulator) stay *sequential*: interpret mode loops over
them and runs every parallel point at once inside each step, under ``vmap`` with
``program_id`` batched. So does an axis that the trip count of a loop in the kernel depends
on (``loop_bounds.py``): batched, every program would run as long as the longest one.

Blocks are moved without gathers where they tile the array: a block dimension indexed by a
parallel axis is one slice of ``grid size x block size`` elements, split and transposed so the
parallel axes lead (outputs are written back the same way, with one ``dynamic_update_slice``).
An input whose index map mixes a parallel axis into a computed index is sliced per grid point
inside the batched step (a gather).

An operand whose blocks are the same at every step of the sequential loop (its index map
depends on the parallel axes only: matmul's output, which ignores ``k``) is *resident*: it is
cut into blocks once before the loop, carried as blocks, and written back once after it
(``resident_operands``, ``to_blocks``, ``from_blocks``). Moving a revisited output between
the array and its blocks at every step would cost a transposed copy in and out per step.

Scratch buffers get one copy per parallel point, carried along the sequential axes. A kernel
that reads scratch before writing it at a grid point sees uninitialised values, as on
hardware that runs parallel points on different cores, where the sequential loop would have
shown the previous point's leftovers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import rules
from ember._src.ir import ClosedJaxpr, Jaxpr, Literal, jaxprs_in
from ember._src.lax.slicing import dynamic_slice, dynamic_update_slice
from ember._src.pallas.core import BlockMapping, PallasCall
from ember._src.pallas.kernel_eval import block_starts, evaluate_kernel
from ember._src.pallas.loop_bounds import trip_count_axes
from ember._src.pallas.primitives import num_programs_p, program_id_p
from ember._src.primitives.shape import broadcast_in_dim, reshape, transpose
from ember._src.transforms.vmap import vmap

_INT32 = np.dtype(np.int32)

# The hint JAX's TPU compiler params carry (``dimension_semantics``): an axis marked
# "arbitrary" must run in order even when its index maps would allow otherwise.
_SEQUENTIAL_HINTS = ("arbitrary", "sequential")


def parallel_axes(call: PallasCall, kernel: ClosedJaxpr, written: Sequence[bool]) -> tuple:
    """The grid axes of ``call`` that may run as one batched step (see the module doc);
    ``kernel`` is its discharged kernel and ``written`` says which Refs it changes."""
    if call.input_output_aliases or any(written[: call.num_inputs]):
        return ()
    if not call.out_block_mappings or not _batchable(kernel.jaxpr):
        return ()
    sequential = _hinted_sequential(call) | trip_count_axes(kernel.jaxpr)
    axes = []
    for axis, size in enumerate(call.grid):
        if size > 1 and axis not in sequential:
            if all(_tiled_dim(m, axis, call.grid) is not None for m in call.out_block_mappings):
                axes.append(axis)
    return tuple(axes)


def _hinted_sequential(call: PallasCall) -> set[int]:
    hinted = set()
    for params in call.compiler_params.values():
        semantics = params.get("dimension_semantics") if isinstance(params, dict) else None
        for axis, meaning in enumerate(semantics or ()):
            if str(meaning).lower().rsplit(".", 1)[-1] in _SEQUENTIAL_HINTS:
                hinted.add(axis)
    return hinted


def _batchable(jaxpr: Jaxpr) -> bool:
    """Whether every primitive of the kernel (and of the jaxprs inside it) has a batching
    rule; ``program_id`` and ``num_programs`` are replaced before they are bound."""
    for eqn in jaxpr.eqns:
        if eqn.primitive in (program_id_p, num_programs_p):
            continue
        try:
            rules.batch_rule(eqn.primitive)
        except NotImplementedError:
            return False
        for inner in jaxprs_in(eqn.params.values()):
            if not _batchable(inner):
                return False
    return True


def _dependencies(index_map: ClosedJaxpr) -> list[set[int]]:
    """For each block index of ``index_map``, the grid axes it depends on."""
    jaxpr = index_map.jaxpr
    deps: dict[Any, set[int]] = {v: {a} for a, v in enumerate(jaxpr.invars)}

    def of(atom: Any) -> set[int]:
        return set() if type(atom) is Literal else deps.get(atom, set())

    for eqn in jaxpr.eqns:
        used = set().union(*[of(v) for v in eqn.invars]) if eqn.invars else set()
        for out in eqn.outvars:
            deps[out] = used
    return [of(v) for v in jaxpr.outvars]


def _tiled_dim(mapping: BlockMapping, axis: int, grid: tuple[int, ...]) -> int | None:
    """The array dimension that grid ``axis`` walks block by block in ``mapping`` (its index
    passed straight through, no other dimension depending on it, every block inside the
    padded array), or None."""
    jaxpr = mapping.index_map.jaxpr
    deps = _dependencies(mapping.index_map)
    through = [d for d, v in enumerate(jaxpr.outvars) if v is jaxpr.invars[axis]]
    dependent = [d for d, found in enumerate(deps) if axis in found]
    if len(through) != 1 or dependent != through:
        return None
    dim = through[0]
    if grid[axis] * mapping.block_sizes[dim] > mapping.padded_shape[dim]:
        return None
    return dim


def resident_operands(call: PallasCall, axes: Sequence[int]) -> list[bool]:
    """For each operand of ``call`` (inputs then outputs), whether it is resident (see the
    module doc): its blocks tile the array along the parallel ``axes`` it varies with, and
    its index map depends on no other grid axis."""
    parallel = set(axes)
    resident = []
    for mapping in call.block_mappings:
        used = set().union(*_dependencies(mapping.index_map))
        tiled = _Layout(mapping, axes, call.grid).tiled is not None
        resident.append(tiled and used <= parallel)
    return resident


def to_blocks(array: Any, mapping: BlockMapping, axes: Sequence[int], grid: tuple) -> Any:
    """The blocks of a resident operand, as the batched step takes them: shape (grid sizes
    of the parallel axes it varies along..., *block)."""
    return _Layout(mapping, axes, grid).read(array, [np.int32(0)] * len(grid))


def from_blocks(
    array: Any, blocks: Any, mapping: BlockMapping, axes: Sequence[int], grid: tuple
) -> Any:
    """``array`` with the blocks of a resident operand (as ``to_blocks`` gives them) written
    back in place."""
    return _Layout(mapping, axes, grid).write(array, blocks, [np.int32(0)] * len(grid))


class _Layout:
    """How one operand's blocks reach the batched step. ``tiled``: (grid axis, array dim)
    for each parallel axis the blocks vary along, in grid-axis order; None when the blocks
    are sliced per grid point instead (``gathered``)."""

    def __init__(self, mapping: BlockMapping, axes: Sequence[int], grid: tuple[int, ...]):
        self.mapping = mapping
        self.grid = grid
        deps = _dependencies(mapping.index_map)
        used = [a for a in axes if any(a in found for found in deps)]
        dims = [_tiled_dim(mapping, a, grid) for a in used]
        self.tiled = None if None in dims else list(zip(used, dims))
        self.axes = used if self.tiled is not None else []

    def read(self, array: Any, grid_indices: Sequence[Any]) -> Any:
        """The blocks of every parallel point this operand varies along, stacked in front:
        shape (grid sizes of ``self.axes``..., *block)."""
        starts, sizes = self._region(grid_indices)
        region = dynamic_slice(array, starts, sizes)
        split, order = self._split_and_order()
        blocks = transpose(reshape(region, split), order)
        lead = tuple(self.grid[a] for a, _ in self.tiled)
        return reshape(blocks, lead + self.mapping.block_aval.shape)

    def write(self, array: Any, blocks: Any, grid_indices: Sequence[Any]) -> Any:
        """``array`` with ``blocks`` (as ``read`` gives them) written back in place."""
        starts, sizes = self._region(grid_indices)
        split, order = self._split_and_order()
        inverse = list(np.argsort(order))
        ordered = reshape(blocks, tuple(split[i] for i in order))
        return dynamic_update_slice(array, reshape(transpose(ordered, inverse), sizes), starts)

    def _region(self, grid_indices: Sequence[Any]) -> tuple[list[Any], tuple[int, ...]]:
        # The parallel axes are passed straight through, so index 0 gives the region's start.
        at_zero = list(grid_indices)
        for axis, _ in self.tiled:
            at_zero[axis] = np.int32(0)
        starts = block_starts(self.mapping, at_zero)
        sizes = list(self.mapping.block_sizes)
        for axis, dim in self.tiled:
            sizes[dim] *= self.grid[axis]
        return starts, tuple(sizes)

    def _split_and_order(self) -> tuple[tuple[int, ...], list[int]]:
        """The region's shape with each tiled dimension split into (grid size, block size),
        and the permutation that brings the grid parts to the front in grid-axis order."""
        split: list[int] = []
        grid_parts: dict[int, int] = {}
        block_parts = []
        dims = {dim: axis for axis, dim in self.tiled}
        for dim, size in enumerate(self.mapping.block_sizes):
            if dim in dims:
                grid_parts[dims[dim]] = len(split)
                split.append(self.grid[dims[dim]])
            block_parts.append(len(split))
            split.append(size)
        order = [grid_parts[axis] for axis, _ in self.tiled] + block_parts
        return tuple(split), order


def run_batched_step(
    call: PallasCall,
    kernel: ClosedJaxpr,
    axes: Sequence[int],
    written: Sequence[bool],
    seq_indices: dict[int, Any],
    arrays: list[Any],
    scratch: list[Any],
    resident: Sequence[bool],
) -> tuple[list[Any], list[Any]]:
    """One step of the sequential axes (their indices ``seq_indices``) with every point of
    the parallel ``axes`` run at once. ``arrays``: the padded inputs then outputs, those
    marked ``resident`` as their blocks (``to_blocks``); ``scratch``: one copy per parallel
    point (shape (grid sizes of ``axes``..., *buffer)). Returns the new arrays (resident
    ones as blocks) and scratch."""
    layouts = [_Layout(m, axes, call.grid) for m in call.block_mappings]
    mapped, uses, operands = [], [], []
    for array, layout, is_resident in zip(arrays, layouts, resident):
        if is_resident:
            mapped.append(array)
            uses.append(set(layout.axes))
            operands.append(None)
        elif layout.tiled is not None:
            at = [seq_indices.get(a, np.int32(0)) for a in range(len(call.grid))]
            mapped.append(layout.read(array, at))
            uses.append(set(layout.axes))
            operands.append(None)
        else:
            operands.append(array)  # sliced per point inside the batched step
    mapped.extend(scratch)
    uses.extend([set(axes)] * len(scratch))
    groups = _axis_groups(axes, uses)
    num_outputs = len(call.out_block_mappings)

    def point(*values: Any) -> list[Any]:
        grid_indices = [seq_indices.get(a) for a in range(len(call.grid))]
        for axis, index in zip(axes, values):
            grid_indices[axis] = index
        values = list(values[len(axes) :])
        blocks = []
        for operand, mapping in zip(operands, call.block_mappings):
            if operand is None:
                blocks.append(values.pop(0))
            else:
                starts = block_starts(mapping, grid_indices)
                region = dynamic_slice(operand, starts, mapping.block_sizes)
                blocks.append(reshape(region, mapping.block_aval.shape))
        new = evaluate_kernel(kernel, call.grid, grid_indices, [*blocks, *values])
        new_outs = new[call.num_inputs : len(blocks)]
        return [b for b, w in zip(new_outs, written[call.num_inputs :]) if w] + new[len(blocks) :]

    indices = _group_indices(groups, call.grid)
    args = indices + [_merge_lead(x, groups, u, call.grid) for x, u in zip(mapped, uses)]
    group_uses = [{g} for g, group in enumerate(groups) for _ in group]
    group_uses += [{g for g, group in enumerate(groups) if group[0] in u} for u in uses]
    results = _map_groups(point, list(range(len(groups))), group_uses, args)
    results = [_split_lead(x, groups, call.grid) for x in results]
    new_arrays = list(arrays)
    out_written = iter(results[: sum(written[call.num_inputs :])])
    for k in range(num_outputs):
        i = call.num_inputs + k
        if written[i] and resident[i]:
            new_arrays[i] = next(out_written)
        elif written[i]:
            at = [seq_indices.get(a, np.int32(0)) for a in range(len(call.grid))]
            new_arrays[i] = layouts[i].write(arrays[i], next(out_written), at)
    return new_arrays, results[sum(written[call.num_inputs :]) :]


def _axis_groups(axes: Sequence[int], uses: list[set]) -> list[list[int]]:
    """The parallel ``axes`` in runs of neighbours that every operand varies along alike
    (all of the run or none of it): each run is mapped as one axis of their points.

    Fewer batch dimensions are what XLA's CPU backend runs best: an attention kernel batched
    over (batch, heads, query blocks) as three axes computes on rank-5 blocks of logits,
    whose fused dot-softmax-dot ran in 3.4 to 10 ms from one process to the next, against
    3.4 to 3.9 ms with (batch, heads) mapped as one axis (rank 4)."""
    groups: list[list[int]] = []
    for axis in axes:
        if groups and all((axis in u) == (groups[-1][0] in u) for u in uses):
            groups[-1].append(axis)
        else:
            groups.append([axis])
    return groups


def _group_indices(groups: list[list[int]], grid: tuple[int, ...]) -> list[Any]:
    """For each parallel axis (group by group), its grid index at every point of its group,
    row-major over the group's axes."""
    indices = []
    for group in groups:
        sizes = tuple(grid[a] for a in group)
        for index in np.indices(sizes, dtype=_INT32):
            indices.append(index.reshape(-1))
    return indices


def _merge_lead(value: Any, groups: list[list[int]], used: set, grid: tuple[int, ...]) -> Any:
    """``value``, led by one dimension per parallel axis in ``used``, led instead by one per
    group (the groups' axes are all in ``used`` or none)."""
    lead = [math.prod(grid[a] for a in group) for group in groups if group[0] in used]
    count = sum(len(group) for group in groups if group[0] in used)
    if len(lead) == count:
        return value
    return reshape(value, (*lead, *value.shape[count:]))


def _split_lead(value: Any, groups: list[list[int]], grid: tuple[int, ...]) -> Any:
    """A result of the batched step, led by one dimension per group, led by one per axis."""
    axes = [a for group in groups for a in group]
    if len(groups) == len(axes):
        return value
    return reshape(value, (*[grid[a] for a in axes], *value.shape[len(groups) :]))


def _map_groups(fn: Callable[..., list[Any]], groups: list[int], uses: list[set], args: list):
    """``fn`` mapped over ``groups`` in turn (nested vmaps): argument k is mapped over the
    groups in ``uses[k]``, its leading dimensions in group order; every result over all."""
    if not groups:
        return fn(*args)
    group, rest = groups[0], groups[1:]
    in_axes = tuple(0 if group in used else None for used in uses)
    return vmap(lambda *inner: _map_groups(fn, rest, uses, list(inner)), in_axes=in_axes)(*args)


def batched_scratch(value: Any, axes: Sequence[int], grid: tuple[int, ...]) -> Any:
    """``value`` (a scratch buffer) repeated for every point of the parallel ``axes``."""
    lead = tuple(grid[a] for a in axes)
    shape = tuple(value.shape) if hasattr(value, "shape") else ()
    return broadcast_in_dim(value, lead + shape, tuple(range(len(lead), len(lead) + len(shape))))
