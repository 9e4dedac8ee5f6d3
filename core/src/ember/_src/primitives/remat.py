"""``remat``: the primitive behind ``checkpoint``, which trades compute for memory in
reverse-mode differentiation (the user-facing decorator and its policies are in
``transforms/checkpoint.py``).

A checkpointed function is one ``remat`` primitive call. Its partial-evaluation rule is the
point of it: instead of saving every intermediate value the backward pass needs, the forward
(known) part saves only the values the *policy* calls saveable, and the backward (unknown)
part recomputes the rest from the saved values and the inputs. The staged backward part is
itself a ``remat`` call, lowered behind an optimisation barrier so XLA cannot merge the
recomputation back into the forward pass. The policy goes down into the partial evaluation
of the body, so that the scans, conds and ``jit`` calls there choose their own residuals by
it, as JAX's do (their rules use ``choose_saved`` and ``save_by_policy`` below). A policy,
the call's ``policy`` parameter, is ``(primitive, *input avals, **params) -> bool``: may
this equation's output be saved? It may answer with ``Saveable``, ``Recompute`` or
``Offloadable(src, dst)`` instead, as JAX's do.

``name`` (``checkpoint_name``) is the identity on a value, with a name that policies can
select it by.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from ember._src import rules
from ember._src.core import Zero, get_aval, set_current_trace, tangent_aval
from ember._src.interpreters.ad import is_undefined
from ember._src.interpreters.batching import not_mapped
from ember._src.interpreters.eval import eval_jaxpr
from ember._src.interpreters.partial_eval import (
    PartialEvalResult,
    PartialEvalTrace,
    dce_jaxpr,
    merge,
    partial_eval_jaxpr,
)
from ember._src.interpreters.reference import evaluate_jaxpr
from ember._src.ir import ClosedJaxpr, Eqn, Jaxpr, Var
from ember._src.lowering.module import lower_jaxpr_inline
from ember._src.primitives import sharding_rules
from ember._src.primitives.jaxpr_transforms import (
    batch_jaxpr,
    jvp_jaxpr,
    materialize_cts,
    trace_const_free,
    transpose_jaxpr,
)
from ember._src.primitives.shape import move_axis

# --------------------------------------------------------------------------------------------
# Evaluation, lowering, jvp, batching, transpose


def _remat_abstract_eval(*avals, jaxpr, policy, prevent_cse):
    return jaxpr.out_avals


def _remat_reference(*args, jaxpr, policy, prevent_cse):
    return evaluate_jaxpr(jaxpr, args)


def _remat_lowering(ctx, *args, jaxpr, policy, prevent_cse):
    if prevent_cse and args:
        # A barrier on the inputs: XLA may not fold this (re)computation into another copy.
        args = ctx.op("stablehlo.optimization_barrier", list(args), list(ctx.avals_in))
    return lower_jaxpr_inline(ctx, jaxpr.jaxpr, [], list(args))


def _remat_jvp(primals, tangents, *, jaxpr, policy, prevent_cse):
    nonzero = [type(t) is not Zero for t in tangents]
    consts, jvp, out_nz = jvp_jaxpr(jaxpr, nonzero)
    live = [t for t in tangents if type(t) is not Zero]
    outs = remat_p.bind(*consts, *primals, *live, jaxpr=jvp, policy=policy, prevent_cse=prevent_cse)
    n = len(jaxpr.out_avals)
    zeros = [Zero(tangent_aval(a)) for a, nz in zip(jaxpr.out_avals, out_nz) if not nz]
    return outs[:n], merge(out_nz, zeros, outs[n:])


def _remat_batch(vals, dims, *, jaxpr, policy, prevent_cse):
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    fronts = [v if d is not_mapped else move_axis(v, d, 0) for v, d in zip(vals, dims)]
    consts, batched, out_b = batch_jaxpr(jaxpr, [d is not not_mapped for d in dims], size)
    outs = remat_p.bind(*consts, *fronts, jaxpr=batched, policy=policy, prevent_cse=prevent_cse)
    return outs, [0 if b else not_mapped for b in out_b]


def _remat_transpose(cts, *args, jaxpr, policy, prevent_cse):
    linear = [is_undefined(x) for x in args]
    residuals = [x for x in args if not is_undefined(x)]
    consts, transposed = transpose_jaxpr(jaxpr, linear)
    outs = remat_p.bind(
        *consts,
        *residuals,
        *materialize_cts(cts),
        jaxpr=transposed,
        policy=policy,
        prevent_cse=prevent_cse,
    )
    return merge(linear, [None] * len(residuals), outs)


# --------------------------------------------------------------------------------------------
# Partial evaluation: save what the policy allows, recompute the rest in the backward pass


def _remat_partial_eval(trace: PartialEvalTrace, args: Sequence[Any], params: dict) -> Any:
    """Split the call into a forward part run now and a backward part staged for later.

    The split itself is ordinary partial evaluation of the body, so loops, conds and nested
    checkpoints inside it split by their own rules (a loop carrying primal and tangent values
    together must not be staged whole: its primal half would then look linear). The policy
    goes down with it: a loop, cond or call chooses the residuals of its own body by it (the
    split's ``decided``). The policy then decides which of the forward part's other values are
    saved; the rest are recomputed at the start of the backward part from the known inputs
    and the saved values.
    """
    closed: ClosedJaxpr = params["jaxpr"]
    unknown_in = [trace.owns(x) for x in args]
    split = partial_eval_jaxpr(closed, unknown_in, policy=params["policy"])
    known_args = [a for a, u in zip(args, unknown_in) if not u]
    unknown_args = [a for a, u in zip(args, unknown_in) if u]
    if not any(split.out_unknowns):
        with set_current_trace(trace.parent):
            return eval_jaxpr(closed.jaxpr, closed.consts, *args)

    known = split.known.jaxpr
    n_known_out = len(known.outvars) - split.num_residuals
    known_outs, residuals = known.outvars[:n_known_out], known.outvars[n_known_out:]
    saved, recomputed = choose_saved(residuals, known.eqns, params["policy"], split.decided)

    # The forward part: the known outputs, plus the values saved for the backward part.
    forward = dce_jaxpr(
        Jaxpr(known.constvars, known.invars, [*known_outs, *saved], known.eqns, "remat_fwd")
    )
    with set_current_trace(trace.parent):
        forward_vals = eval_jaxpr(forward, split.known.consts, *known_args)
    known_results, saved_vals = forward_vals[:n_known_out], forward_vals[n_known_out:]

    # The backward part: recompute the residuals that were not saved, then the unknown part.
    recompute = dce_jaxpr(
        Jaxpr(
            known.constvars,
            [*known.invars, *saved],
            residuals,
            [e for e in known.eqns if id(e) in recomputed],
            "remat_recompute",
        )
    )
    unknown = split.unknown

    def backward(*xs: Any) -> list[Any]:
        n_in, n_saved = len(known.invars), len(saved)
        res = eval_jaxpr(recompute, split.known.consts, *xs[: n_in + n_saved])
        return eval_jaxpr(unknown.jaxpr, unknown.consts, *res, *xs[n_in + n_saved :])

    in_avals = [v.aval for v in (*known.invars, *saved)] + [get_aval(a) for a in unknown_args]
    consts, backward_jaxpr = trace_const_free(backward, in_avals, "remat")
    staged = trace.stage(
        remat_p,
        [*consts, *known_args, *saved_vals, *unknown_args],
        {**params, "jaxpr": backward_jaxpr},
    )
    return merge(split.out_unknowns, known_results, staged)


class RecomputeType:
    """A policy's answer: recompute this value in the backward pass."""

    def __repr__(self) -> str:
        return "Recompute"


class SaveableType:
    """A policy's answer: this value may be saved for the backward pass."""

    def __repr__(self) -> str:
        return "Saveable"


Recompute = RecomputeType()
Saveable = SaveableType()


class Offloadable(NamedTuple):
    """A policy's answer: save this value in memory ``dst`` (moved from ``src``). ember has
    no memory spaces to move it to, so an offloadable value is saved where it is."""

    src: str
    dst: str


def _may_save(policy: Callable[..., Any], eqn: Eqn) -> bool:
    answer = policy(eqn.primitive, *[v.aval for v in eqn.invars], **eqn.params)
    if isinstance(answer, bool):
        return answer
    if isinstance(answer, (SaveableType, Offloadable)):
        return True
    if isinstance(answer, RecomputeType):
        return False
    hint = ""
    if answer is Offloadable:
        hint = " (return an instance, Offloadable(src, dst), not the class)"
    raise TypeError(
        f"checkpoint: a policy must answer True/False, Saveable, Recompute or "
        f"Offloadable(src, dst); {policy!r} answered {answer!r} for {eqn.primitive.name}{hint}"
    )


def choose_saved(
    needed: Sequence[Any],
    eqns: Sequence[Eqn],
    policy: Callable[..., Any],
    decided: Mapping[int, bool] | None = None,
) -> tuple[list[Var], set[int]]:
    """Which forward values to save (policy permitting) and which equations to recompute.

    Walks back from the values the backward part ``needed``: a value the policy lets us save
    is saved; otherwise its equation is recomputed, and what that equation reads is
    considered in turn. Inputs of the function need neither. The values in ``decided`` (by
    the id of their variable) were decided by the policy already, inside a loop, cond or
    call: True ones are saved and False ones recomputed, without asking it about the loop
    as a whole. A policy with
    ``excluded_names`` (``save_anything_except_these_names``) refuses an array with one of
    those names under any name: what a ``name`` equation names is the same array, so it is
    recomputed too rather than offered to the policy again.
    """
    producer = {id(v): eqn for eqn in eqns for v in eqn.outvars}
    never = _arrays_named(eqns, getattr(policy, "excluded_names", frozenset()))
    decided = decided or {}
    chosen = {key for key, saved in decided.items() if saved}
    never |= {key for key, saved in decided.items() if not saved}
    saved: list[Var] = []
    saved_ids: set[int] = set()
    recomputed: set[int] = set()
    pending = [v for v in needed if type(v) is Var]
    while pending:
        var = pending.pop()
        eqn = producer.get(id(var))
        if eqn is None or id(var) in saved_ids or id(eqn) in recomputed:
            continue  # an input of the function, or already handled
        if id(var) in chosen or (id(var) not in never and _may_save(policy, eqn)):
            saved.append(var)
            saved_ids.add(id(var))
        else:
            recomputed.add(id(eqn))
            pending.extend(v for v in eqn.invars if type(v) is Var)
    return saved, recomputed


def saved_outputs(
    jaxpr: Jaxpr, count: int, policy: Callable[..., Any], decided: Mapping[int, bool]
) -> list[bool]:
    """Whether the policy saves each of the first ``count`` outputs of a known part where it is
    computed. A loop's, cond's or call's result that it does not save is recomputed from the
    values saved inside (as JAX stages it again), not saved because it leaves the loop."""
    return [
        type(var) is Var
        and any(v is var for v in choose_saved([var], jaxpr.eqns, policy, decided)[0])
        for var in jaxpr.outvars[:count]
    ]


class PolicySplit(NamedTuple):
    """A split call (a cond branch, a ``jit`` call) cut by a checkpoint policy.

    ``forward`` is the known part reduced to its ``kept`` outputs (those the policy saves)
    and the ``saved`` values (variables of the known part). ``replay`` takes (the saved
    values, the known inputs) and recomputes the other known outputs, then the residuals of
    the unknown part: run in the forward pass, and again, from the saved values, in the
    backward pass.
    """

    forward: ClosedJaxpr
    kept: list[bool]
    saved: list[Var]
    replay: ClosedJaxpr


def save_by_policy(
    split: PartialEvalResult, policy: Callable[..., Any], kept: Sequence[bool] | None = None
) -> PolicySplit:
    """Cut ``split`` by ``policy``; ``kept`` overrides which known outputs are saved (the
    branches of a cond must agree)."""
    known = split.known.jaxpr
    n_out = len(known.outvars) - split.num_residuals
    outs, residuals = known.outvars[:n_out], known.outvars[n_out:]
    if kept is None:
        kept = saved_outputs(known, n_out, policy, split.decided)
    saved, _ = choose_saved(residuals, known.eqns, policy, split.decided)
    kept_outs = [v for v, k in zip(outs, kept) if k]
    forward = dce_jaxpr(
        Jaxpr(known.constvars, known.invars, [*kept_outs, *saved], known.eqns, "remat_fwd")
    )
    replayed = [*(v for v, k in zip(outs, kept) if not k), *residuals]
    eqns, read = replay_eqns(known.eqns, replayed, saved)
    # A saved value that an equation run again computes anyway is an unused input here.
    read_ids = {id(v) for v in read}
    inputs = [v if id(v) in read_ids else Var(v.aval) for v in saved]
    replay = Jaxpr(known.constvars, [*inputs, *known.invars], replayed, eqns, "remat_replay")
    consts = split.known.consts
    return PolicySplit(ClosedJaxpr(forward, consts), list(kept), saved, ClosedJaxpr(replay, consts))


def replay_eqns(
    eqns: Sequence[Eqn], outvars: Sequence[Any], saved: Sequence[Var]
) -> tuple[list[Eqn], list[Var]]:
    """The equations to run again for ``outvars`` when the ``saved`` values are at hand.

    An equation whose needed results are all saved is not run again: those results become
    inputs (the second list, in the order found). One with a needed result that is not
    saved is run again whole, recomputing its saved results too.
    """
    saved_ids = {id(v) for v in saved}
    live = {id(v) for v in outvars if type(v) is Var}
    kept: list[Eqn] = []
    inputs: list[Var] = []
    for eqn in reversed(eqns):
        needed = [v for v in eqn.outvars if id(v) in live]
        if not needed:
            continue
        if all(id(v) in saved_ids for v in needed):
            inputs.extend(needed)
            continue
        kept.append(eqn)
        live.update(id(v) for v in eqn.invars if type(v) is Var)
    kept.reverse()
    return kept, inputs


def _arrays_named(eqns: Sequence[Eqn], names: frozenset[str]) -> set[int]:
    """The variables holding an array named with one of ``names``: the ``name`` equations'
    results and what they name (through chains of names)."""
    named: set[int] = set()
    if not names:
        return named
    for eqn in reversed(eqns):
        if eqn.primitive is name_p and (eqn.params["name"] in names or id(eqn.outvars[0]) in named):
            named.add(id(eqn.outvars[0]))
            if type(eqn.invars[0]) is Var:
                named.add(id(eqn.invars[0]))
    return named


remat_p = rules.define_primitive(
    "remat",
    own_vma=True,  # typed by its jaxpr
    sharding=sharding_rules.from_jaxpr("jaxpr"),
    abstract_eval=_remat_abstract_eval,
    jvp=_remat_jvp,
    transpose=_remat_transpose,
    batch=_remat_batch,
    lowering=_remat_lowering,
    reference=_remat_reference,
    partial_eval=_remat_partial_eval,
    multiple_results=True,
)


# --------------------------------------------------------------------------------------------
# name: a value policies can select by name


def _name_jvp(primals, tangents, *, name):
    # Only the primal value carries the name: it is what a policy may save.
    return name_p.bind(primals[0], name=name), tangents[0]


def _name_batch(vals, dims, *, name):
    return name_p.bind(vals[0], name=name), dims[0]


name_p = rules.define_primitive(
    "name",
    sharding=sharding_rules.same_as_operand,
    abstract_eval=lambda x, *, name: x,
    jvp=_name_jvp,
    batch=_name_batch,
    lowering=lambda ctx, x, *, name: x,
    reference=lambda x, *, name: x,
)
