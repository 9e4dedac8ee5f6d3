"""Transforming whole closed jaxprs: the building blocks of higher-order primitives' rules.

``jit``, ``cond``, ``while_loop``, ``scan`` and ``checkpoint`` carry jaxprs in their
parameters. Their jvp, batching and transpose rules transform those jaxprs into new ones with
the helpers here, which re-trace ``eval_jaxpr`` under the transformation. Every result is
const-free (its constants are returned separately, to be passed as leading operands), and
results are cached per input jaxpr, so re-running a transformation of the same program does
not re-trace it.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from ember._src import dtypes
from ember._src.core import ShapedArray, Zero, get_aval, tangent_aval
from ember._src.interpreters.ad import UndefinedPrimal, backward_pass, jvp_flat
from ember._src.interpreters.ad_util import instantiate
from ember._src.interpreters.batching import active_axis_name, batch_flat, not_mapped
from ember._src.interpreters.eval import eval_jaxpr
from ember._src.interpreters.partial_eval import merge
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.ir import ClosedJaxpr, Jaxpr
from ember._src.primitives.shape import bdim_to_front

# --------------------------------------------------------------------------------------------
# Constants and caching


def hoist_consts(closed: ClosedJaxpr) -> tuple[list[Any], ClosedJaxpr]:
    """Turn a jaxpr's consts into leading inputs; return (consts, the const-free jaxpr)."""
    if not closed.consts:
        return [], closed
    jaxpr = closed.jaxpr
    hoisted = Jaxpr(
        [], [*jaxpr.constvars, *jaxpr.invars], jaxpr.outvars, jaxpr.eqns, jaxpr.debug_info
    )
    return list(closed.consts), ClosedJaxpr(hoisted, [])


def trace_const_free(
    fun: Callable[..., Sequence[Any]], avals: Sequence[ShapedArray], name: str
) -> tuple[list[Any], ClosedJaxpr]:
    """Trace ``fun`` to a const-free jaxpr; the captured values come back as its leading args."""
    return hoist_consts(trace_to_jaxpr(fun, avals, name=name))


_derived: weakref.WeakKeyDictionary[ClosedJaxpr, dict] = weakref.WeakKeyDictionary()


def cached(jaxpr: ClosedJaxpr, key: tuple, build: Callable[[], Any]) -> Any:
    """``build()``, memoised per (jaxpr, key) for as long as ``jaxpr`` lives."""
    per_jaxpr = _derived.setdefault(jaxpr, {})
    if key not in per_jaxpr:
        per_jaxpr[key] = build()
    return per_jaxpr[key]


def is_float0(aval: ShapedArray) -> bool:
    return aval.dtype == dtypes.float0


# --------------------------------------------------------------------------------------------
# Forward mode


def jvp_jaxpr(
    jaxpr: ClosedJaxpr, nonzero: Sequence[bool], instantiate_out: Sequence[bool] | bool = False
) -> tuple[list[Any], ClosedJaxpr, list[bool]]:
    """The JVP of a const-free jaxpr.

    The result takes the primal inputs then the tangents of the inputs marked ``nonzero``, and
    returns the primal outputs then the tangents of the outputs it reports as nonzero (always
    including those marked in ``instantiate_out``, materialised as zeros if need be; float0
    tangents of integer outputs are never materialised). Returns (consts, jaxpr, out_nonzero).
    """
    n_out = len(jaxpr.out_avals)
    if isinstance(instantiate_out, bool):
        instantiate_out = (instantiate_out,) * n_out
    nonzero, instantiate_out = tuple(nonzero), tuple(instantiate_out)

    def build():
        n = len(jaxpr.in_avals)
        out_nonzero: list[bool] = []

        def fun(*args):
            primals, live = args[:n], args[n:]
            zero_in = [Zero(tangent_aval(a)) for a, nz in zip(jaxpr.in_avals, nonzero) if not nz]
            tangents = merge(nonzero, zero_in, live)
            outs, out_tangents = jvp_flat(
                lambda *xs: eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *xs), primals, tangents
            )
            kept = []
            for t, force in zip(out_tangents, instantiate_out):
                keep = type(t) is not Zero or (force and not is_float0(t.aval))
                out_nonzero.append(keep)
                if keep:
                    kept.append(instantiate(t))
            return list(outs) + kept

        tangent_avals = [tangent_aval(a) for a, nz in zip(jaxpr.in_avals, nonzero) if nz]
        consts, closed = trace_const_free(fun, [*jaxpr.in_avals, *tangent_avals], "jvp")
        return consts, closed, out_nonzero

    return cached(jaxpr, ("jvp", nonzero, instantiate_out), build)


