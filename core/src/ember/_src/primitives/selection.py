"""``select_n(which, *cases)``: ``cases[which]``, elementwise.

``which`` is bool (two cases: false picks the first) or an integer. Like the other elementwise
primitives, a rank-0 case or selector broadcasts to the others' shape.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import ShapedArray, Zero, get_aval, tangent_aval
from ember._src.interpreters.ad import is_undefined
from ember._src.interpreters.ad_util import instantiate
from ember._src.primitives import sharding_rules
from ember._src.primitives.elementwise import (
    _ANY,
    coerce_scalars,
    elementwise_batch,
    full_shape,
    nary_abstract_eval,
    unbroadcast,
)
from ember._src.primitives.shape import compare_type


def _select_n_abstract_eval(which, *cases):
    if which.dtype != dtypes.bool_ and which.dtype.kind not in "iu":
        raise errors.EmberTypeError(
            f"select_n: the selector must be bool or integer, got {which.dtype}{errors.where()}"
        )
    if which.dtype == dtypes.bool_ and len(cases) > 2:
        raise errors.EmberTypeError(
            f"select_n: a bool selector picks between 2 cases, got {len(cases)}{errors.where()}"
        )
    out = nary_abstract_eval("select_n", _ANY)(*cases)
    if which.shape and out.shape and which.shape != out.shape:
        raise errors.EmberTypeError(
            f"select_n: selector shape {which.shape} differs from case shape {out.shape}"
            f"{errors.where()}"
        )
    shape = out.shape or which.shape
    return ShapedArray(shape, out.dtype, out.weak_type)


def _select_n_jvp(primals, tangents):
    which, *cases = primals
    _, *case_tangents = tangents
    out = select_n_p.bind(which, *cases)
    out_aval = tangent_aval(get_aval(out))
    if all(type(t) is Zero for t in case_tangents):
        return out, Zero(out_aval)
    filled = [full_shape(instantiate(t) if type(t) is Zero else t, out_aval) for t in case_tangents]
    return out, select_n_p.bind(which, *filled)


def _select_n_transpose(ct, which, *cases):
    if is_undefined(which):
        raise TypeError("internal error: select_n is not linear in its selector")
    result: list[Any] = [None]
    if type(ct) is Zero:
        return result + [Zero(c.aval) if is_undefined(c) else None for c in cases]
    zero = instantiate(Zero(get_aval(ct)))
    for i, case in enumerate(cases):
        if not is_undefined(case):
            result.append(None)
            continue
        picks = [zero] * len(cases)
        picks[i] = ct
        result.append(unbroadcast(case.aval, select_n_p.bind(which, *picks)))
    return result


def _select_n_lowering(ctx, which, *cases):
    out_aval = ctx.avals_out[0]
    which_aval = ctx.avals_in[0]
    cases = _broadcast_cases(ctx, cases, ctx.avals_in[1:])
    pred_aval = ShapedArray(out_aval.shape, dtypes.bool_)
    if which_aval.shape != out_aval.shape:
        which = ctx.broadcast_in_dim(which, ShapedArray(out_aval.shape, which_aval.dtype), ())
    if which_aval.dtype == dtypes.bool_:
        return ctx.op("stablehlo.select", [which, cases[1], cases[0]], out_aval)
    result = cases[0]
    index_aval = ShapedArray(out_aval.shape, which_aval.dtype)
    for i in range(1, len(cases)):
        threshold = ctx.full(i, index_aval)
        pred = ctx.op(
            "stablehlo.compare",
            [which, threshold],
            pred_aval,
            {
                "comparison_direction": "#stablehlo<comparison_direction GE>",
                "compare_type": compare_type(which_aval.dtype),
            },
        )
        result = ctx.op("stablehlo.select", [pred, cases[i], result], out_aval)
    return result


def _broadcast_cases(ctx, operands, avals) -> list[str]:
    out_aval = ctx.avals_out[0]
    result = []
    for x, aval in zip(operands, avals):
        if not aval.shape and out_aval.shape:
            x = ctx.broadcast_in_dim(x, ShapedArray(out_aval.shape, aval.dtype), ())
        result.append(x)
    return result


def _select_n_reference(which, *cases):
    index = np.asarray(which, np.int64)
    return np.choose(index, np.broadcast_arrays(*cases)).astype(cases[0].dtype)


select_n_p = rules.define_primitive(
    "select_n",
    sharding=rules.per_primitive(sharding_rules.elementwise),
    abstract_eval=_select_n_abstract_eval,
    jvp=_select_n_jvp,
    transpose=_select_n_transpose,
    batch=rules.per_primitive(elementwise_batch),
    lowering=_select_n_lowering,
    reference=_select_n_reference,
)


def select_n(which: Any, *cases: Any) -> Any:
    """Pick ``cases[which]`` elementwise; ``which`` is bool (two cases) or int32."""
    if len(cases) == 1:
        return cases[0]
    cases = coerce_scalars(*cases)
    return select_n_p.bind(which, *cases)
