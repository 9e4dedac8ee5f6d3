"""The two primitives automatic differentiation itself needs: adding tangents and making zeros.

They live below the op library because the transformations create them (accumulating
cotangents, materialising symbolic zeros). add_any's batching rule needs the shape primitives,
so it is registered beside add, in ``primitives/arithmetic.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import rules
from ember._src.core import Primitive, ShapedArray, Zero, tangent_aval

add_any_p = Primitive("add_any")


@rules.def_abstract_eval(add_any_p)
def _add_any_abstract_eval(x: ShapedArray, y: ShapedArray) -> ShapedArray:
    if not x.same_type(y):
        raise TypeError(f"add_any got {x.str_short()} and {y.str_short()}")
    return x.update(weak_type=x.weak_type and y.weak_type)


@rules.def_jvp(add_any_p)
def _add_any_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    return add_any_p.bind(x, y), add_tangents(tx, ty)


@rules.def_transpose(add_any_p)
def _add_any_transpose(ct, x, y):
    return [ct, ct]


@rules.def_reference(add_any_p)
def _add_any_reference(x, y):
    return np.add(x, y)


@rules.def_lowering(add_any_p)
def _add_any_lowering(ctx, x, y):
    return ctx.op("stablehlo.add", [x, y], ctx.avals_out[0])


zeros_p = Primitive("zeros")


@rules.def_abstract_eval(zeros_p)
def _zeros_abstract_eval(*, shape: tuple[int, ...], dtype: np.dtype) -> ShapedArray:
    return ShapedArray(shape, dtype)


@rules.def_jvp(zeros_p)
def _zeros_jvp(primals, tangents, *, shape, dtype):
    out = zeros_p.bind(shape=shape, dtype=dtype)
    return out, Zero(tangent_aval(ShapedArray(shape, dtype)))


@rules.def_reference(zeros_p)
def _zeros_reference(*, shape, dtype):
    return np.zeros(shape, dtype)


@rules.def_lowering(zeros_p)
def _zeros_lowering(ctx, *, shape, dtype):
    return ctx.full(0, ctx.avals_out[0])


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
