"""``cond`` and ``switch``: run one of several branches, chosen by a traced index.

One primitive, ``cond``, takes an int32 index and the operands, with one const-free jaxpr per
branch (all of the same signature). Values a branch captures from outside are passed as
leading operands, each branch ignoring the others'. Under ``vmap`` with a batched index the
branches all run and a ``select_n`` picks each lane's result, as in JAX.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import ShapedArray, Zero, get_aval, set_current_trace, tangent_aval
from ember._src.interpreters.ad import is_undefined
from ember._src.interpreters.ad_util import zeros
from ember._src.interpreters.batching import not_mapped
from ember._src.interpreters.discharge import (
    discharge_state,
    discharged_operands,
    new_ref_values,
    unchanged_refs,
)
from ember._src.interpreters.eval import eval_jaxpr
from ember._src.interpreters.partial_eval import (
    PartialEvalTrace,
    merge,
    partial_eval_jaxpr,
)
from ember._src.interpreters.reference import evaluate_jaxpr
from ember._src.ir import ClosedJaxpr, Jaxpr, Var
from ember._src.lowering.module import ThreadedTokens, lower_jaxpr_inline
from ember._src.primitives.arithmetic import max as max_, min as min_
from ember._src.primitives.comparisons import ne
from ember._src.primitives.control_flow import python_loops
from ember._src.primitives.control_flow.body_jaxprs import (
    ControlFlowTypeError,
    check_branch_vma,
    describe_avals,
    flatten_operands,
    join_weak_types,
    same_types,
    trace_function,
    with_inputs_at,
    with_leading_inputs,
)
from ember._src.primitives.jaxpr_transforms import (
    batch_jaxpr,
    hoist_consts,
    jvp_jaxpr,
    materialize_cts,
    trace_const_free,
    transpose_jaxpr,
)
from ember._src.primitives.remat import save_by_policy, saved_outputs
from ember._src.primitives.selection import select_n
from ember._src.primitives.shape import broadcast_in_dim, convert_element_type, move_axis
from ember._src.state_types import is_ref
from ember._src.tree.util import tree_unflatten

# --------------------------------------------------------------------------------------------
# Rules


def _cond_abstract_eval(index, *avals, branches, platforms=None):
    if index.shape != () or index.dtype != dtypes.int32:
        raise errors.EmberTypeError(f"cond: the index must be int32[], got {index.str_short()}")
    for b in branches:
        if not same_types(b.in_avals, avals):
            raise errors.EmberTypeError(
                f"cond: a branch takes {describe_avals(b.in_avals)}, got {describe_avals(avals)}"
            )
    return join_weak_types(*[b.out_avals for b in branches])


def _cond_reference(index, *operands, branches, platforms=None):
    if platforms is not None:
        index = branch_for_platform(platforms, "reference")
    chosen = branches[int(np.clip(index, 0, len(branches) - 1))]
    return evaluate_jaxpr(chosen, operands)


def _cond_lowering(ctx, index, *operands, branches, platforms=None):
    if platforms is not None:
        # platform_dependent: only the branch for the platform lowered for is emitted (the
        # others may hold operations this platform cannot compile).
        chosen = branches[branch_for_platform(platforms, ctx.platform)]
        return lower_jaxpr_inline(ctx, chosen.jaxpr, [], operands)
    tokens = ThreadedTokens(ctx, *branches)
    out_avals = [*ctx.avals_out, *tokens.avals]
    n = len(ctx.avals_out)

    def lower_branch(c, branch: ClosedJaxpr):
        tokens.enter(c, tokens.outer)  # (regions of a case see the values around it)
        outs = lower_jaxpr_inline(c, branch.jaxpr, [], operands)
        return [*outs, *tokens.current(c)]

    regions = [ctx.region([], functools.partial(lower_branch, branch=b)) for b in branches]
    outs = ctx.op("stablehlo.case", [index], out_avals, regions=regions)
    tokens.leave(ctx, outs[n:])
    return outs[:n]


def _cond_jvp(primals, tangents, *, branches, platforms=None):
    index, operands = primals[0], primals[1:]
    nonzero = [type(t) is not Zero for t in tangents[1:]]
    out_nonzero = _union(jvp_jaxpr(b, nonzero)[2] for b in branches)
    transformed = [jvp_jaxpr(b, nonzero, out_nonzero) for b in branches]
    consts, new_branches = join_branch_consts([(c, j) for c, j, _ in transformed])
    live = [t for t in tangents[1:] if type(t) is not Zero]
    outs = cond_p.bind(
        index, *consts, *operands, *live, branches=tuple(new_branches), **_kept(platforms)
    )
    n = len(branches[0].out_avals)
    primal_out, tangent_live = outs[:n], outs[n:]
    zero_outs = [
        Zero(tangent_aval(a)) for a, nz in zip(branches[0].out_avals, out_nonzero) if not nz
    ]
    return primal_out, merge(out_nonzero, zero_outs, tangent_live)


def _kept(platforms: tuple | None) -> dict:
    """The ``platforms`` parameter of a ``platform_dependent`` cond, to bind again with its
    transformed branches (ordinary conds have none: their jaxprs print as before)."""
    return {} if platforms is None else {"platforms": platforms}


def branch_for_platform(platforms: tuple, platform: str) -> int:
    """Which branch of a ``platform_dependent`` cond runs on ``platform``: ``platforms``
    holds each branch's platform names (None for the default branch)."""
    for i, names in enumerate(platforms):
        if names is not None and platform in names:
            return i
    for i, names in enumerate(platforms):
        if names is None:
            return i
    named = sorted(n for names in platforms if names is not None for n in names)
    raise errors.LoweringError(
        f"platform_dependent has no branch for platform {platform!r} and no default "
        f"(its branches are for {', '.join(named)}){errors.where()}"
    )


