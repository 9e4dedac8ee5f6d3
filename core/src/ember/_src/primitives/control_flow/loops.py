"""``while_loop``, ``fori_loop`` and ``map``.

``while_loop`` is its own primitive: its trip count is data-dependent, so it supports forward
mode (jvp) but not reverse mode; transposing it raises an error that names ``scan`` as the
way out. ``fori_loop`` with static bounds is a ``scan`` (so ``grad`` works through it) and
otherwise a ``while_loop``; ``map`` is a ``scan`` without a carry.

Under ``vmap`` with a batched predicate, the loop runs while any lane's predicate holds, and
lanes that are done keep their values (a per-lane ``select_n``), as in JAX.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import core, dtypes, errors, rules
from ember._src.core import Zero, get_aval, set_current_trace, tangent_aval
from ember._src.interpreters.ad_util import instantiate
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
    dce_jaxpr,
    merge,
    partial_eval_jaxpr,
)
from ember._src.interpreters.reference import evaluate_jaxpr
from ember._src.ir import ClosedJaxpr, Jaxpr, Var
from ember._src.lowering.module import ThreadedTokens, lower_jaxpr_inline
from ember._src.primitives import sharding_rules
from ember._src.primitives.arithmetic import add
from ember._src.primitives.comparisons import lt
from ember._src.primitives.control_flow import python_loops
from ember._src.primitives.control_flow.body_jaxprs import (
    ControlFlowTypeError,
    flatten_operands,
    permute_jaxpr,
    split_list,
    trace_function,
    with_inputs_at,
)
from ember._src.primitives.control_flow.ref_carry import carry_refs
from ember._src.primitives.control_flow.scan import scan, settle_weak_types
from ember._src.primitives.jaxpr_transforms import (
    batch_jaxpr,
    fixpoint,
    hoist_consts,
    jvp_jaxpr,
    trace_const_free,
)
from ember._src.primitives.reduce import reduce_or
from ember._src.primitives.selection import select_n
from ember._src.primitives.shape import bdim_to_front, broadcast_in_dim, convert_element_type
from ember._src.tree.util import tree_flatten, tree_unflatten

# --------------------------------------------------------------------------------------------
# Abstract evaluation, reference, lowering


def _split(args, cond_nconsts, body_nconsts):
    return split_list(args, [cond_nconsts, body_nconsts])


def _while_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    return list(body_jaxpr.out_avals)


def _while_reference(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cond_consts, body_consts, carry = _split(args, cond_nconsts, body_nconsts)
    while bool(evaluate_jaxpr(cond_jaxpr, [*cond_consts, *carry])[0]):
        carry = evaluate_jaxpr(body_jaxpr, [*body_consts, *carry])
    return carry


def _while_lowering(ctx, *operands, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cond_consts, body_consts, carry = _split(operands, cond_nconsts, body_nconsts)
    tokens = ThreadedTokens(ctx, body_jaxpr)
    n = len(carry)
    state_avals = [*ctx.avals_out, *tokens.avals]

    def cond_region(c, *state):
        return lower_jaxpr_inline(c, cond_jaxpr.jaxpr, [], [*cond_consts, *state[:n]])

    def body_region(c, *state):
        tokens.enter(c, state[n:])
        outs = lower_jaxpr_inline(c, body_jaxpr.jaxpr, [], [*body_consts, *state[:n]])
        return [*outs, *tokens.current(c)]

    regions = [ctx.region(state_avals, cond_region), ctx.region(state_avals, body_region)]
    outs = ctx.op("stablehlo.while", [*carry, *tokens.outer], state_avals, regions=regions)
    tokens.leave(ctx, outs[n:])
    return outs[:n]


# --------------------------------------------------------------------------------------------
# Forward mode


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cond_consts, body_consts, carry = _split(primals, cond_nconsts, body_nconsts)
    _, body_t, init_t = _split(tangents, cond_nconsts, body_nconsts)
    const_nz = [type(t) is not Zero for t in body_t]
    carry_nz = fixpoint(
        lambda cnz: jvp_jaxpr(body_jaxpr, [*const_nz, *cnz])[2],
        [type(t) is not Zero for t in init_t],
    )
    jconsts, jj, _ = jvp_jaxpr(body_jaxpr, [*const_nz, *carry_nz], carry_nz)
    n_j, n_c, n_k = len(jconsts), body_nconsts, len(carry)
    n_ct = sum(const_nz)
    order = list(range(n_j + n_c))  # jvp consts, body consts
    order += list(range(n_j + n_c + n_k, n_j + n_c + n_k + n_ct))  # const tangents
    order += list(range(n_j + n_c, n_j + n_c + n_k))  # carry
    order += list(range(n_j + n_c + n_k + n_ct, len(jj.in_avals)))  # carry tangents
    body = permute_jaxpr(jj, order, list(range(len(jj.out_avals))))
    tangent_avals = list(jj.in_avals[n_j + n_c + n_k + n_ct :])
    cond = with_inputs_at(cond_jaxpr, cond_nconsts + n_k, tangent_avals)
    live_ct = [t for t in body_t if type(t) is not Zero]
    live_kt = [instantiate(t) for t, nz in zip(init_t, carry_nz) if nz]
    outs = while_p.bind(
        *cond_consts,
        *jconsts,
        *body_consts,
        *live_ct,
        *carry,
        *live_kt,
        cond_jaxpr=cond,
        body_jaxpr=body,
        cond_nconsts=cond_nconsts,
        body_nconsts=n_j + n_c + n_ct,
    )
    primal_out, tangent_live = outs[:n_k], outs[n_k:]
    zeros = [Zero(tangent_aval(get_aval(c))) for c, nz in zip(carry, carry_nz) if not nz]
    return primal_out, merge(carry_nz, zeros, tangent_live)


# --------------------------------------------------------------------------------------------
# Partial evaluation: the known carries run now; anything unknown re-runs the whole loop


def _while_partial_eval(trace: PartialEvalTrace, args: Sequence[Any], params: dict) -> Any:
    # A checkpoint's policy (trace.policy) is not handed down: a while loop has no reverse
    # mode, so its unknown part is never transposed and has no residuals to choose among.
    cond_jaxpr, body_jaxpr = params["cond_jaxpr"], params["body_jaxpr"]
    cond_nconsts, body_nconsts = params["cond_nconsts"], params["body_nconsts"]
    unknowns = [trace.owns(x) for x in args]
    cond_uk, body_uk, init_uk = _split(unknowns, cond_nconsts, body_nconsts)
    carry_uk = fixpoint(
        lambda cu: partial_eval_jaxpr(body_jaxpr, [*body_uk, *cu]).out_unknowns, init_uk
    )
    pred_uk = partial_eval_jaxpr(cond_jaxpr, [*cond_uk, *carry_uk]).out_unknowns[0]
    staged = trace.stage(while_p, args, params)
    if pred_uk or all(carry_uk):
        return staged
    cond_consts, body_consts, carry = _split(args, cond_nconsts, body_nconsts)
    known_cond = _drop_inputs(cond_jaxpr, [False] * cond_nconsts + carry_uk)
    split = partial_eval_jaxpr(body_jaxpr, [*body_uk, *carry_uk], carry_uk)
    kconsts, known = hoist_consts(split.known)
    n_known = len(known.out_avals) - split.num_residuals
    kj = known.jaxpr
    known_body = ClosedJaxpr(
        dce_jaxpr(Jaxpr([], kj.invars, kj.outvars[:n_known], kj.eqns, kj.debug_info)), []
    )
    known_body_consts = [*kconsts, *[x for x, u in zip(body_consts, body_uk) if not u]]
    with set_current_trace(trace.parent):
        known_outs = while_p.bind(
            *cond_consts,
            *known_body_consts,
            *[x for x, u in zip(carry, carry_uk) if not u],
            cond_jaxpr=known_cond,
            body_jaxpr=known_body,
            cond_nconsts=cond_nconsts,
            body_nconsts=len(known_body_consts),
        )
    return merge(carry_uk, known_outs, [x for x, u in zip(staged, carry_uk) if u])


def _drop_inputs(closed: ClosedJaxpr, drop: Sequence[bool]) -> ClosedJaxpr:
    """``closed`` without the inputs marked in ``drop`` (which it must not use)."""
    jaxpr = dce_jaxpr(closed.jaxpr)
    used = {id(v) for eqn in jaxpr.eqns for v in eqn.invars if type(v) is Var}
    used |= {id(v) for v in jaxpr.outvars if type(v) is Var}
    invars = []
    for var, dropped in zip(jaxpr.invars, drop):
        if dropped and id(var) in used:
            raise AssertionError("internal error: dropping an input the loop condition reads")
        if not dropped:
            invars.append(var)
    return ClosedJaxpr(Jaxpr([], invars, jaxpr.outvars, jaxpr.eqns, jaxpr.debug_info), [])


def _while_transpose(cts, *args, **params):
    raise errors.EmberTypeError(
        "reverse-mode differentiation (grad, vjp) does not work through lax.while_loop or a "
        "lax.fori_loop with traced bounds, because the number of iterations is only known at "
        "run time; use lax.scan, or fori_loop with Python-int bounds, or forward mode (jvp, "
        f"jacfwd){errors.where()}"
    )


# --------------------------------------------------------------------------------------------
# Batching


def _while_batch(vals, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    batched = [d is not not_mapped for d in dims]
    cond_b, body_b, init_b = _split(batched, cond_nconsts, body_nconsts)
    carry_b = fixpoint(lambda cb: batch_jaxpr(body_jaxpr, [*body_b, *cb], size)[2], init_b)
    pred_b = batch_jaxpr(cond_jaxpr, [*cond_b, *carry_b], size)[2][0]
    if pred_b:
        carry_b = [True] * len(carry_b)
    fronts = [v if d is not_mapped else bdim_to_front(v, d, size) for v, d in zip(vals, dims)]
    cond_consts, body_consts, carry = _split(fronts, cond_nconsts, body_nconsts)
    carry = [
        bdim_to_front(v, not_mapped, size) if b and not ib else v
        for v, b, ib in zip(carry, carry_b, init_b)
    ]
    ccs, cj, _ = batch_jaxpr(cond_jaxpr, [*cond_b, *carry_b], size)
    bcs, bj, _ = batch_jaxpr(body_jaxpr, [*body_b, *carry_b], size, carry_b)
    if not pred_b:
        outs = while_p.bind(
            *ccs,
            *cond_consts,
            *bcs,
            *body_consts,
            *carry,
            cond_jaxpr=cj,
            body_jaxpr=bj,
            cond_nconsts=len(ccs) + cond_nconsts,
            body_nconsts=len(bcs) + body_nconsts,
        )
        return outs, [0 if b else not_mapped for b in carry_b]
    n_cc = len(ccs) + cond_nconsts
    carry_avals = [get_aval(c) for c in carry]
    cond_const_avals = [get_aval(c) for c in [*ccs, *cond_consts]]
    body_const_avals = [get_aval(c) for c in [*bcs, *body_consts]]

    def any_lane(*args):
        return [reduce_or(eval_jaxpr(cj.jaxpr, [], *args)[0], (0,))]

    def step_live_lanes(*args):
        cc, bc, state = split_list(args, [n_cc, len(body_const_avals)])
        live = eval_jaxpr(cj.jaxpr, [], *cc, *state)[0]
        new = eval_jaxpr(bj.jaxpr, [], *bc, *state)
        return [
            select_n(broadcast_in_dim(live, get_aval(old).shape, (0,)), old, updated)
            for old, updated in zip(state, new)
        ]

    c2, new_cond = trace_const_free(any_lane, [*cond_const_avals, *carry_avals], "while_cond")
    b2, new_body = trace_const_free(
        step_live_lanes, [*cond_const_avals, *body_const_avals, *carry_avals], "while_body"
    )
    outs = while_p.bind(
        *c2,
        *ccs,
        *cond_consts,
        *b2,
        *ccs,
        *cond_consts,
        *bcs,
        *body_consts,
        *carry,
        cond_jaxpr=new_cond,
        body_jaxpr=new_body,
        cond_nconsts=len(c2) + n_cc,
        body_nconsts=len(b2) + n_cc + len(body_const_avals),
    )
    return outs, [0] * len(outs)


def _while_sharding(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    carry = avals[cond_nconsts + body_nconsts :]
    return sharding_rules.carried("while_loop", carry, body_jaxpr.out_avals)


# --------------------------------------------------------------------------------------------
# Discharge: a Ref the body closes over becomes a carried value


def _while_discharge(
    in_avals, out_avals, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts
):
    marks = discharged_operands(in_avals, args)  # only consts can be Refs
    cond_marks, body_marks, _ = _split(marks, cond_nconsts, body_nconsts)
    cond_consts, body_consts, carry = _split(args, cond_nconsts, body_nconsts)
    loop = carry_refs(body_jaxpr, body_marks)
    cond_consts, cond = _cond_of_values(cond_jaxpr, cond_consts, cond_marks, bool(loop.carried))
    body_consts, carried = loop.consts_then_carried(body_consts)
    carried_avals = [get_aval(x) for x in carried]
    outs = while_p.bind(
        *cond_consts,
        *body_consts,
        *carried,
        *carry,
        cond_jaxpr=with_inputs_at(cond, len(cond_consts), carried_avals),
        body_jaxpr=loop.body,
        cond_nconsts=len(cond_consts),
        body_nconsts=len(body_consts),
    )
    written = [i in loop.carried for i in range(body_nconsts)]
    finals = new_ref_values(written, outs[: len(carried)])
    return [*[None] * cond_nconsts, *finals, *[None] * len(carry)], outs[len(carried) :]


def _cond_of_values(cond_jaxpr, cond_consts, cond_marks, body_writes):
    """The loop condition reading its Refs as values (loop-invariant: the body must not
    write Refs, since it might write the ones the condition reads)."""
    if not any(cond_marks):
        return cond_consts, cond_jaxpr
    if body_writes:
        raise NotImplementedError(
            "a while_loop whose condition reads a Ref and whose body writes Refs can't be "
            "discharged (interpret mode); read the Ref in the body and carry its value"
            f"{errors.where()}"
        )
    n_carry = len(cond_jaxpr.in_avals) - len(cond_consts)
    discharged = discharge_state(cond_jaxpr, [*cond_marks, *[False] * n_carry])
    if not all(unchanged_refs(discharged, [*cond_marks, *[False] * n_carry])):
        raise errors.EmberTypeError(f"a while_loop's condition writes a Ref{errors.where()}")
    jaxpr = discharged.jaxpr
    just_pred = Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars[:1], jaxpr.eqns, "while_cond")
    new_consts, cond = hoist_consts(ClosedJaxpr(just_pred, discharged.consts))
    return [*new_consts, *cond_consts], cond


while_p = rules.define_primitive(
    "while",
    own_vma=True,  # typed by its jaxpr
    discharge=_while_discharge,
    sharding=_while_sharding,
    abstract_eval=_while_abstract_eval,
    jvp=_while_jvp,
    transpose=_while_transpose,
    batch=_while_batch,
    lowering=_while_lowering,
    reference=_while_reference,
    partial_eval=_while_partial_eval,
    multiple_results=True,
)


# --------------------------------------------------------------------------------------------
# The user-facing functions


def while_loop(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any], init_val: Any):
    """``val = init_val; while cond_fun(val): val = body_fun(val); return val``, traced.

    ``body_fun`` must return a value of ``init_val``'s structure and types. Differentiable in
    forward mode only (use ``scan`` or a static-bound ``fori_loop`` for ``grad``).
    """
    if not callable(cond_fun) or not callable(body_fun):
        raise errors.EmberTypeError(
            f"while_loop: cond_fun and body_fun must be callable{errors.where()}"
        )
    if python_loops.disable_jit():
        result = python_loops.while_loop(cond_fun, body_fun, init_val)
        if result is not python_loops.NOT_APPLICABLE:
            return result
    leaves, tree, avals = flatten_operands(init_val, "while_loop init_val")
    in_tree = tree_flatten((init_val,))[1]
    for _ in range(2):  # a second trace only when weak types of the carry had to be settled
        cond_consts, cond_jaxpr, cond_tree = trace_function(cond_fun, in_tree, avals, "cond_fun")
        _check_predicate(cond_jaxpr, cond_tree)
        body_consts, body_jaxpr, body_tree = trace_function(body_fun, in_tree, avals, "body_fun")
        if body_tree != tree:
            raise ControlFlowTypeError(
                f"while_loop: body_fun must return the structure of init_val ({tree}), got "
                f"{body_tree}{errors.where()}"
            )
        settled = settle_weak_types(avals, body_jaxpr.out_avals, "while_loop")
        if settled == list(avals):
            break
        avals = settled
        leaves = [convert_element_type(x, a.dtype, a.weak_type) for x, a in zip(leaves, avals)]
    outs = while_p.bind(
        *cond_consts,
        *body_consts,
        *leaves,
        cond_jaxpr=cond_jaxpr,
        body_jaxpr=body_jaxpr,
        cond_nconsts=len(cond_consts),
        body_nconsts=len(body_consts),
    )
    return tree_unflatten(tree, outs)


def _check_predicate(jaxpr: ClosedJaxpr, tree: Any) -> None:
    avals = jaxpr.out_avals
    if tree.num_leaves != 1 or avals[0].shape != () or avals[0].dtype != dtypes.bool_:
        got = ", ".join(a.str_short() for a in avals)
        raise ControlFlowTypeError(
            f"while_loop: cond_fun must return a boolean scalar, got ({got}){errors.where()}"
        )


def fori_loop(
    lower: Any,
    upper: Any,
    body_fun: Callable[[Any, Any], Any],
    init_val: Any,
    *,
    unroll: int | bool | None = None,
) -> Any:
    """``val = init_val; for i in range(lower, upper): val = body_fun(i, val); return val``.

    With static (concrete) bounds this is a ``scan`` and supports reverse-mode
    differentiation; with traced bounds it is a ``while_loop`` (forward mode only).
    ``unroll`` is passed to that ``scan``; a ``while_loop`` has no unrolling, so there it
    must be None (as in JAX).
    """
    # The index is weakly typed when both bounds are (Python ints), as in JAX, so that
    # ``c + i`` keeps a carry of a narrower integer type.
    index_dtype, index_weak = dtypes.promote(
        [
            (get_aval(lower).dtype, get_aval(lower).weak_type),
            (get_aval(upper).dtype, get_aval(upper).weak_type),
        ]
    )
    if not dtypes.is_integer(index_dtype):
        raise errors.EmberTypeError(
            f"fori_loop: lower and upper must be integers, got {get_aval(lower).str_short()} and "
            f"{get_aval(upper).str_short()}{errors.where()}"
        )
    static = _static_int(lower), _static_int(upper)
    if None not in static:
        start, stop = static
        first = start if index_weak else np.asarray(start, index_dtype)

        def step(carry, _):
            i, val = carry
            return (add(i, _one(index_dtype, index_weak)), body_fun(i, val)), None

        length = max(stop - start, 0)
        unroll = 1 if unroll is None else unroll
        (_, result), _ = scan(step, (first, init_val), None, length=length, unroll=unroll)
        return result
    if unroll is not None and unroll is not False and unroll != 1:
        raise ValueError(
            f"fori_loop: unroll={unroll!r} needs static (concrete) lower and upper bounds"
            f"{errors.where()}"
        )
    lower = convert_element_type(lower, index_dtype, index_weak)
    upper = convert_element_type(upper, index_dtype, index_weak)

    def cond(carry):
        return lt(carry[0], carry[1])

    def body(carry):
        i, stop, val = carry
        return add(i, _one(index_dtype, index_weak)), stop, body_fun(i, val)

    return while_loop(cond, body, (lower, upper, init_val))[2]


def _one(dtype: np.dtype, weak: bool) -> Any:
    """The index increment: a Python int (weakly typed, the default int) for a weak index."""
    return 1 if weak else np.asarray(1, dtype)


def _static_int(x: Any) -> int | None:
    if isinstance(x, core.Tracer):
        return None
    try:
        return operator.index(x)
    except TypeError:
        return None


def sequential_map(f: Callable[[Any], Any], xs: Any) -> Any:
    """``f`` applied to each slice of ``xs`` along its leading axis, sequentially (a scan)."""
    return scan(lambda _, x: ((), f(x)), (), xs)[1]