def fixpoint(step: Callable[[list[bool]], list[bool]], start: Sequence[bool]) -> list[bool]:
    """The smallest flags ⊇ ``start`` that ``step`` maps into themselves.

    Loop carries need it: a carry's tangent is nonzero (or its value batched, or unknown) if
    it starts so or if one trip through the body makes it so.
    """
    current = list(start)
    while True:
        after = [a or b for a, b in zip(current, step(current))]
        if after == current:
            return current
        current = after


# --------------------------------------------------------------------------------------------
# Batching


def batch_jaxpr(
    jaxpr: ClosedJaxpr,
    in_batched: Sequence[bool],
    size: int,
    force_out: Sequence[bool] | bool = False,
) -> tuple[list[Any], ClosedJaxpr, list[bool]]:
    """The batched form of a const-free jaxpr, every batched value carrying its batch axis first.

    Outputs marked in ``force_out`` are batched even where they would not be (broadcast).
    Returns (consts, jaxpr, out_batched).
    """
    n_out = len(jaxpr.out_avals)
    if isinstance(force_out, bool):
        force_out = (force_out,) * n_out
    in_batched, force_out = tuple(in_batched), tuple(force_out)

    def build():
        out_batched: list[bool] = []

        def fun(*args):
            dims = [0 if b else not_mapped for b in in_batched]
            outs, out_dims = batch_flat(
                lambda *xs: eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *xs), args, dims, size
            )
            results = []
            for x, d, force in zip(outs, out_dims, force_out):
                batched = d is not not_mapped or force
                out_batched.append(batched)
                results.append(bdim_to_front(x, d, size) if batched else x)
            return results

        avals = [
            a.update(shape=(size, *a.shape)) if b else a for a, b in zip(jaxpr.in_avals, in_batched)
        ]
        consts, closed = trace_const_free(fun, avals, "vmap")
        return consts, closed, out_batched

    key = ("batch", in_batched, size, force_out, active_axis_name())
    return cached(jaxpr, key, build)


# --------------------------------------------------------------------------------------------
# Transposition


def transpose_jaxpr(jaxpr: ClosedJaxpr, linear: Sequence[bool]) -> tuple[list[Any], ClosedJaxpr]:
    """The transpose of a const-free jaxpr with respect to its ``linear`` inputs.

    The result takes the non-linear inputs, then one cotangent per output (materialised), and
    returns one materialised cotangent per linear input.
    """
    linear = tuple(linear)

    def build():
        res_avals = [a for a, lin in zip(jaxpr.in_avals, linear) if not lin]
        lin_avals = [a for a, lin in zip(jaxpr.in_avals, linear) if lin]
        n_res = len(res_avals)

        def fun(*args):
            residuals, cts = args[:n_res], args[n_res:]
            full = merge(linear, residuals, [UndefinedPrimal(a) for a in lin_avals])
            result = backward_pass(jaxpr.jaxpr, jaxpr.consts, full, list(cts))
            return [instantiate(ct) for ct, lin in zip(result, linear) if lin]

        ct_avals = [tangent_aval(a) for a in jaxpr.out_avals]
        return trace_const_free(fun, [*res_avals, *ct_avals], "transpose")

    return cached(jaxpr, ("transpose", linear), build)


def materialize_cts(cts: Sequence[Any]) -> list[Any]:
    """Cotangents as arrays (symbolic zeros become zeros), for binding a transposed jaxpr."""
    return [instantiate(ct) for ct in cts]


def avals_of(values: Sequence[Any]) -> list[ShapedArray]:
    return [get_aval(v) for v in values]