def _union(flag_lists) -> list[bool]:
    flag_lists = list(flag_lists)
    return [any(flags) for flags in zip(*flag_lists)]


def _cond_batch(vals, dims, *, branches, platforms=None):
    index, operands = vals[0], vals[1:]
    index_dim, op_dims = dims[0], dims[1:]
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    ops_front = [v if d is not_mapped else move_axis(v, d, 0) for v, d in zip(operands, op_dims)]
    in_batched = [d is not not_mapped for d in op_dims]
    if index_dim is not not_mapped:
        return _batched_index_select(index, index_dim, ops_front, in_batched, size, branches)
    out_batched = _union(batch_jaxpr(b, in_batched, size)[2] for b in branches)
    transformed = [batch_jaxpr(b, in_batched, size, out_batched) for b in branches]
    consts, new_branches = join_branch_consts([(c, j) for c, j, _ in transformed])
    outs = cond_p.bind(index, *consts, *ops_front, branches=tuple(new_branches), **_kept(platforms))
    return outs, [0 if b else not_mapped for b in out_batched]


def _batched_index_select(index, index_dim, ops_front, in_batched, size, branches):
    """Each lane picks its own branch: run every branch on the batch, select per lane."""
    index = move_axis(index, index_dim, 0)
    results = []
    for b in branches:
        consts, batched, _ = batch_jaxpr(b, in_batched, size, True)
        results.append(eval_jaxpr(batched.jaxpr, [], *consts, *ops_front))
    outs = []
    for per_branch in zip(*results):
        shape = get_aval(per_branch[0]).shape
        which = broadcast_in_dim(index, shape, (0,))
        outs.append(select_n(which, *per_branch))
    return outs, [0] * len(outs)


def _cond_transpose(cts, index, *operands, branches, platforms=None):
    linear = [is_undefined(x) for x in operands]
    residuals = [x for x in operands if not is_undefined(x)]
    transformed = [transpose_jaxpr(b, linear) for b in branches]
    consts, new_branches = join_branch_consts(transformed)
    ct_args = materialize_cts(cts)
    outs = cond_p.bind(
        index, *consts, *residuals, *ct_args, branches=tuple(new_branches), **_kept(platforms)
    )
    return [None, *merge(linear, [None] * len(residuals), outs)]


