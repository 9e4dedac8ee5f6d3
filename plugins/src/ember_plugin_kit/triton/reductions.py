"""Rules that combine elements: ``reduce_*`` (``tt.reduce``), the running ``cumsum``,
``cumprod``, ``cummax`` and ``cummin`` (``tt.scan``) and 2-D ``dot_general`` (``tt.dot``)."""

from __future__ import annotations

import numpy as np

from ember_plugin_kit.triton.arithmetic import BINARY_OPS, kind_index
from ember_plugin_kit.triton.context import KernelContext, rule
from ember_plugin_kit.triton.emitter import Value, element_type, is_float, tensor_type
from ember_plugin_kit.triton.shapes import transpose_2d
from ember_plugin_kit.triton.tensors import arange, broadcast_to, convert, expand_dims

# reduce primitive -> the binary primitive that combines two elements
_COMBINERS = {
    "reduce_sum": "add",
    "reduce_prod": "mul",
    "reduce_max": "max",
    "reduce_min": "min",
    "reduce_and": "and",
    "reduce_or": "or",
    "reduce_xor": "xor",
}


def reduce_axis(kctx: KernelContext, x: Value, axis: int, combiner: str) -> Value:
    """``x`` combined along ``axis`` with the binary primitive ``combiner``."""
    shape = x.shape[:axis] + x.shape[axis + 1 :]
    return _combining(kctx, "tt.reduce", f"axis = {axis} : i32", x, shape, combiner)


def scan_axis(kctx: KernelContext, x: Value, axis: int, reverse: bool, combiner: str) -> Value:
    """The running ``combiner`` of ``x`` along ``axis`` (from the end when ``reverse``)."""
    attributes = f"axis = {axis} : i32, reverse = {'true' if reverse else 'false'}"
    return _combining(kctx, "tt.scan", attributes, x, x.shape, combiner)


def _combining(kctx, op_name: str, attributes: str, x: Value, shape, combiner: str) -> Value:
    """A ``tt.reduce``/``tt.scan`` of ``x`` whose region combines two elements with the
    binary primitive ``combiner``."""
    e = kctx.emitter
    op = BINARY_OPS[combiner][kind_index(x.dtype)]
    if op is None:
        raise kctx.fail(f"{op_name} with {combiner}", f"not defined for {x.dtype}")
    element = element_type(x.dtype)
    out_type = tensor_type(shape, element)
    result = e.fresh()
    a, b = e.fresh(), e.fresh()
    e.line(f'{result} = "{op_name}"({x.name}) <{{{attributes}}}> ({{')
    with e.nested():
        e.line(f"^bb0({a}: {element}, {b}: {element}):")
        combined = e.fresh()
        e.line(f"  {combined} = {op} {a}, {b} : {element}")
        e.line(f"  {op_name}.return {combined} : {element}")
    e.line(f"}}) : ({x.type}) -> {out_type}")
    return Value(result, shape, x.dtype)


def _reduce(name: str):
    combiner = _COMBINERS[name]

    def lower(kctx: KernelContext, eqn, x: Value) -> list:
        for axis in sorted(eqn.params["axes"], reverse=True):  # later axes keep their numbers
            x = reduce_axis(kctx, x, axis, combiner)
        return [x]

    return lower


for _name in _COMBINERS:
    rule(_name)(_reduce(_name))

# cumulative primitive -> the binary primitive of its running combination (cumlogsumexp has
# no single-operation combiner and stays unsupported)
_SCAN_COMBINERS = {"cumsum": "add", "cumprod": "mul", "cummax": "max", "cummin": "min"}


def _scan(name: str):
    combiner = _SCAN_COMBINERS[name]

    def lower(kctx: KernelContext, eqn, x: Value) -> list:
        return [scan_axis(kctx, x, eqn.params["axis"], eqn.params["reverse"], combiner)]

    return lower


for _name in _SCAN_COMBINERS:
    rule(_name)(_scan(_name))


