"""Primitives computed by an expression of other primitives: the one way to lower such a
primitive (``lower_via``) and to evaluate it on the reference backend (``reference_via``).

An expression is a Python function ``expression(*operands, **params)`` of the primitive's
operands and parameters, written with other primitives (ember's linear algebra loops, an
associative scan, a complex function's formula). It is traced once per operand types and
parameters, and the jaxpr is lowered in place of the primitive, or evaluated with the
reference rules. The rule keeps the expression as ``rule.expansion`` (``rules.expansion``):
its structure may depend on the operands' sizes (a scan of log2(n) rounds, a loop of n
steps), which shape-polymorphic export checks by tracing it for each of its sizes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src.config import config
from ember._src.core import ShapedArray, get_aval
from ember._src.interpreters.reference import evaluate_jaxpr
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.ir import ClosedJaxpr
from ember._src.lowering.module import lower_jaxpr_inline

Expression = Callable[..., Any]


def _flat(expression: Expression, params: dict[str, Any]) -> Callable[..., list[Any]]:
    def flat(*xs: Any) -> list[Any]:
        out = expression(*xs, **params)
        return list(out) if isinstance(out, (list, tuple)) else [out]

    return flat


# Besides the operand types and parameters, x64 decides what a trace makes (the dtype of
# every Python-scalar constant): part of the cache key.
_enable_x64 = config.reader("enable_x64")


@functools.lru_cache(maxsize=512)
def _traced_cached(expression: Expression, avals: tuple, params: tuple, x64: bool) -> ClosedJaxpr:
    del x64  # a key only
    return trace_to_jaxpr(_flat(expression, dict(params)), list(avals), name="expression")


def traced(
    expression: Expression, avals: Sequence[ShapedArray], params: dict[str, Any]
) -> ClosedJaxpr:
    """The jaxpr of ``expression`` on operands of types ``avals`` (traced unsplit: the result
    is laid out as the primitive's own type says), cached for the same types and parameters."""
    avals = tuple(a.update(sharding=None) if a.typed_sharding is not None else a for a in avals)
    key = tuple(sorted(params.items()))
    try:
        return _traced_cached(expression, avals, key, bool(_enable_x64()))
    except TypeError:  # a parameter that cannot be hashed: trace it every time
        return trace_to_jaxpr(_flat(expression, params), list(avals), name="expression")


def lower_expression(
    ctx: Any, expression: Expression, operands: Sequence[Any], params: dict[str, Any]
) -> list[Any]:
    """The lowered results of ``expression(*operands, **params)``, emitted in place (for a
    rule that lowers part of its work through an expression)."""
    closed = traced(expression, ctx.avals_in, params)
    consts = [_constant(ctx, c) for c in closed.consts]
    return lower_jaxpr_inline(ctx, closed.jaxpr, consts, list(operands))


def _constant(ctx: Any, value: Any) -> Any:
    aval = get_aval(value)
    if aval.size == 0:  # an empty literal cannot say its shape: emit it as a splat
        return ctx.full(np.zeros((), aval.dtype), aval)
    return ctx.constant(value, aval)


def lower_via(expression: Expression, *, multiple_results: bool = False) -> Callable[..., Any]:
    """The lowering rule of a primitive computed by ``expression`` (a list of results when
    ``multiple_results``); ``rule.expansion`` is the expression."""

    def lowering(ctx, *operands, **params):
        outs = lower_expression(ctx, expression, operands, params)
        return outs if multiple_results else outs[0]

    lowering.expansion = expression
    return lowering


def reference_via(expression: Expression, *, multiple_results: bool = False) -> Callable[..., Any]:
    """The reference rule of a primitive computed by ``expression``: its jaxpr evaluated with
    the reference rules (for primitives NumPy has no routine for)."""

    def reference(*args, **params):
        arrays = [np.asarray(a) for a in args]
        avals = [ShapedArray(a.shape, a.dtype) for a in arrays]
        outs = evaluate_jaxpr(traced(expression, avals, params), arrays)
        return outs if multiple_results else outs[0]

    return reference