def _cond_partial_eval(trace: PartialEvalTrace, args: Sequence[Any], params: dict) -> Any:
    branches, platform = params["branches"], _kept(params.get("platforms"))
    index, operands = args[0], args[1:]
    if trace.owns(index):  # the choice itself is unknown: stage all of it
        return trace.stage(cond_p, args, params)
    unknowns = [trace.owns(x) for x in operands]
    policy = trace.policy
    out_unknowns = _union(
        partial_eval_jaxpr(b, unknowns, policy=policy).out_unknowns for b in branches
    )
    if policy is not None:
        return _partial_eval_by_policy(
            trace, index, operands, branches, unknowns, out_unknowns, platform
        )
    splits = [partial_eval_jaxpr(b, unknowns, out_unknowns) for b in branches]
    res_avals = [list(s.unknown.in_avals[: s.num_residuals]) for s in splits]
    all_res = [a for avals in res_avals for a in avals]
    known_pairs, unknown_branches = [], []
    start = 0
    for split, avals in zip(splits, res_avals):
        own_slots = list(range(start, start + len(avals)))
        known_pairs.append(_known_with_all_residuals(split.known, own_slots, all_res))
        # The unknown part takes its own residuals first: the later branches' go after them.
        unknown = with_inputs_at(split.unknown, len(avals), all_res[start + len(avals) :])
        unknown_branches.append(with_leading_inputs(unknown, all_res[:start]))
        start += len(avals)
    known_consts, known_branches = join_branch_consts(known_pairs)
    known_ops = [x for x, u in zip(operands, unknowns) if not u]
    with set_current_trace(trace.parent):
        known_outs = cond_p.bind(
            index, *known_consts, *known_ops, branches=tuple(known_branches), **platform
        )
    n_known = len(known_outs) - len(all_res)
    residuals = known_outs[n_known:]
    unknown_ops = [x for x, u in zip(operands, unknowns) if u]
    unknown_outs = trace.stage(
        cond_p, [index, *residuals, *unknown_ops], {"branches": tuple(unknown_branches), **platform}
    )
    return merge(out_unknowns, known_outs[:n_known], unknown_outs)


def _partial_eval_by_policy(trace, index, operands, branches, unknowns, out_unknowns, platform):
    """Split a cond under a checkpoint policy (``trace.policy``), as JAX does: each branch's
    known part returns the values the policy saves, and the cond's results if the policy
    saves them (in every branch); a replay cond recomputes from those its other results and
    the residuals of the unknown cond, which the enclosing checkpoint recomputes too (it
    never saves them). Branches share result slots of one type (only one branch runs)."""
    policy = trace.policy
    splits = [partial_eval_jaxpr(b, unknowns, out_unknowns, policy) for b in branches]
    n_out = len(out_unknowns) - sum(out_unknowns)
    per_branch = (saved_outputs(s.known.jaxpr, n_out, policy, s.decided) for s in splits)
    kept = [all(flags) for flags in zip(*per_branch)]
    cuts = [save_by_policy(split, policy, kept) for split in splits]
    saved_avals, saved_slots = _shared_slots([[v.aval for v in cut.saved] for cut in cuts])
    res_avals, res_slots = _shared_slots([s.unknown.in_avals[: s.num_residuals] for s in splits])
    known_avals = [a for a, u in zip(branches[0].in_avals, unknowns) if not u]
    unknown_avals = [a for a, u in zip(branches[0].in_avals, unknowns) if u]
    n_replayed = len(kept) - sum(kept)
    forward_pairs, replay_pairs, unknown_pairs = [], [], []
    for split, cut, own_saved, own_res in zip(splits, cuts, saved_slots, res_slots):
        forward_pairs.append(_known_with_all_residuals(cut.forward, own_saved, saved_avals))
        replay = functools.partial(
            _replay_branch, cut.replay, (own_saved, saved_avals), (own_res, res_avals), n_replayed
        )
        replay_pairs.append(trace_const_free(replay, [*saved_avals, *known_avals], "cond_replay"))
        unknown = functools.partial(_unknown_branch, split.unknown, own_res, len(res_avals))
        unknown_pairs.append(trace_const_free(unknown, [*res_avals, *unknown_avals], "cond"))
    known_ops = [x for x, u in zip(operands, unknowns) if not u]
    forward_consts, forward_branches = join_branch_consts(forward_pairs)
    replay_consts, replay_branches = join_branch_consts(replay_pairs)
    with set_current_trace(trace.parent):
        forward_outs = cond_p.bind(
            index, *forward_consts, *known_ops, branches=tuple(forward_branches), **platform
        )
        kept_outs, saved = forward_outs[: sum(kept)], forward_outs[sum(kept) :]
        replayed = cond_p.bind(
            index, *replay_consts, *saved, *known_ops, branches=tuple(replay_branches), **platform
        )
    residuals = replayed[n_replayed:]
    # Chosen by the policy here: the enclosing checkpoint saves and recomputes these.
    trace.mark_saved([*kept_outs, *saved])
    trace.mark_recomputed(residuals)
    known_outs = merge([not k for k in kept], kept_outs, replayed[:n_replayed])
    unknown_consts, unknown_branches = join_branch_consts(unknown_pairs)
    unknown_ops = [x for x, u in zip(operands, unknowns) if u]
    unknown_outs = trace.stage(
        cond_p,
        [index, *unknown_consts, *residuals, *unknown_ops],
        {"branches": tuple(unknown_branches), **platform},
    )
    return merge(out_unknowns, known_outs, unknown_outs)


