"""``clamp(min, x, max)``: ``x`` limited to ``[min, max]`` elementwise.

As in JAX, ``min`` and ``max`` are either scalars or arrays of ``x``'s shape (no other
broadcasting), all three of one dtype. The derivative flows to whichever operand is the
result: to ``x`` strictly inside the interval, to ``min`` below it, to ``max`` above it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import ShapedArray, Zero, get_aval, tangent_aval
from ember._src.interpreters.ad_util import add_tangents, zeros
from ember._src.interpreters.batching import not_mapped
from ember._src.primitives import sharding_rules
from ember._src.primitives.bits import bitwise_and
from ember._src.primitives.comparisons import gt, lt
from ember._src.primitives.elementwise import coerce_scalars
from ember._src.primitives.selection import select_n
from ember._src.primitives.shape import batch_size, bdim_to_front, broadcast_in_dim


def clamp(min: Any, x: Any, max: Any) -> Any:
    return clamp_p.bind(*coerce_scalars(min, x, max))


def _clamp_abstract_eval(lo: ShapedArray, x: ShapedArray, hi: ShapedArray) -> ShapedArray:
    if not lo.dtype == x.dtype == hi.dtype:
        raise errors.EmberTypeError(
            f"clamp requires arguments of one dtype, got {dtypes.short_name(lo.dtype)}, "
            f"{dtypes.short_name(x.dtype)}, {dtypes.short_name(hi.dtype)}{errors.where()}"
        )
    for name, bound in (("min", lo), ("max", hi)):
        if bound.shape and bound.shape != x.shape:
            raise errors.EmberTypeError(
                f"clamp requires {name}.shape == x.shape or {name}.shape == (), got "
                f"{name}.shape={bound.shape}, x.shape={x.shape}{errors.where()}"
            )
    return ShapedArray(x.shape, x.dtype, x.weak_type and lo.weak_type and hi.weak_type)


def _clamp_reference(lo, x, hi):
    return np.minimum(np.maximum(x, lo), hi)


def _clamp_lowering(ctx, lo, x, hi):
    return ctx.op("stablehlo.clamp", [lo, x, hi], ctx.avals_out[0])


def _clamp_jvp(primals, tangents):
    lo, x, hi = primals
    out = clamp_p.bind(lo, x, hi)
    out_aval = tangent_aval(get_aval(out))
    picks = (
        bitwise_and(gt(lo, x), lt(lo, hi)),  # min wins
        bitwise_and(gt(x, lo), lt(x, hi)),  # x is inside
        lt(hi, x),  # max wins
    )
    result: Any = Zero(out_aval)
    for t, pick in zip(tangents, picks):
        if type(t) is Zero:
            continue
        term = select_n(pick, zeros(out_aval), t)
        if get_aval(term).shape != out_aval.shape:  # a scalar bound, and a scalar pick
            term = broadcast_in_dim(term, out_aval.shape, ())
        result = add_tangents(result, term)
    return out, result


def _clamp_batch(vals, dims):
    lo, x, hi = vals
    lo_dim, x_dim, hi_dim = dims
    if x_dim is not not_mapped and all(
        d is not_mapped and not get_aval(b).shape for b, d in ((lo, lo_dim), (hi, hi_dim))
    ):
        return clamp_p.bind(lo, x, hi), x_dim
    size = batch_size(vals, dims)
    x = bdim_to_front(x, x_dim, size)
    full = get_aval(x).shape
    bounds = []
    for bound, d in ((lo, lo_dim), (hi, hi_dim)):
        if d is not_mapped and not get_aval(bound).shape:
            bounds.append(bound)  # a scalar bound stays one
            continue
        bound = bdim_to_front(bound, d, size)
        if get_aval(bound).shape != full:  # a batch of scalars
            bound = broadcast_in_dim(bound, full, (0,))
        bounds.append(bound)
    return clamp_p.bind(bounds[0], x, bounds[1]), 0


clamp_p = rules.define_primitive(
    "clamp",
    sharding=rules.per_primitive(sharding_rules.elementwise),
    abstract_eval=_clamp_abstract_eval,
    jvp=_clamp_jvp,
    batch=_clamp_batch,
    lowering=_clamp_lowering,
    reference=_clamp_reference,
)
