"""A Pallas kernel (``PallasCall``) as a Triton-dialect module: ``lower_kernel``.

The module has one ``tt.func`` taking a pointer per input and then per output array. Each
program of the grid (``tt.get_program_id`` x/y/z for grid axes 0/1/2) evaluates every
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

# The rule modules register their rules in context.RULES when imported.
from ember_plugin_kit.triton import (
    arithmetic as arithmetic,
    control_flow as control_flow,
    memory as memory,
    reductions as reductions,
    shapes as shapes,
)
from ember_plugin_kit.triton.context import KernelContext
from ember_plugin_kit.triton.emitter import INDEX_DTYPE, Pointer, Value, memory_element_type
from ember_plugin_kit.triton.refs import BlockDim, RefBlock
from ember_plugin_kit.triton.tensors import convert

_AXES = ("x", "y", "z")


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


def launch_grid(grid: Sequence[int], name: str) -> tuple[int, int, int]:
    """The CUDA grid of a Pallas grid: axis 0 is x, 1 is y, 2 is z."""
    grid = tuple(int(g) for g in grid)
    if len(grid) > 3:
        raise NotImplementedError(
            f"Pallas kernel {name!r} has a grid of rank {len(grid)}; the Triton lowering "
            "supports at most 3 grid axes; use interpret=True"
        )
    if any(g > 65535 for g in grid[1:]):
        raise NotImplementedError(
            f"Pallas kernel {name!r} has grid {grid}: CUDA allows at most 65535 programs along "
            "grid axes 1 and 2; put the largest axis first"
        )
    padded = grid + (1,) * (3 - len(grid))
    return padded[0], padded[1], padded[2]


def _block_shape(mapping: Any) -> tuple[int | None, ...]:
    shape = getattr(mapping, "block_shape", None)
    array_shape = tuple(mapping.array_aval.shape)
    if shape is None:
        return array_shape
    return tuple(shape)


def _ref_block(
    kctx: KernelContext, pointer: Pointer, mapping: Any, program_ids: Sequence[Value]
) -> RefBlock:
    """Where this program's block of ``mapping``'s array is: its index map evaluated on the
    program ids, times the block shape."""
    e = kctx.emitter
    array_shape = tuple(mapping.array_aval.shape)
    block_shape = _block_shape(mapping)
    index_map = getattr(mapping, "index_map", None)
    if index_map is None:
        block_indices: list[Any] = [0] * len(array_shape)
    else:
        block_indices = kctx.lower_closed(index_map, list(program_ids))
    if len(block_indices) != len(array_shape) or len(block_shape) != len(array_shape):
        raise ValueError(
            f"Pallas kernel {kctx.name!r}: a block shape {block_shape} or index map with "
            f"{len(block_indices)} results for an array of shape {array_shape}"
        )
    dims = []
    squeezed = None
    for d, (size, index) in enumerate(zip(block_shape, block_indices)):
        stride = math.prod(array_shape[d + 1 :])
        index = (
            convert(e, index, INDEX_DTYPE)
            if isinstance(index, Value)
            else (e.constant(int(index), INDEX_DTYPE))
        )
        step = 1 if size is None else int(size)
        start = index
        if step != 1:
            factor = e.constant(step, INDEX_DTYPE)
            start = e.op(f"arith.muli {index.name}, {factor.name} : i32", (), INDEX_DTYPE)
        if size is None:  # squeezed: the kernel sees one index of this dimension
            term = start
            if stride != 1:
                k = e.constant(stride, INDEX_DTYPE)
                term = e.op(f"arith.muli {start.name}, {k.name} : i32", (), INDEX_DTYPE)
            squeezed = (
                term
                if squeezed is None
                else e.op(f"arith.addi {squeezed.name}, {term.name} : i32", (), INDEX_DTYPE)
            )
        else:
            dims.append(BlockDim(step, start, array_shape[d], stride))
    return RefBlock(pointer, tuple(dims), squeezed)


def lower_kernel(call: Any) -> TritonKernel:
    """The Triton module of ``call`` (a ``PallasCall``)."""
    name = kernel_name(call.name)
    grid = launch_grid(call.grid, name)
    kctx = KernelContext(name, call.grid)
    kernel = call.kernel
    mappings = list(call.block_mappings)
    refs_in = kernel.jaxpr.invars
    if len(refs_in) != len(mappings):
        scratch = len(refs_in) - len(mappings)
        raise NotImplementedError(
            f"Pallas kernel {name!r} has {scratch} scratch operands, which the Triton lowering "
            "does not support; use interpret=True"
        )
    pointers = [
        Pointer(f"%arg{i}", (), np.dtype(m.array_aval.dtype)) for i, m in enumerate(mappings)
    ]
    e = kctx.emitter
    program_ids = [
        e.op(f"tt.get_program_id {_AXES[axis]} : i32", (), INDEX_DTYPE)
        for axis in range(len(call.grid))
    ]
    blocks = [_ref_block(kctx, p, m, program_ids) for p, m in zip(pointers, mappings)]
    kctx.lower_closed(kernel, blocks)
    e.line("tt.return")
    params = ", ".join(
        f"{p.name}: !tt.ptr<{memory_element_type(p.dtype)}> {{tt.divisibility = 16 : i32}}"
        for p in pointers
    )
    body = "\n".join(e.lines)
    text = f"module {{\n  tt.func public @{name}({params}) {{\n{body}\n  }}\n}}\n"
    return TritonKernel(name, text, grid)