def _replay_branch(replay, saved_at, res_at, n_replayed, *args):
    """A branch of the replay cond: from its own saved values and the known operands, the
    results not saved, then its residuals in its residual slots (zeros in the others).
    ``saved_at`` and ``res_at`` are (its slots, the slots' types) of each kind."""
    saved_slots, saved_avals = saved_at
    saved, known_ops = args[: len(saved_avals)], args[len(saved_avals) :]
    outs = eval_jaxpr(replay.jaxpr, replay.consts, *[saved[i] for i in saved_slots], *known_ops)
    return [*outs[:n_replayed], *_into_slots(outs[n_replayed:], *res_at)]


def _into_slots(values, slots, avals):
    """``values`` in their ``slots`` of slots of types ``avals``, zeros in the others."""
    filled = [zeros(a) for a in avals]
    for slot, value in zip(slots, values):
        filled[slot] = value
    return filled


def _unknown_branch(unknown, res_slots, n_slots, *args):
    """A branch of the unknown cond: its own residuals from the residual slots."""
    slots, unknown_ops = args[:n_slots], args[n_slots:]
    own = [slots[i] for i in res_slots]
    return eval_jaxpr(unknown.jaxpr, unknown.consts, *own, *unknown_ops)


def _known_with_all_residuals(
    known_part: ClosedJaxpr, slots: Sequence[int], all_res: list[ShapedArray]
):
    """The known part of one branch, returning its residuals in its ``slots`` of the
    residual slots ``all_res`` and zeros in the others."""
    consts, known = hoist_consts(known_part)
    n_out = len(known.out_avals) - len(slots)

    def fun(*args):
        outs = eval_jaxpr(known.jaxpr, [], *args)
        return [*outs[:n_out], *_into_slots(outs[n_out:], slots, all_res)]

    # The wrapper takes (its own captured values, the known part's consts, known operands).
    inner_consts, wrapped = trace_const_free(fun, known.in_avals, "cond_known")
    return [*inner_consts, *consts], wrapped


def _shared_slots(aval_lists: Sequence[Sequence[ShapedArray]]):
    """Residual slots the branches share: a branch's value takes a free slot of its type that
    another branch uses, if there is one (only one branch runs), else a new one. Returns the
    slots' types and, per branch, the slot of each of its values."""
    slot_avals: list[ShapedArray] = []
    per_branch = []
    for avals in aval_lists:
        taken: set[int] = set()
        slots = []
        for aval in avals:
            free = (j for j, a in enumerate(slot_avals) if j not in taken and a == aval)
            slot = next(free, len(slot_avals))
            if slot == len(slot_avals):
                slot_avals.append(aval)
            taken.add(slot)
            slots.append(slot)
        per_branch.append(slots)
    return slot_avals, per_branch


def _cond_sharding(index, *avals, branches, platforms=None):
    """Every branch must give each result the same typed sharding."""
    out = []
    for i, first in enumerate(branches[0].out_avals):
        for branch in branches[1:]:
            other = branch.out_avals[i]
            if other.typed_sharding != first.typed_sharding:
                raise errors.ShardingTypeError(
                    f"cond: the branches give result #{i} different shardings "
                    f"({first.str_short()} and {other.str_short()}); reshard inside the "
                    f"branches so that they agree{errors.where()}"
                )
        out.append(first.typed_sharding)
    return out


