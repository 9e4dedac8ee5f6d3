"""A Ref of the kernel as the Triton function sees it, and the pointers an index reads.

Each kernel Ref is the block of an input or output array that this program works on. The
function gets a pointer to the start of the whole array; ``RefBlock`` adds where the block
starts in each array dimension (from the BlockSpec's index map, computed once at the top of
the function), the array's row-major strides, and which dimensions the block may overrun
(the array's size is not a multiple of the block's): reads and writes there are masked, so a
block that hangs over the edge reads zeros and writes nothing outside the array, as interpret
mode pads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ember_plugin_kit.triton.emitter import INDEX_DTYPE, Emitter, Pointer, Value
from ember_plugin_kit.triton.tensors import arange, broadcast_to, convert, expand_dims


@dataclass(frozen=True)
class BlockDim:
    """One dimension of the block as the kernel sees it."""

    size: int  # the Ref's size along this dimension
    start: Value  # i32 scalar: the array index of the block's first element
    extent: int  # the array's size along this dimension
    stride: int  # elements between neighbours along this dimension in the array

    @property
    def may_overrun(self) -> bool:
        return self.extent % self.size != 0


@dataclass(frozen=True)
class RefBlock:
    base: Pointer  # a scalar pointer to the array's first element
    dims: tuple[BlockDim, ...]
    # i32 scalar: the element offset contributed by the block's squeezed dimensions (a
    # BlockSpec dim of None: the kernel sees one index of it and not the dimension)
    squeezed_offset: Value | None

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(d.size for d in self.dims)

    @property
    def dtype(self) -> np.dtype:
        return self.base.dtype


@dataclass(frozen=True)
class Addresses:
    """The pointers one indexed access touches, and the mask of those inside the array (None:
    all are)."""

    pointers: Pointer
    mask: Value | None

    @property
    def shape(self) -> tuple[int, ...]:
        return self.pointers.shape


def _index(e: Emitter, x: Any) -> Value:
    """A static int or a traced scalar as an i32 scalar."""
    if isinstance(x, Value):
        if x.shape:
            raise ValueError(f"an index must be a scalar, got shape {x.shape}")
        return convert(e, x, INDEX_DTYPE)
    return e.constant(int(x), INDEX_DTYPE)


def _add(e: Emitter, x: Value, y: Value) -> Value:
    shape = np.broadcast_shapes(x.shape, y.shape)
    x, y = broadcast_to(e, x, shape), broadcast_to(e, y, shape)
    return e.op(f"arith.addi {x.name}, {y.name} : {x.type}", shape, INDEX_DTYPE)


def _mul(e: Emitter, x: Value, k: int) -> Value:
    if k == 1:
        return x
    factor = e.constant(k, INDEX_DTYPE, x.shape)
    return e.op(f"arith.muli {x.name}, {factor.name} : {x.type}", x.shape, INDEX_DTYPE)


def _less_than(e: Emitter, x: Value, bound: int) -> Value:
    limit = e.constant(bound, INDEX_DTYPE, x.shape)
    return e.op(f"arith.cmpi slt, {x.name}, {limit.name} : {x.type}", x.shape, np.bool_)


def _and(e: Emitter, x: Value | None, y: Value) -> Value:
    if x is None:
        return y
    shape = np.broadcast_shapes(x.shape, y.shape)
    x, y = broadcast_to(e, x, shape), broadcast_to(e, y, shape)
    return e.op(f"arith.andi {x.name}, {y.name} : {x.type}", shape, np.bool_)


def is_slice(entry: Any) -> bool:
    """A ``Slice`` of an indexer (``start``, static ``size``, ``stride``); anything else is a
    scalar index."""
    return hasattr(entry, "start") and hasattr(entry, "size")


def addresses(e: Emitter, ref: RefBlock, entries: Sequence[Any]) -> Addresses:
    """The pointers of ``ref[entries]``: one entry per Ref dimension, a ``Slice`` (keeps the
    dimension, ``size`` long) or a scalar index (drops it)."""
    if len(entries) != len(ref.dims):
        raise ValueError(f"{len(entries)} indices for a Ref of rank {len(ref.dims)}")
    out_rank = sum(1 for entry in entries if is_slice(entry))
    out_shape = tuple(entry.size for entry in entries if is_slice(entry))
    offset = ref.squeezed_offset
    mask = None
    position = 0
    for dim, entry in zip(ref.dims, entries):
        if is_slice(entry):
            # start + stride * [0..size) along this result dimension, 1 elsewhere
            along = _mul(e, arange(e, entry.size), int(getattr(entry, "stride", 1) or 1))
            if isinstance(entry.start, Value) or entry.start != 0:
                along = _add(e, along, _index(e, entry.start))
            for _ in range(position):
                along = expand_dims(e, along, 0)
            for _ in range(out_rank - position - 1):
                along = expand_dims(e, along, len(along.shape))
            position += 1
        else:
            along = _index(e, entry)
        element = _add(e, along, dim.start)  # the array index along this dimension
        if dim.may_overrun:
            mask = _and(e, mask, _less_than(e, element, dim.extent))
        term = _mul(e, element, dim.stride)
        offset = term if offset is None else _add(e, offset, term)
    if offset is None:
        offset = e.constant(0, INDEX_DTYPE)
    offset = broadcast_to(e, offset, out_shape)
    base = ref.base
    if out_shape:
        splatted = Pointer(e.fresh(), out_shape, base.dtype)
        e.line(f"{splatted.name} = tt.splat {base.name} : {base.type} -> {splatted.type}")
        base = splatted
    pointers = e.fresh()
    e.line(f"{pointers} = tt.addptr {base.name}, {offset.name} : {base.type}, {offset.type}")
    if mask is not None:
        mask = broadcast_to(e, mask, out_shape)
    return Addresses(Pointer(pointers, out_shape, base.dtype), mask)
