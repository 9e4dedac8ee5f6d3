"""``reduce_window``: sliding-window sums, maxima and minima (pooling), as in JAX's lax.

Three primitives, one per monoid. The sum is linear (its transpose spreads each cotangent
back over its window: a padded, dilated cotangent summed over windows again). The max and min
differentiate through their argmax: the tangent picks, in each window, the entry where the
operand is extreme, via a gather of the window positions (computed statically from the
shapes), which transposes to a scatter-add.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import Primitive, ShapedArray, Zero, get_aval
from ember._src.interpreters.ad import is_undefined
from ember._src.lowering.mlir import i64_array
from ember._src.primitives import sharding_rules
from ember._src.primitives.arithmetic import add, max as max_, min as min_, neg
from ember._src.primitives.conv import padding_pairs
from ember._src.primitives.gather_scatter import GatherDimensionNumbers, gather
from ember._src.primitives.reduce import argmax
from ember._src.primitives.selection import select_n
from ember._src.primitives.shape import (
    broadcast_in_dim,
    expand_dims,
    iota_along,
    move_axis,
    reshape,
)
from ember._src.primitives.slicing import concatenate, pad, slice_op


def _dilate(size: int, dilation: int) -> int:
    return 0 if size == 0 else 1 + dilation * (size - 1)


def windowed_shape(shape, window, strides, padding, base_dilation, window_dilation):
    out = []
    for n, k, s, (lo, hi), bd, wd in zip(
        shape, window, strides, padding, base_dilation, window_dilation
    ):
        size = _dilate(n, bd) + lo + hi
        span = _dilate(k, wd)
        out.append(max(0, (size - span) // s + 1) if size >= span else 0)
    return tuple(out)


def _identity(kind: str, dtype: np.dtype) -> Any:
    if kind == "sum":
        return np.zeros((), dtype)
    if dtypes.is_inexact(dtype):
        return np.asarray(-np.inf if kind == "max" else np.inf, dtype)
    if dtype == dtypes.bool_:
        return np.asarray(kind == "min", dtype)
    info = np.iinfo(dtype)
    return np.asarray(info.min if kind == "max" else info.max, dtype)


_HLO = {"sum": "stablehlo.add", "max": "stablehlo.maximum", "min": "stablehlo.minimum"}
_NUMPY = {"sum": np.sum, "max": np.max, "min": np.min}


# --------------------------------------------------------------------------------------------
# Rules the three members share


def _abstract_eval(x, *, window_dimensions, window_strides, padding, base_dilation,
                   window_dilation):  # fmt: skip
    if not (len(window_dimensions) == len(window_strides) == len(padding) == x.ndim):
        raise errors.EmberTypeError(
            f"reduce_window: window {window_dimensions}, strides {window_strides} and "
            f"padding {padding} need one entry per axis of {x.str_short()}{errors.where()}"
        )
    shape = windowed_shape(x.shape, window_dimensions, window_strides, padding, base_dilation,
                       window_dilation)  # fmt: skip
    return ShapedArray(shape, x.dtype, x.weak_type)


def _reference_rule(kind: str):
    def reference(x, **params):
        return _reference(kind, x, **params)

    return reference


def _lowering_rule(kind: str):
    def lowering(ctx, x, *, window_dimensions, window_strides, padding, base_dilation,
                 window_dilation):  # fmt: skip
        dtype = ctx.avals_in[0].dtype
        scalar = ShapedArray((), dtype)
        init = ctx.constant(_identity(kind, dtype), scalar)
        body = ctx.region([scalar, scalar], lambda c, a, b: [c.op(_HLO[kind], [a, b], scalar)])
        rows = ", ".join(f"[{lo}, {hi}]" for lo, hi in padding)
        attrs = {
            "window_dimensions": i64_array(window_dimensions),
            "window_strides": i64_array(window_strides),
            "base_dilations": i64_array(base_dilation),
            "window_dilations": i64_array(window_dilation),
            "padding": f"dense<[{rows}]> : tensor<{len(padding)}x2xi64>"
            if padding
            else "dense<> : tensor<0x2xi64>",
        }
        return ctx.op("stablehlo.reduce_window", [x, init], ctx.avals_out[0], attrs, regions=[body])

    return lowering


def _batch_rule(primitive: Primitive):
    def batch(vals, dims, *, window_dimensions, window_strides, padding, base_dilation,
              window_dilation):  # fmt: skip
        (x,), (d,) = vals, dims
        x = move_axis(x, d, 0)
        out = primitive.bind(
            x,
            window_dimensions=(1, *window_dimensions),
            window_strides=(1, *window_strides),
            padding=((0, 0), *padding),
            base_dilation=(1, *base_dilation),
            window_dilation=(1, *window_dilation),
        )
        return out, 0

    return batch


def _reference(kind: str, x: np.ndarray, *, window_dimensions, window_strides, padding,
               base_dilation, window_dilation) -> np.ndarray:  # fmt: skip
    fill = _identity(kind, x.dtype)
    # Dilate the base (holes hold the identity), then pad with the identity.
    for axis, d in enumerate(base_dilation):
        if d > 1:
            shape = list(x.shape)
            shape[axis] = _dilate(shape[axis], d)
            holes = np.full(shape, fill, x.dtype)
            index = [slice(None)] * x.ndim
            index[axis] = slice(None, None, d)
            holes[tuple(index)] = x
            x = holes
    widths = [(max(lo, 0), max(hi, 0)) for lo, hi in padding]
    x = np.pad(x, widths, constant_values=fill)
    crop = tuple(slice(max(-lo, 0), x.shape[a] - max(-hi, 0)) for a, (lo, hi) in enumerate(padding))
    x = x[crop]
    out_shape = windowed_shape(
        x.shape,
        window_dimensions,
        window_strides,
        [(0, 0)] * x.ndim,
        [1] * x.ndim,
        window_dilation,
    )
    out = np.empty(out_shape, x.dtype)
    for position in np.ndindex(*out_shape):
        region = tuple(
            slice(p * s, p * s + _dilate(k, wd), wd)
            for p, s, k, wd in zip(position, window_strides, window_dimensions, window_dilation)
        )
        out[position] = _NUMPY[kind](x[region])
    return out


# --------------------------------------------------------------------------------------------
# reduce_window_sum: linear, its transpose spreads each cotangent back over its window


def _sum_jvp(primals, tangents, **params):
    (x,), (t,) = primals, tangents
    out = reduce_window_sum_p.bind(x, **params)
    if type(t) is Zero:
        return out, Zero(get_aval(out))
    return out, reduce_window_sum_p.bind(t, **params)


def _sum_transpose(ct, x, *, window_dimensions, window_strides, padding, base_dilation,
                   window_dilation):  # fmt: skip
    if not is_undefined(x):
        raise AssertionError("internal error: reduce_window_sum is linear in its operand")
    if type(ct) is Zero:
        return [Zero(x.aval)]
    in_shape = x.aval.shape
    out_shape = get_aval(ct).shape
    # Spread the cotangent back: put it at its window starts (strides become interior
    # padding), pad so every input position sees the windows covering it, then sum windows.
    config = []
    axes = zip(
        in_shape, window_dimensions, window_strides, padding, base_dilation, window_dilation,
        out_shape,
    )  # fmt: skip
    for n, k, s, (lo, _), bd, wd, m in axes:
        span = _dilate(k, wd)
        before = span - lo - 1
        after = _dilate(n, bd) + span - 1 - _dilate(m, s) - before
        config.append((before, after, s - 1))
    spread = pad(ct, np.zeros((), get_aval(ct).dtype), config)
    ones = (1,) * len(in_shape)
    result = reduce_window_sum_p.bind(
        spread,
        window_dimensions=tuple(window_dimensions),
        window_strides=tuple(base_dilation),
        padding=tuple((0, 0) for _ in in_shape),
        base_dilation=ones,
        window_dilation=tuple(window_dilation),
    )
    return [result]


def _windowed_dims(x, *, window_dimensions, window_strides, padding, base_dilation,
                   window_dilation):  # fmt: skip
    """The dimensions a window looks across (the others keep their layout)."""
    return [
        d
        for d in range(x.ndim)
        if (
            window_dimensions[d],
            window_strides[d],
            tuple(padding[d]),
            base_dilation[d],
            window_dilation[d],
        )
        != (1, 1, (0, 0), 1, 1)  # fmt: skip
    ]


_window_sharding = rules.per_primitive(
    lambda primitive: sharding_rules.with_unsplit(
        primitive.name, _windowed_dims, "a window reaches across it"
    )
)


reduce_window_sum_p = rules.define_primitive(
    "reduce_window_sum",
    sharding=_window_sharding,
    abstract_eval=_abstract_eval,
    jvp=_sum_jvp,
    transpose=_sum_transpose,
    batch=rules.per_primitive(_batch_rule),
    lowering=_lowering_rule("sum"),
    reference=_reference_rule("sum"),
)


# --------------------------------------------------------------------------------------------
# reduce_window_max and reduce_window_min: differentiated through each window's extreme


def _window_positions(in_shape, window_dimensions, window_strides, padding, base_dilation,
                      window_dilation) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """For each output position and window offset: the flat input index, and whether that
    offset falls on a real input element (not padding, not a dilation hole)."""
    out_shape = windowed_shape(in_shape, window_dimensions, window_strides, padding, base_dilation,
                           window_dilation)  # fmt: skip
    per_axis_index, per_axis_valid = [], []
    for n, k, s, (lo, _), bd, wd, m in zip(in_shape, window_dimensions, window_strides, padding,
                                           base_dilation, window_dilation, out_shape):  # fmt: skip
        dilated = np.arange(m)[:, None] * s + np.arange(k)[None, :] * wd - lo
        valid = (dilated >= 0) & (dilated % bd == 0) & (dilated // bd < n)
        per_axis_index.append(np.where(valid, dilated // bd, 0))
        per_axis_valid.append(valid)
    strides = np.cumprod((1,) + tuple(in_shape[::-1]))[::-1][1:]
    flat = np.zeros(out_shape + tuple(window_dimensions), np.int64)
    valid = np.ones(out_shape + tuple(window_dimensions), bool)
    ndim = len(in_shape)
    for axis in range(ndim):
        shape = [1] * (2 * ndim)
        shape[axis], shape[ndim + axis] = out_shape[axis], window_dimensions[axis]
        flat = flat + per_axis_index[axis].reshape(shape) * strides[axis]
        valid = valid & per_axis_valid[axis].reshape(shape)
    window_size = int(np.prod(window_dimensions))
    return (
        flat.reshape(out_shape + (window_size,)).astype(np.int32),
        valid.reshape(out_shape + (window_size,)),
    )


def _patches(x: Any, flat_index: np.ndarray, valid: np.ndarray, fill: Any) -> Any:
    aval = get_aval(x)
    flat = reshape(x, (aval.size,))
    dn = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
    picked = gather(flat, flat_index[..., None], dn, (1,))
    return select_n(valid, np.broadcast_to(np.asarray(fill, aval.dtype), valid.shape), picked)


def _extreme_jvp(primitive: Primitive, kind: str):
    def jvp(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        out = primitive.bind(x, **params)
        if type(t) is Zero:
            return out, Zero(get_aval(out))
        index, valid = _window_positions(get_aval(x).shape, **params)
        values = _patches(x, index, valid, _identity(kind, get_aval(x).dtype))
        chooser = values if kind == "max" else neg(values)
        which = argmax(chooser, get_aval(values).ndim - 1, dtypes.int32)
        tangent_patches = _patches(t, index, valid, np.zeros((), get_aval(t).dtype))
        picked = _take_last(tangent_patches, which)
        return out, picked

    return jvp


def _take_last(patches: Any, which: Any) -> Any:
    """``patches[..., which[...]]``: one entry of the last axis per leading position."""
    shape = get_aval(patches).shape
    lead = shape[:-1]
    columns = [
        expand_dims(iota_along(dtypes.int32, lead, axis), (-1,)) for axis in range(len(lead))
    ]
    indices = concatenate([*columns, expand_dims(which, (-1,))], len(lead))
    ndim = len(shape)
    dn = GatherDimensionNumbers(
        offset_dims=(), collapsed_slice_dims=tuple(range(ndim)), start_index_map=tuple(range(ndim))
    )
    return gather(patches, indices, dn, (1,) * ndim)


reduce_window_max_p = rules.define_primitive(
    "reduce_window_max",
    sharding=_window_sharding,
    abstract_eval=_abstract_eval,
    jvp=rules.per_primitive(functools.partial(_extreme_jvp, kind="max")),
    batch=rules.per_primitive(_batch_rule),
    lowering=_lowering_rule("max"),
    reference=_reference_rule("max"),
)
reduce_window_min_p = rules.define_primitive(
    "reduce_window_min",
    sharding=_window_sharding,
    abstract_eval=_abstract_eval,
    jvp=rules.per_primitive(functools.partial(_extreme_jvp, kind="min")),
    batch=rules.per_primitive(_batch_rule),
    lowering=_lowering_rule("min"),
    reference=_reference_rule("min"),
)


# --------------------------------------------------------------------------------------------
# The user-facing function


_KIND = {reduce_window_sum_p: "sum", reduce_window_max_p: "max", reduce_window_min_p: "min"}
_BY_COMPUTATION: dict[Callable, Primitive] = {
    add: reduce_window_sum_p,
    max_: reduce_window_max_p,
    min_: reduce_window_min_p,
}


def reduce_window(
    operand: Any,
    init_value: Any,
    computation: Callable[[Any, Any], Any],
    window_dimensions: Sequence[int],
    window_strides: Sequence[int] | None = None,
    padding: Any = "VALID",
    base_dilation: Sequence[int] | None = None,
    window_dilation: Sequence[int] | None = None,
) -> Any:
    """Reduce each window of ``operand`` with ``computation``, starting from ``init_value``.
    ``window_strides`` default to 1 and ``padding`` to "VALID", as in JAX.

    ``lax.add``, ``lax.max`` and ``lax.min`` use XLA's windowed reductions (with their own
    derivatives). Any other computation, and a tuple of operands reduced together (then
    ``init_value`` is a tuple and ``computation`` maps two tuples to one), is folded over the
    window positions: one strided slice per position, combined in order. That is exact for
    every computation, differentiable and batchable wherever ``computation`` is, and costs one
    pass over the output per window position."""
    if window_strides is None:
        window_strides = (1,) * len(window_dimensions)
    primitive = _BY_COMPUTATION.get(computation)
    if primitive is None or isinstance(operand, (tuple, list)):
        return _fold_windows(
            operand, init_value, computation, window_dimensions, window_strides, padding,
            base_dilation, window_dilation,
        )  # fmt: skip
    aval = get_aval(operand)
    ndim = aval.ndim
    base_dilation = tuple(base_dilation or (1,) * ndim)
    window_dilation = tuple(window_dilation or (1,) * ndim)
    if isinstance(padding, str):
        padding = padding_pairs(
            padding, aval.shape, window_dimensions, window_strides, base_dilation, window_dilation
        )
    out = primitive.bind(
        operand,
        window_dimensions=tuple(int(k) for k in window_dimensions),
        window_strides=tuple(int(s) for s in window_strides),
        padding=tuple((int(lo), int(hi)) for lo, hi in padding),
        base_dilation=base_dilation,
        window_dilation=window_dilation,
    )
    identity = _identity(_KIND[primitive], aval.dtype)
    init = np.asarray(init_value) if not hasattr(init_value, "aval") else None
    if init is not None and init.shape == () and np.array_equal(init.astype(aval.dtype), identity):
        return out
    return computation(out, init_value)


def _fold_windows(
    operand, init_value, computation, window, strides, padding, base_dilation, window_dilation
):
    several = isinstance(operand, (tuple, list))
    operands = list(operand) if several else [operand]
    inits = list(init_value) if several else [init_value]
    if len(inits) != len(operands):
        raise ValueError(
            f"reduce_window: {len(operands)} operands but {len(inits)} init values{errors.where()}"
        )
    avals = [get_aval(x) for x in operands]
    shape = avals[0].shape
    if any(a.shape != shape for a in avals):
        raise ValueError(
            f"reduce_window: operands must share one shape, got "
            f"{[a.shape for a in avals]}{errors.where()}"
        )
    ndim = len(shape)
    window, strides = tuple(int(k) for k in window), tuple(int(s) for s in strides)
    if len(window) != ndim or len(strides) != ndim:
        raise ValueError(
            f"reduce_window: window_dimensions {window} and window_strides {strides} need one "
            f"entry per operand dimension ({ndim}){errors.where()}"
        )
    base_dilation = tuple(base_dilation or (1,) * ndim)
    window_dilation = tuple(window_dilation or (1,) * ndim)
    if isinstance(padding, str):
        padding = padding_pairs(padding, shape, window, strides, base_dilation, window_dilation)
    padding = tuple((int(lo), int(hi)) for lo, hi in padding)
    out_shape = windowed_shape(shape, window, strides, padding, base_dilation, window_dilation)
    inits = [_scalar_of(init, aval.dtype) for init, aval in zip(inits, avals)]
    # Padding and base dilation hold the init value, which the fold then treats as XLA's
    # reduce_window does.
    config = [(lo, hi, bd - 1) for (lo, hi), bd in zip(padding, base_dilation)]
    padded = [pad(x, init, config) for x, init in zip(operands, inits)]
    accumulator = tuple(broadcast_in_dim(init, out_shape, ()) for init in inits)
    for position in np.ndindex(*window):
        begin = [p * wd for p, wd in zip(position, window_dilation)]
        limit = [b + (n - 1) * s + 1 if n else b for b, n, s in zip(begin, out_shape, strides)]
        pieces = tuple(slice_op(x, begin, limit, strides) for x in padded)
        if several:
            accumulator = tuple(computation(accumulator, pieces))
        else:
            accumulator = (computation(accumulator[0], pieces[0]),)
    return accumulator if several else accumulator[0]


def _scalar_of(value: Any, dtype: np.dtype) -> Any:
    """``value`` as a scalar of ``dtype``: a host scalar is converted, a traced one must match."""
    if hasattr(value, "aval"):
        aval = get_aval(value)
        if aval.shape != () or aval.dtype != dtype:
            raise TypeError(
                f"reduce_window: init value {aval.str_short()} must be a scalar of the operand's "
                f"dtype {dtypes.short_name(dtype)}{errors.where()}"
            )
        return value
    host = np.asarray(value)
    if host.shape != ():
        raise TypeError(f"reduce_window: init value must be a scalar, got {host.shape}")
    return host.astype(dtype)
