"""A Pallas kernel (``PallasCall``) as a Triton-dialect module: ``lower_kernel``.

The module has one ``tt.func`` taking a pointer per input and then per output array. Each
program of the grid (``grid``: its indices from ``tt.get_program_id``) evaluates every
BlockSpec's index map on its program ids to find where its blocks start, and then runs the
kernel's equations on those blocks (see ``refs``). The result is MLIR text;
``bytecode.to_bytecode`` parses and verifies it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

# Importing the rule modules registers their rules in context.RULES.
from ember_plugin_kit.triton import (
    arithmetic as arithmetic,
    control_flow as control_flow,
    grid as grid_axes,
    memory as memory,
    printing as printing,
    reductions as reductions,
    scratch as scratch,
    shapes as shapes,
    slicing as slicing,
)
from ember_plugin_kit.triton.context import KernelContext
from ember_plugin_kit.triton.emitter import Pointer, Value, memory_element_type
from ember_plugin_kit.triton.refs import BlockDim, RefBlock, offset_dtype
from ember_plugin_kit.triton.tensors import convert


@dataclass(frozen=True)
class TritonKernel:
    """A lowered kernel: the function's name, the module's text, and the launch grid
    (x, y, z)."""

    name: str
    text: str
    grid: tuple[int, int, int]


def kernel_name(name: str) -> str:
    """``name`` as a PTX symbol (letters, digits and underscores, not starting with a digit)."""
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", name or "kernel")
    return cleaned if not cleaned[0].isdigit() else "_" + cleaned


def _times(kctx: KernelContext, x: Value, k: int) -> Value:
    if k == 1:
        return x
    factor = kctx.emitter.constant(k, x.dtype)
    return kctx.emitter.op(f"arith.muli {x.name}, {factor.name} : {x.type}", (), x.dtype)


def _ref_block(
    kctx: KernelContext, pointer: Pointer, mapping: Any, program_ids: Sequence[Value]
) -> RefBlock:
    """Where this program's block of ``mapping``'s array is: its index map evaluated on the
    program ids, times the block shape (a squeezed dimension's index is its element's)."""
    e = kctx.emitter
    array_shape = tuple(mapping.array_aval.shape)
    block_shape = tuple(mapping.block_shape)
    block_indices = kctx.lower_closed(mapping.index_map, list(program_ids))
    if len(block_indices) != len(array_shape) or len(block_shape) != len(array_shape):
        raise ValueError(
            f"Pallas kernel {kctx.name!r}: block shape {block_shape} and an index map with "
            f"{len(block_indices)} results for an array of shape {array_shape}"
        )
    dtype = offset_dtype(math.prod(array_shape))
    dims = []
    squeezed = None
    for d, (size, index) in enumerate(zip(block_shape, block_indices)):
        stride = math.prod(array_shape[d + 1 :])
        index = convert(e, index, dtype)
        if size is None:  # squeezed: the kernel sees one index of this dimension
            term = _times(kctx, index, stride)
            if squeezed is not None:
                term = e.op(f"arith.addi {squeezed.name}, {term.name} : {term.type}", (), dtype)
            squeezed = term
        else:
            start = _times(kctx, index, int(size))
            dims.append(BlockDim(int(size), start, array_shape[d], stride))
    return RefBlock(pointer, tuple(dims), squeezed, dtype)


def lower_kernel(call: Any) -> TritonKernel:
    """The Triton module of ``call`` (a ``PallasCall``)."""
    name = kernel_name(call.name)
    grid = grid_axes.launch_grid(call.grid, name)
    kctx = KernelContext(name, call.grid)
    kernel = call.kernel
    mappings = list(call.block_mappings)
    scratch_avals = [v.aval for v in kernel.jaxpr.invars[len(mappings) :]]
    pointers = [
        Pointer(f"%arg{i}", (), np.dtype(m.array_aval.dtype)) for i, m in enumerate(mappings)
    ]
    e = kctx.emitter
    kctx.program_ids = grid_axes.program_ids(e, call.grid)
    blocks = [_ref_block(kctx, p, m, kctx.program_ids) for p, m in zip(pointers, mappings)]
    # scratch_shapes: Refs the kernel gets after its outputs, kept in registers
    scratch_refs = [
        scratch.new_scratch(kctx, aval, f"scratch operand {i}")
        for i, aval in enumerate(scratch_avals)
    ]
    kctx.lower_closed(kernel, [*blocks, *scratch_refs])
    e.line("tt.return")
    params = ", ".join(
        f"{p.name}: !tt.ptr<{memory_element_type(p.dtype)}> {{tt.divisibility = 16 : i32}}"
        for p in pointers
    )
    body = "\n".join(e.lines)
    text = f"module {{\n  tt.func public @{name}({params}) {{\n{body}\n  }}\n}}\n"
    return TritonKernel(name, text, grid)
