"""Rules that cut values apart and put them together: static ``slice`` and ``concatenate``.

Triton has no op that takes a part of a tensor, only ``tt.split`` (a tensor whose last
dimension is 2 into its two halves) and ``tt.join`` (the inverse). So a slice is lowered when
it picks whole power-of-two pieces: viewing a dimension of size ``n`` as
``(n / (size * stride), size, stride)``, a slice of ``size`` elements ``stride`` apart is one
index along the first and one along the last of those axes, and one index of a power-of-two
axis is reached by halving it with ``tt.split`` (one bit of the index per split). That covers
``x[:, :k]``, ``x[:, k:2k]``, ``x[::2]``, ``x[1::2]`` and ``x[i]`` for static ``i``.
Concatenating 2, 4, 8... equal power-of-two pieces is a tree of ``tt.join``. Anything else
cannot be a register tensor and is refused with the Ref-slice form that expresses it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ember_plugin_kit.triton.context import KernelContext, rule
from ember_plugin_kit.triton.emitter import Emitter, Value, element_type, tensor_type
from ember_plugin_kit.triton.tensors import reshape


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


def join(e: Emitter, x: Value, y: Value, axis: int) -> Value:
    """``x`` followed by ``y`` (of the same shape) along ``axis``."""
    stacked_shape = (*x.shape, 2)
    out_type = tensor_type(stacked_shape, element_type(x.dtype))
    stacked = e.op(f"tt.join {x.name}, {y.name} : {x.type} -> {out_type}", stacked_shape, x.dtype)
    # Element (..., i, ..., b) goes to b * n + i along axis: move b just before the axis.
    rank = len(x.shape)
    order = [*range(axis), rank, *range(axis, rank)]
    stacked = _permute(e, stacked, order)
    merged = (*x.shape[:axis], 2 * x.shape[axis], *x.shape[axis + 1 :])
    return reshape(e, stacked, merged)


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