# --------------------------------------------------------------------------------------------
# Discharge: each branch returns the final values of the Refs it was given


def _cond_discharge(in_avals, out_avals, index, *operands, branches, platforms=None):
    marks = discharged_operands(in_avals[1:], operands)
    discharged = [discharge_state(b, marks) for b in branches]
    # A Ref no branch writes needs no result: it keeps its value.
    per_branch = [unchanged_refs(d, marks) for d in discharged]
    read_only = iter([all(flags) for flags in zip(*per_branch)])
    written = [m and not next(read_only) for m in marks]
    n = len(out_avals)
    kept = [*range(n), *(n + k for k, i in enumerate(_marked(marks)) if written[i])]
    trimmed = [hoist_consts(_with_outputs(d, kept)) for d in discharged]
    consts, new_branches = join_branch_consts(trimmed)
    outs = cond_p.bind(index, *consts, *operands, branches=tuple(new_branches), **_kept(platforms))
    return [None, *new_ref_values(written, outs[n:])], outs[:n]


def _marked(marks):
    return [i for i, m in enumerate(marks) if m]


def _with_outputs(closed: ClosedJaxpr, kept: Sequence[int]) -> ClosedJaxpr:
    jaxpr = closed.jaxpr
    outvars = [jaxpr.outvars[i] for i in kept]
    return ClosedJaxpr(
        Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, jaxpr.eqns, jaxpr.debug_info), closed.consts
    )


cond_p = rules.define_primitive(
    "cond",
    own_vma=True,  # typed by its jaxpr
    discharge=_cond_discharge,
    sharding=_cond_sharding,
    abstract_eval=_cond_abstract_eval,
    jvp=_cond_jvp,
    transpose=_cond_transpose,
    batch=_cond_batch,
    lowering=_cond_lowering,
    reference=_cond_reference,
    partial_eval=_cond_partial_eval,
    multiple_results=True,
)


# --------------------------------------------------------------------------------------------
# The user-facing functions

# Marks that the legacy ``operand=`` keyword was not given (None is a valid operand).
_NO_OPERAND = object()


