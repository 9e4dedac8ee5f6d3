"""``scan``: a loop with a carry, over the leading axis of its inputs, stacking its outputs.

The ``scan`` primitive's operands are ``consts`` (loop-invariant values), the initial
``carry`` and the stacked ``xs``; its const-free ``jaxpr`` maps (consts, carry, x) to
(carry, y). ``fori_loop`` with static bounds and ``map`` are scans, so reverse-mode
differentiation works through them. Partial evaluation stacks the residuals each iteration
needs as extra outputs, except residuals that are the loop's own consts (weights, typically),
which are passed through unstacked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import (
    ShapedArray,
    Zero,
    get_aval,
    set_current_trace,
    tangent_aval,
)
from ember._src.interpreters.ad import is_undefined
from ember._src.interpreters.ad_util import add_tangents, instantiate, zeros
from ember._src.interpreters.batching import drop_dim, not_mapped
from ember._src.interpreters.discharge import discharged_operands, new_ref_values
from ember._src.interpreters.eval import eval_jaxpr
from ember._src.interpreters.partial_eval import (
    PartialEvalTrace,
    dce_jaxpr,
    merge,
    partial_eval_jaxpr,
)
from ember._src.interpreters.reference import evaluate_jaxpr
from ember._src.ir import ClosedJaxpr, Jaxpr, Var
from ember._src.lowering.mlir import i64_array
from ember._src.lowering.module import ThreadedTokens, lower_jaxpr_inline
from ember._src.primitives import sharding_rules
from ember._src.primitives.control_flow import python_loops
from ember._src.primitives.control_flow.body_jaxprs import (
    ControlFlowTypeError,
    check_carry_vma,
    describe_avals,
    flatten_operands,
    permute_jaxpr,
    split_list,
    trace_function,
)
from ember._src.primitives.control_flow.ref_carry import carry_refs
from ember._src.primitives.jaxpr_transforms import (
    batch_jaxpr,
    fixpoint,
    hoist_consts,
    jvp_jaxpr,
    materialize_cts,
    trace_const_free,
    transpose_jaxpr,
)
from ember._src.primitives.remat import choose_saved, replay_eqns, saved_outputs
from ember._src.primitives.shape import (
    bdim_to_front,
    convert_element_type,
    move_axis,
    typed_like,
)
from ember._src.runtime.sharding import typed_sharding
from ember._src.tree.util import tree_flatten, tree_unflatten

# --------------------------------------------------------------------------------------------
# Abstract evaluation, reference, lowering


def _split_operands(args, num_consts, num_carry):
    consts, carry, xs = split_list(args, [num_consts, num_carry])
    return consts, carry, xs


def _scan_abstract_eval(*avals, jaxpr, length, reverse, num_consts, num_carry, unroll):
    _, carry, xs = _split_operands(avals, num_consts, num_carry)
    for a in xs:
        if not a.shape or a.shape[0] != length:
            raise errors.EmberTypeError(f"scan: xs leaf {a.str_short()} has no axis of {length}")
    out = jaxpr.out_avals
    ys = [ShapedArray((length, *a.shape), a.dtype, a.weak_type, vma=a.vma) for a in out[num_carry:]]
    return [*out[:num_carry], *ys]


def _scan_reference(*args, jaxpr, length, reverse, num_consts, num_carry, unroll):
    consts, carry, xs = _split_operands(args, num_consts, num_carry)
    ys_per_step = []
    order = range(length - 1, -1, -1) if reverse else range(length)
    for i in order:
        outs = evaluate_jaxpr(jaxpr, [*consts, *carry, *[x[i] for x in xs]])
        carry, ys = outs[:num_carry], outs[num_carry:]
        ys_per_step.append(ys)
    if reverse:
        ys_per_step.reverse()
    y_avals = jaxpr.out_avals[num_carry:]
    stacked = [
        np.stack([step[k] for step in ys_per_step]) if length else np.zeros((0, *a.shape), a.dtype)
        for k, a in enumerate(y_avals)
    ]
    return [*carry, *stacked]


_I32 = ShapedArray((), dtypes.int32)
_BOOL = ShapedArray((), dtypes.bool_)


def _scan_lowering(ctx, *operands, jaxpr, length, reverse, num_consts, num_carry, unroll):
    """A ``stablehlo.while`` whose body runs ``unroll`` iterations; the iterations that do not
    fill a whole trip follow the loop inline, and a scan unrolled into at most one trip has
    no loop at all (XLA runs straight-line code without a loop's per-trip costs, and can run
    independent iterations' operations side by side)."""
    consts, carry, xs = _split_operands(operands, num_consts, num_carry)
    x_avals = ctx.avals_in[num_consts + num_carry :]
    ys_avals = list(ctx.avals_out)[num_carry:]
    ys = [ctx.full(0, a) for a in ys_avals]
    if length == 0:
        # No iteration runs; the body is not even emitted, since slicing one row out of a
        # zero-length xs would not type-check.
        return [*carry, *ys]
    unroll = max(1, min(int(unroll), length))
    trips = length // unroll

    def iteration(c, step: str, loop_carry: list[str], ys: list[str]) -> list[str]:
        """Iteration number ``step`` (an i32 value) of the scan: new carry, then new ys."""
        index = step
        if reverse:
            last = c.constant(length - 1, _I32)
            index = c.op("stablehlo.subtract", [last, step], _I32)
        zero = c.constant(0, _I32)
        x_slices = [_index_leading(c, x, a, index, zero) for x, a in zip(xs, x_avals)]
        outs = lower_jaxpr_inline(c, jaxpr.jaxpr, [], [*consts, *loop_carry, *x_slices])
        new_carry, y_vals = outs[:num_carry], outs[num_carry:]
        new_ys = [
            _update_leading(c, buf, y, a, index, zero) for buf, y, a in zip(ys, y_vals, ys_avals)
        ]
        return [*new_carry, *new_ys]

    state = [*carry, *ys]
    done = 0
    if trips > 1:
        state = _unrolled_while(ctx, jaxpr, state, trips, unroll, iteration, num_carry)
        done = trips * unroll
    for step in range(done, length):
        s = ctx.constant(step, _I32)
        state = iteration(ctx, s, state[:num_carry], state[num_carry:])
    return state


def _unrolled_while(ctx, jaxpr, state, trips, unroll, iteration, num_carry) -> list[str]:
    """``trips`` trips of a ``stablehlo.while`` over ``state`` (carry then ys), each running
    ``iteration`` for ``unroll`` consecutive steps."""
    tokens = ThreadedTokens(ctx, jaxpr)
    n = 1 + len(state)
    loop_avals = [_I32, *ctx.avals_out, *tokens.avals]

    def cond_region(c, i, *_rest):
        limit = c.constant(trips, _I32)
        return [c.op("stablehlo.compare", [i, limit], _BOOL, _compare("LT"))]

    def body_region(c, i, *loop_state):
        tokens.enter(c, loop_state[n - 1 :])
        values = list(loop_state[: n - 1])
        first = c.op("stablehlo.multiply", [i, c.constant(unroll, _I32)], _I32)
        for r in range(unroll):
            step = first if r == 0 else c.op("stablehlo.add", [first, c.constant(r, _I32)], _I32)
            values = iteration(c, step, values[:num_carry], values[num_carry:])
        one = c.constant(1, _I32)
        return [c.op("stablehlo.add", [i, one], _I32), *values, *tokens.current(c)]

    start = ctx.constant(0, _I32)
    regions = [ctx.region(loop_avals, cond_region), ctx.region(loop_avals, body_region)]
    results = ctx.op("stablehlo.while", [start, *state, *tokens.outer], loop_avals, regions=regions)
    tokens.leave(ctx, results[n:])
    return results[1:n]


def _compare(direction: str) -> dict[str, str]:
    return {"comparison_direction": f"#stablehlo<comparison_direction {direction}>"}


def _index_leading(ctx, x: str, aval: ShapedArray, index: str, zero: str) -> str:
    """``x[index]`` for a traced index into the leading axis."""
    row = ShapedArray((1, *aval.shape[1:]), aval.dtype)
    starts = [index] + [zero] * (len(aval.shape) - 1)
    sliced = ctx.op(
        "stablehlo.dynamic_slice", [x, *starts], row, {"slice_sizes": i64_array(row.shape)}
    )
    return ctx.op("stablehlo.reshape", [sliced], ShapedArray(aval.shape[1:], aval.dtype))


def _update_leading(ctx, buf: str, y: str, aval: ShapedArray, index: str, zero: str) -> str:
    """``buf`` with ``buf[index] = y``."""
    row = ShapedArray((1, *aval.shape[1:]), aval.dtype)
    reshaped = ctx.op("stablehlo.reshape", [y], row)
    starts = [index] + [zero] * (len(aval.shape) - 1)
    return ctx.op("stablehlo.dynamic_update_slice", [buf, reshaped, *starts], aval)


# --------------------------------------------------------------------------------------------
# Forward mode


def _scan_jvp(primals, tangents, *, jaxpr, length, reverse, num_consts, num_carry, unroll):
    n_x = len(primals) - num_consts - num_carry
    nonzero = [type(t) is not Zero for t in tangents]
    const_nz, init_nz, xs_nz = split_list(nonzero, [num_consts, num_carry])
    carry_nz = fixpoint(
        lambda cnz: jvp_jaxpr(jaxpr, [*const_nz, *cnz, *xs_nz])[2][:num_carry], init_nz
    )
    n_y = len(jaxpr.out_avals) - num_carry
    jconsts, jj, out_nz = jvp_jaxpr(
        jaxpr, [*const_nz, *carry_nz, *xs_nz], [*carry_nz, *([False] * n_y)]
    )
    ys_nz = out_nz[num_carry:]
    # jj's inputs: jconsts, consts, carry, xs, then the live tangents of each group.
    n_j, n_ct, n_kt = len(jconsts), sum(const_nz), sum(carry_nz)
    base = n_j + num_consts + num_carry + n_x
    groups = _ranges(
        [n_j, num_consts, num_carry, n_x, n_ct, n_kt, len(jj.in_avals) - base - n_ct - n_kt]
    )
    j_consts, p_consts, p_carry, p_xs, t_consts, t_carry, t_xs = groups
    in_order = [*j_consts, *p_consts, *t_consts, *p_carry, *t_carry, *p_xs, *t_xs]
    # jj's outputs: carry, ys, then live carry tangents and live ys tangents.
    n_kt_out, n_yt = sum(carry_nz), sum(ys_nz)
    o_carry, o_ys, o_kt, o_yt = _ranges([num_carry, n_y, n_kt_out, n_yt])
    out_order = [*o_carry, *o_kt, *o_ys, *o_yt]
    body = permute_jaxpr(jj, in_order, out_order)

    consts, carry, xs = split_list(primals, [num_consts, num_carry])
    t_const_vals, t_init, t_x_vals = split_list(tangents, [num_consts, num_carry])
    live_ct = [t for t in t_const_vals if type(t) is not Zero]
    live_kt = [instantiate(t) for t, nz in zip(t_init, carry_nz) if nz]
    live_xt = [t for t in t_x_vals if type(t) is not Zero]
    outs = scan_p.bind(
        *jconsts,
        *consts,
        *live_ct,
        *carry,
        *live_kt,
        *xs,
        *live_xt,
        jaxpr=body,
        length=length,
        reverse=reverse,
        num_consts=n_j + num_consts + len(live_ct),
        num_carry=num_carry + len(live_kt),
        unroll=unroll,
    )
    carry_out, kt_out, ys_out, yt_out = split_list(outs, [num_carry, n_kt_out, n_y])
    carry_avals, y_avals = jaxpr.out_avals[:num_carry], jaxpr.out_avals[num_carry:]
    carry_zero = [Zero(tangent_aval(a)) for a, nz in zip(carry_avals, carry_nz) if not nz]
    ys_zero = [
        Zero(tangent_aval(ShapedArray((length, *a.shape), a.dtype)))
        for a, nz in zip(y_avals, ys_nz)
        if not nz
    ]
    tangents_out = [*merge(carry_nz, carry_zero, kt_out), *merge(ys_nz, ys_zero, yt_out)]
    return [*carry_out, *ys_out], tangents_out


def _ranges(sizes: Sequence[int]) -> list[list[int]]:
    out, start = [], 0
    for size in sizes:
        out.append(list(range(start, start + size)))
        start += size
    return out


# --------------------------------------------------------------------------------------------
# Partial evaluation (the forward half of reverse mode)


def _scan_partial_eval(trace: PartialEvalTrace, args: Sequence[Any], params: dict) -> Any:
    """Split the loop into a known loop run now and an unknown loop staged for later.

    Without a checkpoint policy the known loop stacks every residual the unknown loop needs.
    Under one (``trace.policy``), the body's residuals are chosen by it, equation by equation,
    as in JAX: the known loop stacks only the saved values, and a replay loop runs the known
    body again from them (its carry included) for the other residuals and for the loop's
    results that the policy does not save. The enclosing checkpoint recomputes what the
    replay loop gives (it never saves the residuals), so the backward pass runs it once,
    from the saved values; when nothing is saved, the known loop is dead.
    """
    jaxpr, length = params["jaxpr"], params["length"]
    num_consts, num_carry = params["num_consts"], params["num_carry"]
    policy = trace.policy
    unknowns = [trace.owns(x) for x in args]
    const_uk, init_uk, xs_uk = split_list(unknowns, [num_consts, num_carry])
    carry_uk = fixpoint(
        lambda cu: partial_eval_jaxpr(jaxpr, [*const_uk, *cu, *xs_uk], policy=policy).out_unknowns[
            :num_carry
        ],
        init_uk,
    )
    n_y = len(jaxpr.out_avals) - num_carry
    split = partial_eval_jaxpr(
        jaxpr, [*const_uk, *carry_uk, *xs_uk], [*carry_uk, *([False] * n_y)], policy
    )
    ys_uk = split.out_unknowns[num_carry:]
    consts, carry, xs = split_list(args, [num_consts, num_carry])
    known_consts = [x for x, u in zip(consts, const_uk) if not u]
    known_carry = [x for x, u in zip(carry, carry_uk) if not u]
    known_xs = [x for x, u in zip(xs, xs_uk) if not u]

    kconsts, known = hoist_consts(split.known)
    n_known_out = len(known.out_avals) - split.num_residuals
    n_const_inputs = len(kconsts) + len(known_consts)
    const_values = [*kconsts, *known_consts]
    # A residual that is one of the known part's const inputs is loop-invariant: pass it
    # through unstacked instead of saving a copy per iteration. One that is one of its xs
    # inputs is that xs, sliced the same way: pass the xs on instead of stacking a copy.
    invariant, stacked, per_iteration = [], [], []
    n_inputs_before_xs = n_const_inputs + len(known_carry)
    const_at = {id(v): i for i, v in enumerate(known.jaxpr.invars[:n_const_inputs])}
    xs_at = {id(v): j for j, v in enumerate(known.jaxpr.invars[n_inputs_before_xs:])}
    residuals = known.jaxpr.outvars[n_known_out:]
    for k, var in enumerate(residuals):
        key = id(var) if type(var) is Var else None
        if key in const_at:
            invariant.append((k, const_at[key]))
        elif key in xs_at:
            stacked.append((k, ("xs", xs_at[key])))
        else:
            per_iteration.append(k)
    # The per-iteration residuals the known loop stacks ("out") and those recomputed ("again").
    if policy is None:
        computed, again = [residuals[k] for k in per_iteration], []
    else:
        computed, again = _choose_per_iteration(
            known.jaxpr,
            [residuals[k] for k in per_iteration],
            split.decided,
            policy,
            n_const_inputs,
            len(known_carry),
        )
    computed_at = {id(v): i for i, v in enumerate(computed)}
    again_at = {id(v): i for i, v in enumerate(again)}
    for k in per_iteration:
        var = residuals[k]
        if type(var) is Var and id(var) in computed_at:
            stacked.append((k, ("out", computed_at[id(var)])))
        else:
            stacked.append((k, ("again", again_at[id(var)])))
    stacked.sort()

    known_jaxpr = known.jaxpr
    n_kc = len(known_carry)
    # Under a policy, the loop's results it does not save are replayed from the saved values
    # (the carries are results of the known loop all the same).
    kept = [True] * n_known_out
    if policy is not None:
        kept = saved_outputs(known_jaxpr, n_known_out, policy, split.decided)
    ys_vars = known_jaxpr.outvars[n_kc:n_known_out]
    kept_ys = [v for v, k in zip(ys_vars, kept[n_kc:]) if k]
    known_body = ClosedJaxpr(
        dce_jaxpr(
            Jaxpr(
                [],
                known_jaxpr.invars,
                [*known_jaxpr.outvars[:n_kc], *kept_ys, *computed],
                known_jaxpr.eqns,
                known_jaxpr.debug_info,
            )
        ),
        [],
    )
    with set_current_trace(trace.parent):
        known_outs = scan_p.bind(
            *const_values,
            *known_carry,
            *known_xs,
            jaxpr=known_body,
            length=length,
            reverse=params["reverse"],
            num_consts=n_const_inputs,
            num_carry=n_kc,
            unroll=params["unroll"],
        )
    known_carry_out = known_outs[:n_kc]
    known_ys = known_outs[n_kc : n_kc + len(kept_ys)]
    computed_res = known_outs[n_kc + len(kept_ys) :]
    known_inputs = (const_values, known_carry, known_xs)
    saved = (computed, computed_res)
    again_res = []
    if policy is not None:
        # Chosen by the policy here: the enclosing checkpoint saves these as they are.
        kept_carry = [c for c, k in zip(known_carry_out, kept) if k]
        trace.mark_saved([*kept_carry, *known_ys, *computed_res])
    if policy is not None and (again or not all(kept)):
        # One loop replays, from the saved values, the results not saved and the residuals
        # not saved. Those residuals are computed now only for the backward pass, which
        # recomputes them by this loop (compiled, the forward pass drops them).
        replayed_ys = [v for v, k in zip(ys_vars, kept[n_kc:]) if not k]
        wanted = [*replayed_ys, *again]
        replayed = _replay_loop(trace, params, known_jaxpr, known_inputs, saved, wanted)
        known_carry_out = [c if k else r for c, r, k in zip(known_carry_out, replayed, kept)]
        n_replayed = n_kc + len(replayed_ys)
        known_ys = merge([not k for k in kept[n_kc:]], known_ys, replayed[n_kc:n_replayed])
        again_res = replayed[n_replayed:]
        trace.mark_recomputed(again_res)
    sources = {"xs": known_xs, "out": computed_res, "again": again_res}
    stacked_res = [sources[kind][i] for _, (kind, i) in stacked]
    invariant_res = [const_values[i] for _, i in invariant]

    # The unknown body takes (residuals, unknown consts, unknown carry, unknown xs); reorder
    # its inputs to (invariant residuals, unknown consts | carry | stacked residuals, xs).
    n_res = split.num_residuals
    n_uc = sum(const_uk)
    n_ucarry = sum(carry_uk)
    res_idx = list(range(n_res))
    uc_idx = list(range(n_res, n_res + n_uc))
    ucarry_idx = list(range(n_res + n_uc, n_res + n_uc + n_ucarry))
    ux_idx = list(range(n_res + n_uc + n_ucarry, len(split.unknown.in_avals)))
    in_order = [
        *[res_idx[k] for k, _ in invariant],
        *uc_idx,
        *ucarry_idx,
        *[res_idx[k] for k, _ in stacked],
        *ux_idx,
    ]
    unknown_body = permute_jaxpr(split.unknown, in_order, list(range(len(split.unknown.out_avals))))
    unknown_consts = [x for x, u in zip(consts, const_uk) if u]
    unknown_carry = [x for x, u in zip(carry, carry_uk) if u]
    unknown_xs = [x for x, u in zip(xs, xs_uk) if u]
    unknown_outs = trace.stage(
        scan_p,
        [*invariant_res, *unknown_consts, *unknown_carry, *stacked_res, *unknown_xs],
        {
            **params,
            "jaxpr": unknown_body,
            "num_consts": len(invariant_res) + len(unknown_consts),
            "num_carry": len(unknown_carry),
        },
    )
    carry_out = merge(carry_uk, known_carry_out, unknown_outs[:n_ucarry])
    ys_out = merge(ys_uk, known_ys, unknown_outs[n_ucarry:])
    return [*carry_out, *ys_out]


def _choose_per_iteration(
    known: Jaxpr,
    candidates: list[Any],
    decided: dict[int, bool],
    policy: Callable[..., Any],
    num_consts: int,
    num_carry: int,
) -> tuple[list[Var], list[Any]]:
    """Split a known body's per-iteration residuals by the checkpoint ``policy``: the values
    the known loop stacks (residuals, or values they are recomputed from), and the
    residuals recomputed by running the body again.

    A carry input is saved when the policy saves the carry output that becomes it (a
    value stacked by the known loop either way); otherwise the loop run again carries it.
    """
    carry_in = known.invars[num_consts : num_consts + num_carry]
    carry_out_of = {id(v): known.outvars[j] for j, v in enumerate(carry_in)}
    saved, _ = choose_saved(candidates, known.eqns, policy, decided)
    saved_ids = {id(v) for v in saved}
    for var in candidates:
        out = carry_out_of.get(id(var)) if type(var) is Var else None
        if type(out) is Var and id(var) not in saved_ids:
            if any(v is out for v in choose_saved([out], known.eqns, policy, decided)[0]):
                saved.append(var)
                saved_ids.add(id(var))
    again = [v for v in candidates if not (type(v) is Var and id(v) in saved_ids)]
    return saved, again


def _replay_loop(
    trace: PartialEvalTrace,
    params: dict,
    known: Jaxpr,
    known_inputs: tuple[list[Any], list[Any], list[Any]],
    saved: tuple[list[Var], list[Any]],
    wanted: list[Any],
) -> list[Any]:
    """A loop that runs the known body again from its inputs (``known_inputs``: consts,
    carry, xs) and the saved values it reads (``saved``: the body's variables and their
    stacked values, passed as extra xs), returning the final carry and the body values
    ``wanted``, stacked. Its carry is the known carry: a body's carry input is never saved,
    as in JAX."""
    consts, carry, xs = known_inputs
    saved_vars, saved_values = saved
    carry_out = known.outvars[: len(carry)]
    eqns, saved_inputs = replay_eqns(known.eqns, [*carry_out, *wanted], saved_vars)
    saved_at = {id(v): i for i, v in enumerate(saved_vars)}
    body = Jaxpr([], [*known.invars, *saved_inputs], [*carry_out, *wanted], eqns, "scan_replay")
    operands = [*consts, *carry, *xs, *[saved_values[saved_at[id(v)]] for v in saved_inputs]]
    new_params = {
        **params,
        "jaxpr": ClosedJaxpr(body, []),
        "num_consts": len(consts),
        "num_carry": len(carry),
    }
    with set_current_trace(trace.parent):
        return scan_p.bind(*operands, **new_params)


# --------------------------------------------------------------------------------------------
# Transposition


def _scan_transpose(cts, *args, jaxpr, length, reverse, num_consts, num_carry, unroll):
    consts, carry, xs = split_list(args, [num_consts, num_carry])
    const_lin = [is_undefined(x) for x in consts]
    xs_lin = [is_undefined(x) for x in xs]
    # The carry is linear even where its initial value is known (a materialised zero
    # tangent): its cotangent is computed all the same, and dropped for such inputs.
    res_consts = [x for x in consts if not is_undefined(x)]
    res_xs = [x for x in xs if not is_undefined(x)]
    lin_const_avals = [x.aval for x in consts if is_undefined(x)]
    tconsts, tj = transpose_jaxpr(jaxpr, [*const_lin, *([True] * num_carry), *xs_lin])
    n_t, n_rc, n_acc = len(tconsts), len(res_consts), len(lin_const_avals)

    def body(*args):
        t_c, r_c, acc, ct_carry, r_x, ct_y = split_list(
            args, [n_t, n_rc, n_acc, num_carry, len(res_xs)]
        )
        outs = eval_jaxpr(tj.jaxpr, [], *t_c, *r_c, *r_x, *ct_carry, *ct_y)
        ct_lin_consts, ct_carry_in, ct_lin_xs = split_list(outs, [n_acc, num_carry])
        summed = [add_tangents(a, b) for a, b in zip(acc, ct_lin_consts)]
        return [*summed, *ct_carry_in, *ct_lin_xs]

    carry_avals = jaxpr.out_avals[:num_carry]
    y_avals = jaxpr.out_avals[num_carry:]
    body_avals = [
        *[get_aval(c) for c in tconsts],
        *[get_aval(c) for c in res_consts],
        *[tangent_aval(a) for a in lin_const_avals],
        *[tangent_aval(a) for a in carry_avals],
        *[_slice_aval(get_aval(x).strip_weak_type()) for x in res_xs],
        *[tangent_aval(a) for a in y_avals],
    ]
    bconsts, transposed = trace_const_free(body, body_avals, "scan_transpose")
    ct_carry, ct_ys = split_list(materialize_cts(cts), [num_carry])
    outs = scan_p.bind(
        *bconsts,
        *tconsts,
        *res_consts,
        *[zeros(tangent_aval(a)) for a in lin_const_avals],
        *ct_carry,
        *res_xs,
        *ct_ys,
        jaxpr=transposed,
        length=length,
        reverse=not reverse,
        num_consts=len(bconsts) + n_t + n_rc,
        num_carry=n_acc + num_carry,
        unroll=unroll,
    )
    ct_consts, ct_init, ct_xs = split_list(outs, [n_acc, num_carry])
    # Stacked cotangents have a whole leading dimension; a scanned array split along it
    # gets its cotangent typed as itself.
    lin_xs = [x for x in xs if is_undefined(x)]
    ct_xs = [typed_like(ct, x.aval) for x, ct in zip(lin_xs, ct_xs)]
    return [
        *merge(const_lin, [None] * n_rc, ct_consts),
        *[ct if is_undefined(x) else None for x, ct in zip(carry, ct_init)],
        *merge(xs_lin, [None] * len(res_xs), ct_xs),
    ]


# --------------------------------------------------------------------------------------------
# Batching


def _scan_batch(vals, dims, *, jaxpr, length, reverse, num_consts, num_carry, unroll):
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    batched = [d is not not_mapped for d in dims]
    const_b, init_b, xs_b = split_list(batched, [num_consts, num_carry])
    carry_b = fixpoint(
        lambda cb: batch_jaxpr(jaxpr, [*const_b, *cb, *xs_b], size)[2][:num_carry], init_b
    )
    n_y = len(jaxpr.out_avals) - num_carry
    bconsts, body, out_b = batch_jaxpr(
        jaxpr, [*const_b, *carry_b, *xs_b], size, [*carry_b, *([False] * n_y)]
    )
    consts, carry, xs = split_list(list(zip(vals, dims)), [num_consts, num_carry])
    consts = [v if d is not_mapped else move_axis(v, d, 0) for v, d in consts]
    carry = [bdim_to_front(v, d, size) if b else v for (v, d), b in zip(carry, carry_b)]
    xs = [v if d is not_mapped else move_axis(v, d, 1) for v, d in xs]
    outs = scan_p.bind(
        *bconsts,
        *consts,
        *carry,
        *xs,
        jaxpr=body,
        length=length,
        reverse=reverse,
        num_consts=len(bconsts) + num_consts,
        num_carry=num_carry,
        unroll=unroll,
    )
    out_dims = [0 if b else not_mapped for b in carry_b]
    out_dims += [1 if b else not_mapped for b in out_b[num_carry:]]
    return outs, out_dims


def _scan_sharding(*avals, jaxpr, length, reverse, num_consts, num_carry, unroll):
    _, carry, _ = _split_operands(avals, num_consts, num_carry)
    out = jaxpr.out_avals
    typed = sharding_rules.carried("scan", carry, out[:num_carry])
    # A stacked output's leading (iteration) dimension is whole.
    for y in out[num_carry:]:
        stacked = y.typed_sharding
        if stacked is not None:
            stacked = typed_sharding(stacked.mesh, (None, *sharding_rules.entries(y)))
        typed.append(stacked)
    return typed


# --------------------------------------------------------------------------------------------
# Discharge: a Ref the body closes over becomes a carried value


def _scan_discharge(in_avals, out_avals, *args, jaxpr, num_consts, num_carry, **params):
    marks = discharged_operands(in_avals, args)  # only consts can be Refs
    consts, carry, xs = _split_operands(args, num_consts, num_carry)
    loop = carry_refs(jaxpr, marks[:num_consts])
    loop_consts, carried = loop.consts_then_carried(consts)
    outs = scan_p.bind(
        *loop_consts,
        *carried,
        *carry,
        *xs,
        jaxpr=loop.body,
        num_consts=len(loop_consts),
        num_carry=len(carried) + num_carry,
        **params,
    )
    finals = new_ref_values([i in loop.carried for i in range(num_consts)], outs[: len(carried)])
    return [*finals, *[None] * (len(args) - num_consts)], outs[len(carried) :]


scan_p = rules.define_primitive(
    "scan",
    own_vma=True,  # typed by its jaxpr
    discharge=_scan_discharge,
    sharding=_scan_sharding,
    abstract_eval=_scan_abstract_eval,
    jvp=_scan_jvp,
    transpose=_scan_transpose,
    batch=_scan_batch,
    lowering=_scan_lowering,
    reference=_scan_reference,
    partial_eval=_scan_partial_eval,
    multiple_results=True,
)


# --------------------------------------------------------------------------------------------
# The user-facing function


def scan(
    f: Callable[[Any, Any], tuple[Any, Any]],
    init: Any,
    xs: Any = None,
    length: int | None = None,
    reverse: bool = False,
    unroll: int | bool = 1,
    _split_transpose: bool = False,
) -> tuple[Any, Any]:
    """Loop ``carry, y = f(carry, x)`` over the leading axis of ``xs``; return (carry, ys).

    Like ``jax.lax.scan``: ``xs`` and the ``ys`` are pytrees of arrays stacked along axis 0;
    ``length`` is needed only when ``xs`` is None; ``reverse`` scans from the end.
    """
    if not callable(f):
        raise errors.EmberTypeError(f"scan: f must be callable{errors.where()}")
    if _split_transpose:
        raise NotImplementedError(
            f"scan: _split_transpose=True (an experimental JAX option) is not supported"
            f"{errors.where()}"
        )
    x_leaves, x_tree, x_avals = flatten_operands(xs, "scan xs")
    length = _scan_length(x_avals, length)
    if python_loops.disable_jit():
        return python_loops.scan(f, init, xs, length, reverse)
    carry_leaves, carry_tree, carry_avals = flatten_operands(init, "scan init")
    slice_avals = [_slice_aval(a) for a in x_avals]
    unroll = int(unroll) if not isinstance(unroll, bool) else (length if unroll else 1)

    def body(carry: Any, x: Any) -> Any:
        out = f(carry, x)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise ControlFlowTypeError(
                f"scan: f must return a pair (carry, y), got {type(out).__name__}{errors.where()}"
            )
        return out

    in_tree = tree_flatten((init, xs))[1]
    n_carry = len(carry_avals)
    for _ in range(2):  # a second trace only when weak types of the carry had to be settled
        consts, jaxpr, out_tree = trace_function(
            body, in_tree, [*carry_avals, *slice_avals], "scan_body"
        )
        out_carry_tree, y_tree = _out_trees(out_tree)
        if out_carry_tree != carry_tree:
            raise ControlFlowTypeError(
                f"scan: f must return a carry with the structure of init ({carry_tree}), got "
                f"{out_carry_tree}{errors.where()}"
            )
        settled = settle_weak_types(carry_avals, jaxpr.out_avals[:n_carry], "scan")
        if settled == list(carry_avals):
            break
        carry_avals = settled
        carry_leaves = [
            convert_element_type(x, a.dtype, a.weak_type) for x, a in zip(carry_leaves, settled)
        ]
    outs = scan_p.bind(
        *consts,
        *carry_leaves,
        *x_leaves,
        jaxpr=jaxpr,
        length=length,
        reverse=bool(reverse),
        num_consts=len(consts),
        num_carry=n_carry,
        unroll=max(1, unroll),
    )
    return tree_unflatten(carry_tree, outs[:n_carry]), tree_unflatten(y_tree, outs[n_carry:])


def _slice_aval(aval: ShapedArray) -> ShapedArray:
    """The body's view of one element of a scanned array: typed as the array's other
    dimensions are (the scanned one's split goes)."""
    typed = drop_dim(aval.typed_sharding, 0)
    return ShapedArray(aval.shape[1:], aval.dtype, aval.weak_type, typed, aval.vma)


def _out_trees(out_tree):
    if out_tree.node is not tuple or len(out_tree.subtrees) != 2:
        raise ControlFlowTypeError(f"scan: f must return a pair (carry, y){errors.where()}")
    return out_tree.subtrees[0], out_tree.subtrees[1]


def _scan_length(x_avals: Sequence[ShapedArray], length: int | None) -> int:
    lengths = set()
    for a in x_avals:
        if not a.shape:
            raise ControlFlowTypeError(
                f"scan: every leaf of xs needs a leading axis to scan over, got a scalar"
                f"{errors.where()}"
            )
        lengths.add(a.shape[0])
    if length is not None:
        length = int(length)
        if lengths and lengths != {length}:
            raise ControlFlowTypeError(
                f"scan: length={length} disagrees with the leading axes of xs {sorted(lengths)}"
                f"{errors.where()}"
            )
        return length
    if not lengths:
        raise ControlFlowTypeError(f"scan: with xs=None, pass length{errors.where()}")
    if len(lengths) > 1:
        raise ControlFlowTypeError(
            f"scan: the leaves of xs have different leading axes {sorted(lengths)}{errors.where()}"
        )
    return lengths.pop()


def settle_weak_types(
    carry_in: Sequence[ShapedArray], carry_out: Sequence[ShapedArray], what: str
) -> list[ShapedArray]:
    """Check the body keeps the carry's types; a weakly typed init takes the body's type when
    promoting it with that type gives that type (a Python float may become bfloat16 or
    complex64, never an integer: a body turning a float carry into an int is an error, as in
    JAX)."""
    check_carry_vma(carry_in, carry_out, what)
    settled = []
    for i, (a, b) in enumerate(zip(carry_in, carry_out)):
        if a.weak_type and a.shape == b.shape and a.dtype != b.dtype:
            promoted, _ = dtypes.promote([(a.dtype, True), (b.dtype, b.weak_type)])
            if promoted == b.dtype:
                settled.append(b)
                continue
        if a.shape != b.shape or a.dtype != b.dtype:
            raise ControlFlowTypeError(
                f"{what}: the carry must keep its type, but leaf #{i} enters as {a.str_short()} "
                f"and leaves as {b.str_short()} (carry in {describe_avals(carry_in)}, out "
                f"{describe_avals(carry_out)}){errors.where()}"
            )
        settled.append(a if a.weak_type == b.weak_type or not a.weak_type else b)
    return settled
