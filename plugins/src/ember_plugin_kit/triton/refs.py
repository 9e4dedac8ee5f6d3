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
from ember_plugin_kit.triton.indexing import SliceEntry
from ember_plugin_kit.triton.tensors import arange, broadcast_to, convert, expand_dims

# Offsets into an array of at least this many elements are i64: i32 ones would wrap.
I64_OFFSETS_FROM = 2**31


def offset_dtype(num_elements: int) -> np.dtype:
    """The integer type of element offsets into an array of ``num_elements``: i32, as Triton's
    own offsets, unless the array is too large for them."""
    return np.dtype(np.int64) if num_elements >= I64_OFFSETS_FROM else INDEX_DTYPE


@dataclass(frozen=True)
class BlockDim:
    """One dimension of the block as the kernel sees it."""

    size: int  # the Ref's size along this dimension
    start: Value  # scalar of the Ref's offset dtype: the array index of the block's first element
    extent: int  # the array's size along this dimension
    stride: int  # elements between neighbours along this dimension in the array

    @property
    def may_overrun(self) -> bool:
        return self.extent % self.size != 0


@dataclass(frozen=True)
class RefBlock:
    base: Pointer  # a scalar pointer to the array's first element
    dims: tuple[BlockDim, ...]
    # scalar of offset_dtype: the element offset contributed by the block's squeezed
    # dimensions (a BlockSpec dim of None: the kernel sees one index of it and not the dim)
    squeezed_offset: Value | None
    offset_dtype: np.dtype = INDEX_DTYPE  # i64 for arrays too large for i32 offsets

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


def _index(e: Emitter, x: Any, dtype: np.dtype) -> Value:
    """A static int or a traced integer scalar or array, as ``dtype``."""
    if isinstance(x, Value):
        return convert(e, x, dtype)
    return e.constant(int(x), dtype)


def _add(e: Emitter, x: Value, y: Value) -> Value:
    shape = np.broadcast_shapes(x.shape, y.shape)
    x, y = broadcast_to(e, x, shape), broadcast_to(e, y, shape)
    return e.op(f"arith.addi {x.name}, {y.name} : {x.type}", shape, x.dtype)


def _mul(e: Emitter, x: Value, k: int) -> Value:
    if k == 1:
        return x
    factor = e.constant(k, x.dtype, x.shape)
    return e.op(f"arith.muli {x.name}, {factor.name} : {x.type}", x.shape, x.dtype)


def _less_than(e: Emitter, x: Value, bound: int) -> Value:
    limit = e.constant(bound, x.dtype, x.shape)
    return e.op(f"arith.cmpi slt, {x.name}, {limit.name} : {x.type}", x.shape, np.bool_)


def _and(e: Emitter, x: Value | None, y: Value) -> Value:
    if x is None:
        return y
    shape = np.broadcast_shapes(x.shape, y.shape)
    x, y = broadcast_to(e, x, shape), broadcast_to(e, y, shape)
    return e.op(f"arith.andi {x.name}, {y.name} : {x.type}", shape, np.bool_)


def _shape_of(entry: Any) -> tuple[int, ...]:
    return entry.shape if isinstance(entry, Value) else ()


@dataclass(frozen=True)
class _Layout:
    """Where each indexed dimension lands in the result (NumPy's rules): the integer entries
    (scalars and arrays) broadcast to ``int_shape``, placed at ``int_at`` (where the first is
    when they are adjacent, in front otherwise); the slices' sizes around them in order."""

    shape: tuple[int, ...]
    int_shape: tuple[int, ...]
    int_at: int


def _layout(entries: Sequence[Any]) -> _Layout:
    is_int = [not isinstance(entry, SliceEntry) for entry in entries]
    sizes = [entry.size for entry in entries if isinstance(entry, SliceEntry)]
    positions = [d for d, i in enumerate(is_int) if i]
    shapes = [_shape_of(entry) for entry, i in zip(entries, is_int) if i]
    int_shape = tuple(np.broadcast_shapes(*shapes)) if shapes else ()
    if positions and positions[-1] - positions[0] + 1 != len(positions):
        int_at = 0
    else:
        int_at = sum(1 for d in range(positions[0] if positions else 0) if not is_int[d])
    return _Layout(tuple(sizes[:int_at]) + int_shape + tuple(sizes[int_at:]), int_shape, int_at)


def _placed(e: Emitter, x: Value, at: int, rank: int) -> Value:
    """``x`` (a tensor) with unit dimensions added so that its dimensions start at ``at`` in a
    result of ``rank``."""
    for _ in range(at):
        x = expand_dims(e, x, 0)
    while len(x.shape) < rank:
        x = expand_dims(e, x, len(x.shape))
    return x


def addresses(e: Emitter, ref: RefBlock, entries: Sequence[Any]) -> Addresses:
    """The pointers of ``ref[entries]``: one entry per Ref dimension, a ``SliceEntry`` (keeps
    the dimension, ``size`` long), a scalar index (drops it) or an integer array (a gather or
    scatter: the result has the arrays' broadcast shape there, see ``_Layout``)."""
    if len(entries) != len(ref.dims):
        raise ValueError(f"{len(entries)} indices for a Ref of rank {len(ref.dims)}")
    layout = _layout(entries)
    out_shape, rank = layout.shape, len(layout.shape)
    dtype = ref.offset_dtype
    offset = ref.squeezed_offset
    mask = None
    slices_seen = 0
    for dim, entry in zip(ref.dims, entries):
        if isinstance(entry, SliceEntry):
            # start + stride * [0..size) along this result dimension, 1 elsewhere
            along = _mul(e, convert(e, arange(e, entry.size), dtype), entry.stride)
            if isinstance(entry.start, Value) or entry.start != 0:
                along = _add(e, along, _index(e, entry.start, dtype))
            position = slices_seen + (len(layout.int_shape) if slices_seen >= layout.int_at else 0)
            along = _placed(e, along, position, rank)
            slices_seen += 1
        else:
            along = _index(e, entry, dtype)
            if along.shape:  # an index array: right-aligned in the integer entries' shape
                along = _placed(
                    e, along, layout.int_at + len(layout.int_shape) - len(along.shape), rank
                )
        element = _add(e, along, dim.start)  # the array index along this dimension
        if dim.may_overrun:
            mask = _and(e, mask, _less_than(e, element, dim.extent))
        term = _mul(e, element, dim.stride)
        offset = term if offset is None else _add(e, offset, term)
    if offset is None:
        offset = e.constant(0, dtype)
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
