"""The two primitives automatic differentiation itself needs: adding tangents and making zeros.

They are defined here, with ``define_primitive`` like every other primitive, rather than in
the primitives package, because the AD interpreter creates them (accumulating cotangents,
materialising symbolic zeros) and sits below that package in the layer chain. ``add_any``'s
batching rule moves and broadcasts batch axes with two shape primitives defined above this
layer; it binds them by name (``rules.primitive_named``) when it runs, so every rule of
``add_any`` is still registered here, in its one ``define_primitive`` call. ``zeros`` takes no
operands, so it is never batched.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import rules
from ember._src.core import ShapedArray, Zero, get_aval, tangent_aval
from ember._src.interpreters.batching import not_mapped


def _add_any_abstract_eval(x: ShapedArray, y: ShapedArray) -> ShapedArray:
    if not x.same_type(y):
        raise TypeError(f"add_any got {x.str_short()} and {y.str_short()}")
    return x.update(weak_type=x.weak_type and y.weak_type)


def _add_any_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    return add_any_p.bind(x, y), add_tangents(tx, ty)


def _add_any_transpose(ct, x, y):
    return [ct, ct]


def _add_any_reference(x, y):
    return np.add(x, y)


def _add_any_lowering(ctx, x, y):
    return ctx.op("stablehlo.add", [x, y], ctx.avals_out[0])


def _add_any_batch(vals, dims):
    """Both cotangents carried to the batched one's layout.

    Unlike the elementwise primitives, add_any takes two values of exactly one type (it sums
    cotangents of one variable), so an unbatched operand is not left to broadcast: it is
    broadcast explicitly, else the sum of a batched and an unbatched scalar cotangent (as
    ``vmap(grad(f))`` makes) would be rejected.
    """
    (x, y), (dx, dy) = vals, dims
    if dx == dy:
        return add_any_p.bind(x, y), dx
    if dx is not_mapped or dy is not_mapped:
        d = dy if dx is not_mapped else dx
        batched, other = (y, x) if dx is not_mapped else (x, y)
        shape = get_aval(batched).shape
        kept = tuple(i for i in range(len(shape)) if i != d)
        broadcast_in_dim_p = rules.primitive_named("broadcast_in_dim")
        other = broadcast_in_dim_p.bind(other, shape=shape, broadcast_dimensions=kept)
        return add_any_p.bind(batched, other), d
    permutation = [i for i in range(get_aval(y).ndim) if i != dy]
    permutation.insert(dx, dy)
    y = rules.primitive_named("transpose").bind(y, permutation=tuple(permutation))
    return add_any_p.bind(x, y), dx


def _add_any_sharding(x, y):
    return x.typed_sharding if x.typed_sharding is not None else y.typed_sharding


add_any_p = rules.define_primitive(
    "add_any",
    sharding=_add_any_sharding,
    batch=_add_any_batch,
    abstract_eval=_add_any_abstract_eval,
    jvp=_add_any_jvp,
    transpose=_add_any_transpose,
    lowering=_add_any_lowering,
    reference=_add_any_reference,
)


# ``out_sharding``: the typed sharding of the zeros (those of a typed cotangent or tangent).


def _zeros_abstract_eval(*, shape: tuple[int, ...], dtype: np.dtype, out_sharding) -> ShapedArray:
    return ShapedArray(shape, dtype)


def _zeros_jvp(primals, tangents, *, shape, dtype, out_sharding):
    out = zeros_p.bind(shape=shape, dtype=dtype, out_sharding=out_sharding)
    return out, Zero(tangent_aval(ShapedArray(shape, dtype, sharding=out_sharding)))


def _zeros_reference(*, shape, dtype, out_sharding):
    return np.zeros(shape, dtype)


def _zeros_lowering(ctx, *, shape, dtype, out_sharding):
    return ctx.full(0, ctx.avals_out[0])


zeros_p = rules.define_primitive(
    "zeros",
    sharding=rules.NOT_SHARDABLE,  # it has no operands: out_sharding types it
    abstract_eval=_zeros_abstract_eval,
    jvp=_zeros_jvp,
    lowering=_zeros_lowering,
    reference=_zeros_reference,
)


def zeros(aval: ShapedArray) -> Any:
    """A materialised array of zeros of ``aval``'s shape and dtype (bound on the current trace)."""
    return zeros_p.bind(shape=aval.shape, dtype=aval.dtype, out_sharding=aval.typed_sharding)


def instantiate(tangent: Any) -> Any:
    """Turn a symbolic zero into a real array of zeros; leave anything else alone."""
    if type(tangent) is Zero:
        return zeros(tangent.aval)
    return tangent


def add_tangents(x: Any, y: Any) -> Any:
    if type(x) is Zero:
        return y
    if type(y) is Zero:
        return x
    return add_any_p.bind(x, y)
