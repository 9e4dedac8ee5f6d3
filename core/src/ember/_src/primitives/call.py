"""``jit``'s primitive: a call of a staged jaxpr, kept as one equation under transformations.

Every transformation of a ``jit`` call produces another ``jit`` call of a transformed jaxpr,
so ``grad(jit(f))`` and ``vmap(jit(f))`` still compile ``f``'s derivative or batched form as
one computation, and partial evaluation splits it into a known and an unknown call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember._src import rules
from ember._src.core import Zero, get_aval, set_current_trace, tangent_aval
from ember._src.interpreters.ad import UndefinedPrimal, backward_pass, is_undefined
from ember._src.interpreters.ad_util import instantiate
from ember._src.interpreters.batching import not_mapped
from ember._src.interpreters.discharge import discharge_state, discharged_operands, new_ref_values
from ember._src.interpreters.partial_eval import PartialEvalTrace, merge, partial_eval_jaxpr
from ember._src.interpreters.reference import evaluate_jaxpr
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.ir import ClosedJaxpr
from ember._src.lowering.module import lower_jaxpr_inline
from ember._src.primitives import sharding_rules
from ember._src.primitives.jaxpr_transforms import (
    batch_jaxpr,
    cached,
    hoist_consts,
    jvp_jaxpr,
)
from ember._src.primitives.remat import save_by_policy
from ember._src.primitives.shape import move_axis


def _jit_abstract_eval(*avals, jaxpr, name, donated_invars):
    return jaxpr.out_avals


def _jit_reference(*args, jaxpr, name, donated_invars):
    return evaluate_jaxpr(jaxpr, args)


def _jit_lowering(ctx, *operands, jaxpr, name, donated_invars):
    consts = [ctx.constant(c, get_aval(c)) for c in jaxpr.consts]
    return lower_jaxpr_inline(ctx, jaxpr.jaxpr, consts, operands)


def _jit_jvp(primals, tangents, *, jaxpr, name, donated_invars):
    nonzero = tuple(type(t) is not Zero for t in tangents)
    consts, new_jaxpr, out_nonzero = jvp_jaxpr(jaxpr, nonzero)
    live = [t for t in tangents if type(t) is not Zero]
    outs = jit_call([*consts, *primals, *live], new_jaxpr, f"jvp({name})")
    n = len(jaxpr.out_avals)
    primal_out, tangent_live = outs[:n], outs[n:]
    zeros = [Zero(tangent_aval(a)) for a, nz in zip(jaxpr.out_avals, out_nonzero) if not nz]
    return primal_out, merge(out_nonzero, zeros, tangent_live)


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
        return hoist_consts(trace_to_jaxpr(fun, avals, name="transpose"))

    consts, transposed = cached(jaxpr, key + (tuple(get_aval(r) for r in residuals),), build)
    outs = jit_call([*consts, *residuals, *live_cts], transposed, f"transpose({name})")
    return merge(undefined, [None] * len(residuals), outs)


def _jit_batch(vals, dims, *, jaxpr, name, donated_invars):
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    fronts = [v if d is not_mapped else move_axis(v, d, 0) for v, d in zip(vals, dims)]
    consts, batched, out_batched = batch_jaxpr(jaxpr, [d is not not_mapped for d in dims], size)
    outs = jit_call([*consts, *fronts], batched, f"vmap({name})")
    return outs, [0 if b else not_mapped for b in out_batched]


def _partial_eval_jit(trace: PartialEvalTrace, args: Sequence[Any], params: dict) -> list[Any]:
    jaxpr, name = params["jaxpr"], params["name"]
    unknowns = tuple(trace.owns(x) for x in args)
    if trace.policy is not None:
        return _partial_eval_by_policy(trace, args, params, unknowns)

    def build():
        split = partial_eval_jaxpr(jaxpr, unknowns)
        return split, hoist_consts(split.known)

    split, (known_consts, known_jaxpr) = cached(jaxpr, ("partial_eval", unknowns), build)
    known_args = [x for x, u in zip(args, unknowns) if not u]
    unknown_args = [x for x, u in zip(args, unknowns) if u]
    with set_current_trace(trace.parent):
        known_outs = jit_call([*known_consts, *known_args], known_jaxpr, f"known({name})")
    n_known = len(known_outs) - split.num_residuals
    residuals = known_outs[n_known:]
    unknown_outs = _stage_unknown(trace, split.unknown, [*residuals, *unknown_args], name)
    return merge(split.out_unknowns, known_outs[:n_known], unknown_outs)


def _partial_eval_by_policy(
    trace: PartialEvalTrace, args: Sequence[Any], params: dict, unknowns: Sequence[bool]
) -> list[Any]:
    """Split a call under a checkpoint policy (``trace.policy``), as JAX does: the known call
    returns the values the policy saves among its body's, and its results if the policy
    saves them; a replay call recomputes from those its other results and the residuals of
    the unknown call, which the enclosing checkpoint recomputes too (it never saves them).
    (Not cached: a policy need not be hashable.)"""
    jaxpr, name, policy = params["jaxpr"], params["name"], trace.policy
    split = partial_eval_jaxpr(jaxpr, unknowns, policy=policy)
    cut = save_by_policy(split, policy)
    known_args = [x for x, u in zip(args, unknowns) if not u]
    unknown_args = [x for x, u in zip(args, unknowns) if u]
    forward_consts, forward = hoist_consts(cut.forward)
    replay_consts, replay = hoist_consts(cut.replay)
    with set_current_trace(trace.parent):
        forward_outs = jit_call([*forward_consts, *known_args], forward, f"known({name})")
        n_kept = sum(cut.kept)
        kept_outs, saved = forward_outs[:n_kept], forward_outs[n_kept:]
        replayed = jit_call([*replay_consts, *saved, *known_args], replay, f"replay({name})")
    n_replayed = len(cut.kept) - n_kept
    residuals = replayed[n_replayed:]
    # Chosen by the policy here: the enclosing checkpoint saves and recomputes these.
    trace.mark_saved([*kept_outs, *saved])
    trace.mark_recomputed(residuals)
    known_outs = merge([not k for k in cut.kept], kept_outs, replayed[:n_replayed])
    unknown_outs = _stage_unknown(trace, split.unknown, [*residuals, *unknown_args], name)
    return merge(split.out_unknowns, known_outs, unknown_outs)


def _stage_unknown(trace: PartialEvalTrace, unknown: Any, args: list[Any], name: str) -> Any:
    """The unknown part of a split call, staged on ``trace`` as a call of its own."""
    params = {
        "jaxpr": unknown,
        "name": f"unknown({name})",
        "donated_invars": (False,) * len(args),
    }
    return trace.stage(jit_p, args, params)


def _jit_discharge(in_avals, out_avals, *args, jaxpr, name, donated_invars):
    # The call stays a call, of its body discharged: it also returns the Refs' final values.
    marks = discharged_operands(in_avals, args)
    consts, discharged = hoist_consts(discharge_state(jaxpr, marks))
    outs = jit_call([*consts, *args], discharged, name)
    n = len(out_avals)
    return new_ref_values(marks, outs[n:]), outs[:n]


jit_p = rules.define_primitive(
    "jit",
    own_vma=True,  # typed by its jaxpr
    discharge=_jit_discharge,
    sharding=sharding_rules.from_jaxpr("jaxpr"),
    abstract_eval=_jit_abstract_eval,
    jvp=_jit_jvp,
    transpose=_jit_transpose,
    batch=_jit_batch,
    lowering=_jit_lowering,
    reference=_jit_reference,
    partial_eval=_partial_eval_jit,
    multiple_results=True,
)


def jit_call(
    args: Sequence[Any], jaxpr: ClosedJaxpr, name: str, donated_invars: Sequence[bool] | None = None
) -> list[Any]:
    """Bind a call of ``jaxpr`` (which must have no consts: pass them as leading args)."""
    donated = tuple(donated_invars) if donated_invars else (False,) * len(args)
    return jit_p.bind(*args, jaxpr=jaxpr, name=name, donated_invars=donated)
