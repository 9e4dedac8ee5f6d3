"""Shape and dtype plumbing every rule needs: splat, broadcast, reshape, casts.

Triton's tensors must have power-of-two sizes, so every tensor a kernel makes is checked here
when it is first made (``make_range``) or reshaped; a block shape that is not a power of two
fails with a message that says so instead of an error from deep inside Triton.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ember_plugin_kit.triton.emitter import (
    INDEX_DTYPE,
    Emitter,
    Value,
    element_type,
    is_float,
    is_unsigned,
    tensor_type,
)


def check_power_of_two(shape: Sequence[int], what: str) -> None:
    for d in shape:
        if d < 1 or d & (d - 1):
            raise NotImplementedError(
                f"Triton tensors need power-of-two sizes, but {what} has shape {tuple(shape)}; "
                "pad the block shape to a power of two (and mask), or use interpret=True"
            )


def splat(e: Emitter, x: Value, shape: Sequence[int]) -> Value:
    """A tensor of ``shape`` filled with the scalar ``x``."""
    shape = tuple(shape)
    if not shape:
        return x
    out_type = tensor_type(shape, element_type(x.dtype))
    return e.op(f"tt.splat {x.name} : {x.type} -> {out_type}", shape, x.dtype)


def expand_dims(e: Emitter, x: Value, axis: int) -> Value:
    shape = x.shape[:axis] + (1,) + x.shape[axis:]
    out_type = tensor_type(shape, element_type(x.dtype))
    return e.op(
        f"tt.expand_dims {x.name} {{axis = {axis} : i32}} : {x.type} -> {out_type}",
        shape,
        x.dtype,
    )


def broadcast_to(e: Emitter, x: Value, shape: Sequence[int]) -> Value:
    """``x`` broadcast to ``shape`` NumPy-style (leading dims added, size-1 dims repeated)."""
    shape = tuple(shape)
    if x.shape == shape:
        return x
    if not x.shape:
        return splat(e, x, shape)
    while len(x.shape) < len(shape):
        x = expand_dims(e, x, 0)
    if x.shape == shape:
        return x
    out_type = tensor_type(shape, element_type(x.dtype))
    return e.op(f"tt.broadcast {x.name} : {x.type} -> {out_type}", shape, x.dtype)


def reshape(e: Emitter, x: Value, shape: Sequence[int]) -> Value:
    """``x`` with the same elements in row-major order and a new shape."""
    shape = tuple(shape)
    if x.shape == shape:
        return x
    if not shape:  # a one-element tensor to a scalar
        if x.shape != (1,):
            x = reshape(e, x, (1,))
        return e.op(f"tt.unsplat {x.name} : {x.type}", (), x.dtype)
    if not x.shape:
        return splat(e, x, shape)
    check_power_of_two(shape, "a reshape's result")
    out_type = tensor_type(shape, element_type(x.dtype))
    return e.op(f"tt.reshape {x.name} : {x.type} -> {out_type}", shape, x.dtype)


def arange(e: Emitter, size: int) -> Value:
    """``[0, 1, ..., size - 1]`` as a 1-D i32 tensor."""
    check_power_of_two((size,), "an index range")
    return e.op(
        f"tt.make_range {{end = {size} : i32, start = 0 : i32}} : tensor<{size}xi32>",
        (size,),
        INDEX_DTYPE,
    )


def convert(e: Emitter, x: Value, dtype: np.dtype) -> Value:
    """``x`` converted to ``dtype`` as ``convert_element_type`` does (floats to integers
    truncate toward zero; anything to bool is ``!= 0``)."""
    src, dst = np.dtype(x.dtype), np.dtype(dtype)
    if src == dst:
        return x
    src_type, dst_type = element_type(src), element_type(dst)
    to_type = tensor_type(x.shape, dst_type)
    if dst == np.bool_:
        zero = e.constant(0, src, x.shape)
        cmp = (
            f"arith.cmpf une, {x.name}, {zero.name}"
            if is_float(src)
            else (f"arith.cmpi ne, {x.name}, {zero.name}")
        )
        return e.op(f"{cmp} : {x.type}", x.shape, dst)
    if src_type == dst_type:  # signed <-> unsigned of one width: the bits stay
        return Value(x.name, x.shape, dst)
    if is_float(src) and is_float(dst):
        if src.itemsize == dst.itemsize:  # f16 <-> bf16 goes through f32
            return convert(e, convert(e, x, np.float32), dst)
        op = "arith.extf" if dst.itemsize > src.itemsize else "arith.truncf"
    elif is_float(src):
        op = "arith.fptoui" if is_unsigned(dst) else "arith.fptosi"
    elif is_float(dst):
        op = "arith.uitofp" if is_unsigned(src) else "arith.sitofp"
    elif dst.itemsize > src.itemsize or src == np.bool_:
        op = "arith.extui" if is_unsigned(src) else "arith.extsi"
    else:
        op = "arith.trunci"
    return e.op(f"{op} {x.name} : {x.type} to {to_type}", x.shape, dst)