def cond(
    pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any, operand: Any = _NO_OPERAND
) -> Any:
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``, with a traced ``pred``.

    Both branches are traced; they must return the same structure of the same types.
    ``operand=`` is JAX's older spelling of one positional operand.
    """
    operands = _legacy_operand(operands, operand, "cond")
    if not callable(true_fun) or not callable(false_fun):
        raise errors.EmberTypeError(
            f"cond: true_fun and false_fun must be callable{errors.where()}"
        )
    aval = _scalar_aval(pred, "cond", "pred")
    if aval.dtype != dtypes.bool_:
        pred = ne(pred, np.zeros((), aval.dtype))
    index = convert_element_type(pred, dtypes.int32)
    if python_loops.disable_jit():
        result = python_loops.switch(index, [false_fun, true_fun], operands)
        if result is not python_loops.NOT_APPLICABLE:
            return result
    return bind_branches(index, [false_fun, true_fun], operands, "cond", ("false_fun", "true_fun"))


def switch(
    index: Any, branches: Sequence[Callable], *operands: Any, operand: Any = _NO_OPERAND
) -> Any:
    """``branches[index](*operands)``; ``index`` is clamped into range, as in JAX."""
    operands = _legacy_operand(operands, operand, "switch")
    branches = list(branches)
    if not branches or not all(callable(b) for b in branches):
        raise TypeError(
            f"switch: branches must be a non-empty sequence of callables{errors.where()}"
        )
    aval = _scalar_aval(index, "switch", "index")
    if not dtypes.is_integer(aval.dtype):
        raise errors.EmberTypeError(
            f"switch: index must be an integer scalar, got {aval.str_short()}{errors.where()}"
        )
    index = convert_element_type(index, dtypes.int32)
    index = min_(max_(index, np.int32(0)), np.int32(len(branches) - 1))
    if python_loops.disable_jit():
        result = python_loops.switch(index, branches, operands)
        if result is not python_loops.NOT_APPLICABLE:
            return result
    names = tuple(f"branch {i}" for i in range(len(branches)))
    return bind_branches(index, branches, operands, "switch", names)


def _legacy_operand(operands: tuple, operand: Any, what: str) -> tuple:
    """The operands, with the legacy ``operand=`` keyword taken as the only one."""
    if operand is _NO_OPERAND:
        return operands
    if operands:
        raise TypeError(
            f"{what}: operand= cannot be combined with positional operands{errors.where()}"
        )
    return (operand,)


def _scalar_aval(x: Any, what: str, name: str) -> ShapedArray:
    try:
        aval = get_aval(x)
    except errors.EmberTypeError:
        raise errors.EmberTypeError(
            f"{what}: {name} must be a scalar array, got {type(x).__name__}{errors.where()}"
        ) from None
    if aval.shape != ():
        raise errors.EmberTypeError(
            f"{what}: {name} must be a scalar, got shape {aval.shape}{errors.where()}"
        )
    return aval


def bind_branches(
    index: Any,
    funs: list[Callable],
    operands: tuple,
    what: str,
    names: Sequence[str],
    platforms: tuple | None = None,
) -> Any:
    """``funs[index](*operands)`` as one ``cond``: every function traced as a branch (they
    must agree on their results' structure and types); ``platforms`` for
    ``platform_dependent``."""
    leaves, in_tree, avals = flatten_operands(operands, what)
    traced = [trace_function(f, in_tree, avals, f"{what}_{n}") for f, n in zip(funs, names)]
    out_tree = traced[0][2]
    for (_, jaxpr, tree), name in zip(traced, names):
        if tree != out_tree:
            raise ControlFlowTypeError(
                f"{what}: {names[0]} and {name} must return the same structure, got "
                f"{out_tree} and {tree}{errors.where()}"
            )
        if not same_types(jaxpr.out_avals, traced[0][1].out_avals):
            raise ControlFlowTypeError(
                f"{what}: {names[0]} and {name} must return the same types, got "
                f"{describe_avals(traced[0][1].out_avals)} and {describe_avals(jaxpr.out_avals)}"
                f"{errors.where()}"
            )
        check_branch_vma(traced[0][1].out_avals, jaxpr.out_avals, what, (names[0], name))
    consts, branches = join_branch_consts([(c, j) for c, j, _ in traced])
    outs = cond_p.bind(index, *consts, *leaves, branches=tuple(branches), **_kept(platforms))
    return tree_unflatten(out_tree, outs)


def join_branch_consts(
    pairs: Sequence[tuple[Sequence[Any], ClosedJaxpr]],
) -> tuple[list[Any], list[ClosedJaxpr]]:
    """One operand list for all branches' captured values; each branch ignores the others'.

    A Ref several branches capture is one operand they share: discharged, each branch then
    returns that Ref's value after it ran, rather than one copy per branch (only the copy of
    the branch taken would hold its writes)."""
    all_consts: list[Any] = []
    ref_slots: dict[int, int] = {}
    slots_per_branch = []
    for consts, _ in pairs:
        slots = []
        for c in consts:
            if is_ref(get_aval(c)):
                slots.append(ref_slots.setdefault(id(c), len(all_consts)))
                if slots[-1] == len(all_consts):
                    all_consts.append(c)
            else:
                slots.append(len(all_consts))
                all_consts.append(c)
        slots_per_branch.append(slots)
    all_avals = [get_aval(c) for c in all_consts]
    jaxprs = [
        _taking_consts_at(jaxpr, slots, all_avals)
        for (_, jaxpr), slots in zip(pairs, slots_per_branch)
    ]
    return all_consts, jaxprs


def _taking_consts_at(closed: ClosedJaxpr, slots: Sequence[int], avals: Sequence[Any]):
    """``closed``, whose leading inputs are its consts, taking instead all ``avals`` (its
    const k at position ``slots[k]``, the others unused) before its other inputs."""
    jaxpr = closed.jaxpr
    own = dict(zip(slots, jaxpr.invars))
    invars = [own.get(p) or Var(aval) for p, aval in enumerate(avals)]
    invars += jaxpr.invars[len(slots) :]
    return ClosedJaxpr(
        Jaxpr(jaxpr.constvars, invars, jaxpr.outvars, jaxpr.eqns, jaxpr.debug_info),
        list(closed.consts),
    )
