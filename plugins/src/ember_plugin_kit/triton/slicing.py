"""Rules that cut values apart and put them together: ``slice``, ``dynamic_slice`` of one
element, ``concatenate`` and ``rev``.

Triton has no op that takes a part of a tensor, only ``tt.split`` (a tensor whose last
dimension is 2 into its two halves) and ``tt.join`` (the inverse). So a slice is lowered when
it picks whole power-of-two pieces: viewing a dimension of size ``n`` as
``(n / (size * stride), size, stride)``, a slice of ``size`` elements ``stride`` apart is one
index along the first and one along the last of those axes, and one index of a power-of-two
axis is reached by halving it with ``tt.split`` (one bit of the index per split). That covers
``x[:, :k]``, ``x[:, k:2k]``, ``x[::2]``, ``x[1::2]`` and ``x[i]`` for static ``i``.
Concatenating 2, 4, 8... equal power-of-two pieces is a tree of ``tt.join``; reversing
(``rev``, ``flip``) swaps the halves at every bit of the index. One element at a
traced index (``dynamic_slice`` of size 1, ``x[i]``) is a select of that element and a max
along the dimension. Anything else cannot be a register tensor and is refused with the
Ref-slice form that expresses it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember_plugin_kit.triton.arithmetic import select
from ember_plugin_kit.triton.context import KernelContext, rule
from ember_plugin_kit.triton.emitter import (
    INDEX_DTYPE,
    Emitter,
    Value,
    element_type,
    is_float,
    tensor_type,
)
from ember_plugin_kit.triton.reductions import reduce_axis
from ember_plugin_kit.triton.tensors import arange, broadcast_to, convert, expand_dims, reshape


def _is_power_of_two(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def _permute(e: Emitter, x: Value, order: Sequence[int]) -> Value:
    order = tuple(order)
    if order == tuple(range(len(order))):
        return x
    shape = tuple(x.shape[i] for i in order)
    out_type = tensor_type(shape, element_type(x.dtype))
    attr = ", ".join(str(i) for i in order)
    return e.op(
        f"tt.trans {x.name} {{order = array<i32: {attr}>}} : {x.type} -> {out_type}", shape, x.dtype
    )


def _split(e: Emitter, x: Value) -> tuple[Value, Value]:
    """The two halves of ``x``, whose last dimension is 2."""
    shape = x.shape[:-1]
    out_type = tensor_type(shape, element_type(x.dtype))
    lo, hi = e.fresh(), e.fresh()
    e.line(f"{lo}, {hi} = tt.split {x.name} : {x.type} -> {out_type}")
    return Value(lo, shape, x.dtype), Value(hi, shape, x.dtype)


def pick(e: Emitter, x: Value, axis: int, index: int) -> Value:
    """``x`` at static ``index`` along ``axis`` (a power-of-two size), the axis removed."""
    rank = len(x.shape)
    rest = [d for d in range(rank) if d != axis]
    kept_shape = tuple(x.shape[d] for d in rest)
    if x.shape[axis] == 1:
        return reshape(e, x, kept_shape)
    # The picked axis goes last (tt.split halves the last one); a leading 1 keeps the result
    # a tensor, as Triton has no 0-d tensors.
    x = _permute(e, x, [*rest, axis])
    if not kept_shape:
        x = reshape(e, x, (1, x.shape[0]))
    while x.shape[-1] > 1:
        size = x.shape[-1]
        if size > 2:  # element c of the axis is (c // 2, c % 2)
            x = reshape(e, x, (*x.shape[:-1], size // 2, 2))
        lo, hi = _split(e, x)
        x = hi if index % 2 else lo
        index //= 2
        if size == 2:
            break
    return reshape(e, x, kept_shape)


def slice_dimension(e: Emitter, x: Value, axis: int, start: int, size: int, stride: int):
    """``x[start : start + size * stride : stride]`` along ``axis``, or None when that is not a
    choice of whole power-of-two pieces (see the module's docstring)."""
    n = x.shape[axis]
    if start == 0 and size == n and stride == 1:
        return x
    block = size * stride
    if not (_is_power_of_two(size) and _is_power_of_two(stride) and n % block == 0):
        return None
    chunk, offset = divmod(start, block)
    if offset >= stride:
        return None
    view = (*x.shape[:axis], n // block, size, stride, *x.shape[axis + 1 :])
    x = reshape(e, x, view)
    x = pick(e, x, axis + 2, offset)
    return pick(e, x, axis, chunk)


@rule("slice")
def _slice(kctx: KernelContext, eqn, x: Value) -> list:
    starts = eqn.params["start_indices"]
    limits = eqn.params["limit_indices"]
    strides = eqn.params["strides"] or (1,) * len(starts)
    out_shape = tuple(eqn.outvars[0].aval.shape)
    for axis, (start, stride) in enumerate(zip(starts, strides)):
        sliced = slice_dimension(kctx.emitter, x, axis, start, out_shape[axis], stride)
        if sliced is None:
            raise kctx.fail(
                "slice",
                f"elements {start}:{limits[axis]}:{stride} of dimension {axis} of a value of "
                f"shape {x.shape}: a register tensor can only be cut into power-of-two pieces "
                "at multiples of their size; slice the Ref instead "
                "(x_ref[:, pl.ds(start, size)]) and mask what lies past the end",
            )
        x = sliced
    return [x]


def _positions(e: Emitter, axis: int, shape: Sequence[int]) -> Value:
    """The index along ``axis`` of each element of a tensor of ``shape`` (unit dims
    elsewhere)."""
    along = arange(e, shape[axis])
    for _ in range(axis):
        along = expand_dims(e, along, 0)
    while len(along.shape) < len(shape):
        along = expand_dims(e, along, len(along.shape))
    return along


def at_index(kctx: KernelContext, axis: int, shape: Sequence[int], index: Any) -> Value:
    """A boolean tensor (unit dims but along ``axis``): whether an element's index along
    ``axis`` is ``index`` (an int or a traced scalar)."""
    e = kctx.emitter
    along = _positions(e, axis, shape)
    if isinstance(index, Value):
        index = broadcast_to(e, convert(e, index, INDEX_DTYPE), along.shape)
    else:
        index = e.constant(int(index), INDEX_DTYPE, along.shape)
    return e.op(f"arith.cmpi eq, {along.name}, {index.name} : {along.type}", along.shape, np.bool_)


def _lowest(dtype: np.dtype):
    if is_float(dtype):
        return -np.inf
    return np.iinfo(dtype).min if np.dtype(dtype).kind == "i" else 0


def take(kctx: KernelContext, x: Value, axis: int, index: Value) -> Value:
    """``x`` at a traced ``index`` along ``axis``: every other element replaced by the lowest
    value, then the maximum along the axis (exact, NaN and -0.0 included)."""
    e = kctx.emitter
    hit = broadcast_to(e, at_index(kctx, axis, x.shape, index), x.shape)
    filler = e.constant(_lowest(x.dtype), x.dtype, x.shape)
    return reduce_axis(kctx, select(kctx, hit, x, filler), axis, "max")


def _clamped(kctx: KernelContext, index: Value, high: int) -> Value:
    """``index`` as i32, clamped to ``[0, high]`` (as XLA clamps a dynamic slice's start)."""
    e = kctx.emitter
    index = convert(e, index, INDEX_DTYPE)
    zero, top = e.constant(0, INDEX_DTYPE), e.constant(high, INDEX_DTYPE)
    index = e.op(f"arith.maxsi {index.name}, {zero.name} : i32", (), INDEX_DTYPE)
    return e.op(f"arith.minsi {index.name}, {top.name} : i32", (), INDEX_DTYPE)


@rule("dynamic_slice")
def _dynamic_slice(kctx: KernelContext, eqn, x: Value, *starts: Value) -> list:
    # x[i] at a traced i: one element of a dimension (a select and a max, see ``take``).
    sizes = tuple(eqn.params["slice_sizes"])
    for axis, (size, start) in enumerate(zip(sizes, starts)):
        if size == x.shape[axis]:
            continue  # the whole dimension: XLA clamps its start to 0
        if size != 1:
            raise kctx.fail(
                "dynamic_slice",
                f"{size} elements of dimension {axis} of a value of shape {x.shape} from a "
                "traced start: a register tensor gives one element at a traced index; slice "
                "the Ref instead (x_ref[pl.ds(start, size)])",
            )
        index = start if isinstance(start, Value) else kctx.emitter.constant(start, INDEX_DTYPE)
        taken = take(kctx, x, axis, _clamped(kctx, index, x.shape[axis] - 1))
        x = expand_dims(kctx.emitter, taken, axis) if taken.shape else taken
    return [reshape(kctx.emitter, x, sizes)]


def join(e: Emitter, x: Value, y: Value, axis: int) -> Value:
    """``x`` followed by ``y`` (of the same shape) along ``axis``."""
    stacked = _join_last(e, x, y)
    # Element (..., i, ..., b) goes to b * n + i along axis: move b just before the axis.
    rank = len(x.shape)
    order = [*range(axis), rank, *range(axis, rank)]
    stacked = _permute(e, stacked, order)
    merged = (*x.shape[:axis], 2 * x.shape[axis], *x.shape[axis + 1 :])
    return reshape(e, stacked, merged)


def _swap_halves(e: Emitter, x: Value, axis: int) -> Value:
    """``x`` with its two elements along ``axis`` (of size 2) swapped."""
    if x.shape == (2,):  # a leading 1 keeps the halves tensors (Triton has no 0-d ones)
        return reshape(e, _swap_halves(e, reshape(e, x, (1, 2)), 1), (2,))
    rank = len(x.shape)
    to_last = [*(d for d in range(rank) if d != axis), axis]
    lo, hi = _split(e, _permute(e, x, to_last))
    back = [to_last.index(d) for d in range(rank)]
    return _permute(e, _join_last(e, hi, lo), back)


def _join_last(e: Emitter, x: Value, y: Value) -> Value:
    shape = (*x.shape, 2)
    out_type = tensor_type(shape, element_type(x.dtype))
    return e.op(f"tt.join {x.name}, {y.name} : {x.type} -> {out_type}", shape, x.dtype)


@rule("rev")
def _rev(kctx: KernelContext, eqn, x: Value) -> list:
    # Reversing n = 2**k elements complements every bit of the index: view the axis as k
    # axes of size 2 and swap the two elements along each.
    e = kctx.emitter
    for axis in eqn.params["dimensions"]:
        n = x.shape[axis]
        if n == 1:
            continue
        bits = n.bit_length() - 1  # n is a power of two, as every Triton tensor's size
        shape = x.shape
        x = reshape(e, x, (*shape[:axis], *(2,) * bits, *shape[axis + 1 :]))
        for bit in range(bits):
            x = _swap_halves(e, x, axis + bit)
        x = reshape(e, x, shape)
    return [x]


@rule("concatenate")
def _concatenate(kctx: KernelContext, eqn, *parts: Value) -> list:
    axis = eqn.params["dimension"]
    shapes = {p.shape for p in parts}
    if len(shapes) != 1 or not _is_power_of_two(len(parts)) or parts[0].shape == ():
        raise kctx.fail(
            "concatenate",
            f"{len(parts)} pieces of shapes {[p.shape for p in parts]} along axis {axis}: "
            "Triton joins only 2, 4, 8... pieces of one power-of-two shape; write the pieces "
            "into slices of the output Ref instead (o_ref[:, pl.ds(start, size)] = piece)",
        )
    e = kctx.emitter
    pieces = list(parts)
    while len(pieces) > 1:
        pieces = [join(e, a, b, axis) for a, b in zip(pieces[::2], pieces[1::2])]
    return pieces
