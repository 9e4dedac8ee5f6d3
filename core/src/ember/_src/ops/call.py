"""``jit``'s primitive: a call of a staged jaxpr, kept as one equation under transformations.

Every transformation of a ``jit`` call produces another ``jit`` call of a transformed jaxpr,
so ``grad(jit(f))`` and ``vmap(jit(f))`` still compile ``f``'s derivative or batched form as
one computation, and partial evaluation splits it into a known and an unknown call.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from ember._src import rules
from ember._src.core import Primitive, Zero, get_aval, set_current_trace, tangent_aval
from ember._src.interpreters.ad import UndefinedPrimal, backward_pass, is_undefined, jvp_flat
from ember._src.interpreters.ad_util import instantiate
from ember._src.interpreters.batching import batch_flat, not_mapped
from ember._src.interpreters.eval import eval_jaxpr
from ember._src.interpreters.partial_eval import PartialEvalTrace, merge, partial_eval_jaxpr
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.ir import ClosedJaxpr, Jaxpr
from ember._src.lowering.module import lower_jaxpr_inline
from ember._src.ops.shape import move_axis
from ember._src.reference.interpreter import evaluate_jaxpr

jit_p = Primitive("jit", multiple_results=True)


def jit_call(
    args: Sequence[Any], jaxpr: ClosedJaxpr, name: str, donated_invars: Sequence[bool] | None = None
) -> list[Any]:
    """Bind a call of ``jaxpr`` (which must have no consts: pass them as leading args)."""
    donated = tuple(donated_invars) if donated_invars else (False,) * len(args)
    return jit_p.bind(*args, jaxpr=jaxpr, name=name, donated_invars=donated)


@rules.def_abstract_eval(jit_p)
def _jit_abstract_eval(*avals, jaxpr, name, donated_invars):
    return jaxpr.out_avals


@rules.def_reference(jit_p)
def _jit_reference(*args, jaxpr, name, donated_invars):
    return evaluate_jaxpr(jaxpr, args)


@rules.def_lowering(jit_p)
def _jit_lowering(ctx, *operands, jaxpr, name, donated_invars):
    consts = [ctx.constant(c, get_aval(c)) for c in jaxpr.consts]
    return lower_jaxpr_inline(ctx, jaxpr.jaxpr, consts, operands)


# --------------------------------------------------------------------------------------------
# Transformed jaxprs are cached per (jaxpr, variant) so re-running a transformation of the
# same jit function does not re-trace.

_derived: weakref.WeakKeyDictionary[ClosedJaxpr, dict] = weakref.WeakKeyDictionary()


def _cached(jaxpr: ClosedJaxpr, key: tuple, build) -> Any:
    per_jaxpr = _derived.setdefault(jaxpr, {})
    if key not in per_jaxpr:
        per_jaxpr[key] = build()
    return per_jaxpr[key]


def jvp_jaxpr(jaxpr: ClosedJaxpr, nonzero: tuple[bool, ...]) -> tuple[tuple, list[bool]]:
    """A jaxpr taking (consts,) primals, then the nonzero tangents, returning primal outputs
    then the nonzero output tangents; also which output tangents are nonzero."""

    def build():
        n = len(jaxpr.in_avals)
        out_nonzero: list[bool] = []

        def fun(*args):
            primals = args[:n]
            live = args[n:]
            zeros = [Zero(tangent_aval(a)) for a, nz in zip(jaxpr.in_avals, nonzero) if not nz]
            tangents = merge(nonzero, zeros, live)
            outs, out_tangents = jvp_flat(
                lambda *xs: eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *xs), primals, tangents
            )
            out_nonzero.extend(type(t) is not Zero for t in out_tangents)
            return list(outs) + [t for t in out_tangents if type(t) is not Zero]

        tangent_avals = [tangent_aval(a) for a, nz in zip(jaxpr.in_avals, nonzero) if nz]
        closed = trace_to_jaxpr(fun, list(jaxpr.in_avals) + tangent_avals, name="jvp")
        return _no_consts(closed), out_nonzero

    return _cached(jaxpr, ("jvp", nonzero), build)


@rules.def_jvp(jit_p)
def _jit_jvp(primals, tangents, *, jaxpr, name, donated_invars):
    nonzero = tuple(type(t) is not Zero for t in tangents)
    (consts, new_jaxpr), out_nonzero = jvp_jaxpr(jaxpr, nonzero)
    live = [t for t in tangents if type(t) is not Zero]
    outs = jit_call([*consts, *primals, *live], new_jaxpr, f"jvp({name})")
    n = len(jaxpr.out_avals)
    primal_out, tangent_live = outs[:n], outs[n:]
    zeros = [Zero(tangent_aval(a)) for a, nz in zip(jaxpr.out_avals, out_nonzero) if not nz]
    return primal_out, merge(out_nonzero, zeros, tangent_live)


@rules.def_transpose(jit_p)
def _jit_transpose(cts, *args, jaxpr, name, donated_invars):
    undefined = [is_undefined(a) for a in args]
    residuals = [a for a in args if not is_undefined(a)]
    ct_nonzero = tuple(type(ct) is not Zero for ct in cts)
    live_cts = [ct for ct in cts if type(ct) is not Zero]
    key = ("transpose", tuple(undefined), ct_nonzero)

    def build():
        linear_avals = [a.aval for a in args if is_undefined(a)]

        def fun(*res_and_cts):
            res = res_and_cts[: len(residuals)]
            cts_in = res_and_cts[len(residuals) :]
            full_args = merge(undefined, res, [UndefinedPrimal(a) for a in linear_avals])
            zeros = [Zero(a) for a, nz in zip(jaxpr.out_avals, ct_nonzero) if not nz]
            full_cts = merge(ct_nonzero, zeros, cts_in)
            result = backward_pass(jaxpr.jaxpr, jaxpr.consts, full_args, full_cts)
            return [instantiate(ct) for ct, u in zip(result, undefined) if u]

        avals = [get_aval(r) for r in residuals] + [get_aval(c) for c in live_cts]
        return _no_consts(trace_to_jaxpr(fun, avals, name="transpose"))

    consts, transposed = _cached(jaxpr, key + (tuple(get_aval(r) for r in residuals),), build)
    outs = jit_call([*consts, *residuals, *live_cts], transposed, f"transpose({name})")
    return merge(undefined, [None] * len(residuals), outs)


@rules.def_batch(jit_p)
def _jit_batch(vals, dims, *, jaxpr, name, donated_invars):
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    key = ("batch", tuple(dims), size)

    def build():
        out_batched: list[bool] = []

        def fun(*args):
            outs, out_dims = batch_flat(
                lambda *xs: eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *xs), args, dims, size
            )
            out_batched.extend(d is not not_mapped for d in out_dims)
            return [x if d is not_mapped else move_axis(x, d, 0) for x, d in zip(outs, out_dims)]

        closed = trace_to_jaxpr(fun, [get_aval(v) for v in vals], name="vmap")
        return _no_consts(closed), out_batched

    (consts, batched), out_batched = _cached(jaxpr, key, build)
    outs = jit_call([*consts, *vals], batched, f"vmap({name})")
    return outs, [0 if b else not_mapped for b in out_batched]


def _partial_eval_jit(trace: PartialEvalTrace, args: Sequence[Any], params: dict) -> list[Any]:
    jaxpr, name = params["jaxpr"], params["name"]
    unknowns = tuple(trace.owns(x) for x in args)

    def build():
        split = partial_eval_jaxpr(jaxpr, unknowns)
        return split, _no_consts(split.known)

    split, (known_consts, known_jaxpr) = _cached(jaxpr, ("partial_eval", unknowns), build)
    known_args = [x for x, u in zip(args, unknowns) if not u]
    unknown_args = [x for x, u in zip(args, unknowns) if u]
    with set_current_trace(trace.parent):
        known_outs = jit_call([*known_consts, *known_args], known_jaxpr, f"known({name})")
    n_known = len(known_outs) - split.num_residuals
    residuals = known_outs[n_known:]
    unknown_outs = trace.stage(
        jit_p,
        [*residuals, *unknown_args],
        {
            "jaxpr": split.unknown,
            "name": f"unknown({name})",
            "donated_invars": (False,) * (len(residuals) + len(unknown_args)),
        },
    )
    return merge(split.out_unknowns, known_outs[:n_known], unknown_outs)


rules.def_partial_eval(jit_p)(_partial_eval_jit)


def _no_consts(closed: ClosedJaxpr) -> tuple[list[Any], ClosedJaxpr]:
    """Turn a jaxpr's consts into leading inputs; return (consts, the const-free jaxpr)."""
    if not closed.consts:
        return [], closed
    jaxpr = closed.jaxpr
    hoisted = Jaxpr(
        [], [*jaxpr.constvars, *jaxpr.invars], jaxpr.outvars, jaxpr.eqns, jaxpr.debug_info
    )
    return list(closed.consts), ClosedJaxpr(hoisted, [])
