"""The two primitives automatic differentiation itself needs: adding tangents and making zeros.

They are defined here, with ``define_primitive`` like every other primitive, rather than in
the primitives package, because the AD interpreter creates them (accumulating cotangents,
materialising symbolic zeros) and sits below that package in the layer chain. ``add_any``'s
batching rule needs shape primitives from above this layer: it is registered beside ``add``
in ``primitives/arithmetic.py``. ``zeros`` takes no operands, so it is never batched.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import rules
from ember._src.core import ShapedArray, Zero, tangent_aval


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


add_any_p = rules.define_primitive(
    "add_any",
    abstract_eval=_add_any_abstract_eval,
    jvp=_add_any_jvp,
    transpose=_add_any_transpose,
    lowering=_add_any_lowering,
    reference=_add_any_reference,
)


def _zeros_abstract_eval(*, shape: tuple[int, ...], dtype: np.dtype) -> ShapedArray:
    return ShapedArray(shape, dtype)


def _zeros_jvp(primals, tangents, *, shape, dtype):
    out = zeros_p.bind(shape=shape, dtype=dtype)
    return out, Zero(tangent_aval(ShapedArray(shape, dtype)))


def _zeros_reference(*, shape, dtype):
    return np.zeros(shape, dtype)


def _zeros_lowering(ctx, *, shape, dtype):
    return ctx.full(0, ctx.avals_out[0])


zeros_p = rules.define_primitive(
    "zeros",
    abstract_eval=_zeros_abstract_eval,
    jvp=_zeros_jvp,
    lowering=_zeros_lowering,
    reference=_zeros_reference,
)


def zeros(aval: ShapedArray) -> Any:
    """A materialised array of zeros of ``aval``'s shape and dtype (bound on the current trace)."""
    return zeros_p.bind(shape=aval.shape, dtype=aval.dtype)


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