def _input_precision(precision, dtype: np.dtype) -> str:
    """Triton multiplies f32 matrices in TF32 unless asked for full precision (as JAX maps
    ``precision=HIGHEST``)."""
    if np.dtype(dtype) != np.float32:
        return "ieee"
    return "ieee" if "HIGHEST" in str(precision).upper() else "tf32"


@rule("dot_general")
def _dot_general(kctx: KernelContext, eqn, lhs: Value, rhs: Value) -> list:
    (contract_l, contract_r), (batch_l, batch_r) = eqn.params["dimension_numbers"]
    if batch_l or batch_r or len(lhs.shape) != 2 or len(rhs.shape) != 2:
        raise kctx.fail("dot_general", "only 2-D matrix products without batch dimensions")
    out_dtype = np.dtype(eqn.outvars[0].aval.dtype)
    if tuple(contract_l) == (0,):  # lhs is [K, M]
        lhs = transpose_2d(kctx, lhs)
    if tuple(contract_r) == (1,):  # rhs is [N, K]
        rhs = transpose_2d(kctx, rhs)
    (m, k), (_, n) = lhs.shape, rhs.shape
    if min(m, n, k) < 16:
        raise kctx.fail(
            "dot_general", f"tt.dot needs every dimension >= 16, got [{m}, {k}] x [{k}, {n}]"
        )
    e = kctx.emitter
    if lhs.dtype != rhs.dtype:
        lhs, rhs = convert(e, lhs, out_dtype), convert(e, rhs, out_dtype)
    # Low-precision floats accumulate in f32 and round once at the end.
    if is_float(out_dtype):
        acc_dtype = np.dtype(np.float32) if out_dtype.itemsize < 4 else out_dtype
    else:
        acc_dtype = np.dtype(np.int32)
    zeros = e.constant(0, acc_dtype, (m, n))
    precision = _input_precision(eqn.params.get("precision"), lhs.dtype)
    product = e.op(
        f"tt.dot {lhs.name}, {rhs.name}, {zeros.name}, inputPrecision = {precision} : "
        f"{lhs.type} * {rhs.type} -> {zeros.type}",
        (m, n),
        acc_dtype,
    )
    return [convert(e, product, out_dtype)]


def _arg_reduce(combiner: str):
    def lower(kctx: KernelContext, eqn, x: Value) -> list:
        """The first index of the max (min) along the axis, a NaN counting as the extreme
        (as JAX's): the extreme value, then the smallest index where ``x`` equals it."""
        (axis,) = eqn.params["axes"]
        e = kctx.emitter
        extreme = reduce_axis(kctx, x, axis, combiner)
        if extreme.shape:  # put the reduced axis back, to compare with x
            extreme = expand_dims(e, extreme, axis)
        extreme = broadcast_to(e, extreme, x.shape)
        kind = kind_index(x.dtype)
        cmp = "arith.cmpf oeq" if kind == 0 else "arith.cmpi eq"
        hits = e.op(f"{cmp}, {x.name}, {extreme.name} : {x.type}", x.shape, np.bool_)
        if kind == 0:
            nan = e.op(f"arith.cmpf uno, {x.name}, {x.name} : {x.type}", x.shape, np.bool_)
            hits = e.op(f"arith.ori {hits.name}, {nan.name} : {hits.type}", x.shape, np.bool_)
        positions = arange(e, x.shape[axis])
        for d in range(len(x.shape)):
            if d != axis:
                positions = expand_dims(e, positions, d)
        positions = broadcast_to(e, positions, x.shape)
        past_end = e.constant(x.shape[axis], positions.dtype, x.shape)
        candidates = e.op(
            f"arith.select {hits.name}, {positions.name}, {past_end.name} : "
            f"{hits.type}, {positions.type}",
            x.shape,
            positions.dtype,
        )
        first = reduce_axis(kctx, candidates, axis, "min")
        return [convert(e, first, eqn.params["index_dtype"])]

    return lower


rule("argmax")(_arg_reduce("max"))
rule("argmin")(_arg_reduce("min"))
