"""Rules that move elements around without computing: broadcast, reshape, iota, transpose."""

from __future__ import annotations

from ember_plugin_kit.triton.context import KernelContext, rule
from ember_plugin_kit.triton.emitter import Value, element_type, tensor_type
from ember_plugin_kit.triton.tensors import (
    arange,
    broadcast_to,
    check_power_of_two,
    convert,
    expand_dims,
    reshape,
)


@rule("broadcast_in_dim")
def _broadcast_in_dim(kctx: KernelContext, eqn, x: Value, *dynamic_shape) -> list:
    if dynamic_shape:
        raise kctx.fail("broadcast_in_dim", "a dynamic shape")
    e = kctx.emitter
    shape = tuple(eqn.params["shape"])
    kept = tuple(eqn.params["broadcast_dimensions"])
    if x.shape:
        # Insert a unit dim wherever the result has one the operand lacks; the kept dims are
        # increasing, so inserting in result order lands each at its final position.
        for d in range(len(shape)):
            if d not in kept:
                x = expand_dims(e, x, d)
    check_power_of_two(shape, "a broadcast's result")
    return [broadcast_to(e, x, shape)]


@rule("reshape", "squeeze", "expand_dims")
def _reshape(kctx: KernelContext, eqn, x: Value, *dynamic_shape) -> list:
    if dynamic_shape:
        raise kctx.fail(eqn.primitive.name, "a dynamic shape")
    return [reshape(kctx.emitter, x, tuple(eqn.outvars[0].aval.shape))]


@rule("iota")
def _iota(kctx: KernelContext, eqn, *dynamic_shape) -> list:
    if dynamic_shape:
        raise kctx.fail("iota", "a dynamic shape")
    e = kctx.emitter
    shape = tuple(eqn.params["shape"])
    dimension = eqn.params["dimension"]
    values = arange(e, shape[dimension])
    for d in range(len(shape)):
        if d != dimension:
            values = expand_dims(e, values, d)
    values = broadcast_to(e, values, shape)
    return [convert(e, values, eqn.params["dtype"])]


@rule("transpose")
def _transpose(kctx: KernelContext, eqn, x: Value) -> list:
    order = tuple(eqn.params["permutation"])
    if order == tuple(range(len(order))):
        return [x]
    shape = tuple(x.shape[i] for i in order)
    order_attr = ", ".join(str(i) for i in order)
    out_type = tensor_type(shape, element_type(x.dtype))
    return [
        kctx.emitter.op(
            f"tt.trans {x.name} {{order = array<i32: {order_attr}>}} : {x.type} -> {out_type}",
            shape,
            x.dtype,
        )
    ]


def transpose_2d(kctx: KernelContext, x: Value) -> Value:
    out_type = tensor_type(x.shape[::-1], element_type(x.dtype))
    return kctx.emitter.op(
        f"tt.trans {x.name} {{order = array<i32: 1, 0>}} : {x.type} -> {out_type}",
        x.shape[::-1],
        x.dtype,
    )
