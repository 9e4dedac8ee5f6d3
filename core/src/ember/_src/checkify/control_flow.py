"""Checkify rules of the control-flow primitives, which carry jaxprs: ``jit``, ``remat``,
``cond``, ``while`` and ``scan`` (``fori_loop`` is one of the two loops).

Each binds its primitive again on checkified jaxprs that take the error state as extra
operands and return it as extra results, so a check inside a loop or a compiled call is
recorded where it runs. The state of a loop's carry, and of a ``cond``'s branches, must keep
one structure: the state is first padded with the slots the bodies would add.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember._src.checkify.interpreter import (
    checkify_jaxpr,
    jaxpr_body,
    pad_for,
    register_check_rule,
    trace_checked,
)
from ember._src.checkify.state import ErrorState
from ember._src.interpreters.eval import eval_jaxpr
from ember._src.primitives.call import jit_call, jit_p
from ember._src.primitives.control_flow.cond import cond_p, join_branch_consts
from ember._src.primitives.control_flow.loops import while_p
from ember._src.primitives.control_flow.scan import scan_p
from ember._src.primitives.jaxpr_transforms import trace_const_free
from ember._src.primitives.remat import remat_p


def _take_state(state: ErrorState, keys: Sequence[Any], outs: Sequence[Any], n: int) -> list:
    """Set ``state`` from the first ``n`` of ``outs``; return the rest."""
    state.set_leaves(keys, outs[:n])
    return list(outs[n:])


# --------------------------------------------------------------------------------------------
# Calls: jit and remat


def _jit_rule(state, enabled, eqn, *invals):
    jaxpr, name = eqn.params["jaxpr"], eqn.params["name"]
    consts, closed, checked = trace_checked(
        jaxpr_body(jaxpr, enabled), state, jaxpr.in_avals, f"checkify({name})"
    )
    outs = jit_call([*consts, *state.leaves(), *invals], closed, f"checkify({name})")
    return _take_state(state, checked.out_keys, outs, checked.n_out_state)


def _remat_rule(state, enabled, eqn, *invals):
    jaxpr = eqn.params["jaxpr"]
    consts, closed, checked = trace_checked(
        jaxpr_body(jaxpr, enabled), state, jaxpr.in_avals, "checkify(remat)"
    )
    params = dict(eqn.params, jaxpr=closed)
    outs = remat_p.bind(*consts, *state.leaves(), *invals, **params)
    return _take_state(state, checked.out_keys, outs, checked.n_out_state)


# --------------------------------------------------------------------------------------------
# cond


def _cond_rule(state, enabled, eqn, index, *ops):
    branches = eqn.params["branches"]
    bodies = [jaxpr_body(b, enabled) for b in branches]
    avals = branches[0].in_avals
    pad_for(state, bodies, avals)
    traced = [trace_checked(body, state, avals, "checkify(cond branch)") for body in bodies]
    consts, jaxprs = join_branch_consts([(c, j) for c, j, _ in traced])
    keys, n_state = state.keys(), len(state.leaves())
    outs = cond_p.bind(index, *consts, *state.leaves(), *ops, branches=tuple(jaxprs))
    return _take_state(state, keys, outs, n_state)


# --------------------------------------------------------------------------------------------
# Loops


def _while_rule(state, enabled, eqn, *invals):
    """The predicate is checked too: once before the loop, then after each trip (for the
    next test), so every evaluation of it that the loop makes is checked."""
    p = eqn.params
    cond_jaxpr, body_jaxpr = p["cond_jaxpr"], p["body_jaxpr"]
    n_cc, n_bc = p["cond_nconsts"], p["body_nconsts"]
    cond_consts, body_consts = invals[:n_cc], invals[n_cc : n_cc + n_bc]
    carry = invals[n_cc + n_bc :]
    checkify_jaxpr(cond_jaxpr.jaxpr, cond_jaxpr.consts, state, enabled, [*cond_consts, *carry])

    def body(st: ErrorState, args: Sequence[Any]) -> list[Any]:
        cc, rest = args[:n_cc], args[n_cc:]
        new = checkify_jaxpr(body_jaxpr.jaxpr, body_jaxpr.consts, st, enabled, rest)
        checkify_jaxpr(cond_jaxpr.jaxpr, cond_jaxpr.consts, st, enabled, [*cc, *new])
        return new

    arg_avals = [*cond_jaxpr.in_avals[:n_cc], *body_jaxpr.in_avals]
    pad_for(state, [body], arg_avals)
    keys, n_state, state_avals = state.keys(), len(state.leaves()), state.avals()
    b_consts, new_body, _ = trace_checked(
        body, state, arg_avals, "checkify(while body)", n_leading=n_cc + n_bc
    )

    def predicate(*args: Any) -> list[Any]:  # (cond consts, state, carry): the user's test
        return eval_jaxpr(
            cond_jaxpr.jaxpr, cond_jaxpr.consts, *args[:n_cc], *args[n_cc + n_state :]
        )

    cond_avals = [*cond_jaxpr.in_avals[:n_cc], *state_avals, *cond_jaxpr.in_avals[n_cc:]]
    c_consts, new_cond = trace_const_free(predicate, cond_avals, "checkify(while cond)")
    outs = while_p.bind(
        *c_consts,
        *cond_consts,
        *b_consts,
        *cond_consts,
        *body_consts,
        *state.leaves(),
        *carry,
        cond_jaxpr=new_cond,
        body_jaxpr=new_body,
        cond_nconsts=len(c_consts) + n_cc,
        body_nconsts=len(b_consts) + n_cc + n_bc,
    )
    return _take_state(state, keys, outs, n_state)


def _scan_rule(state, enabled, eqn, *invals):
    p = eqn.params
    jaxpr, n_consts, n_carry = p["jaxpr"], p["num_consts"], p["num_carry"]
    body = jaxpr_body(jaxpr, enabled)
    pad_for(state, [body], jaxpr.in_avals)
    keys, n_state = state.keys(), len(state.leaves())
    consts, checked, _ = trace_checked(
        body, state, jaxpr.in_avals, "checkify(scan body)", n_leading=n_consts
    )
    outs = scan_p.bind(
        *consts,
        *invals[:n_consts],
        *state.leaves(),
        *invals[n_consts:],
        **dict(p, jaxpr=checked, num_consts=len(consts) + n_consts, num_carry=n_state + n_carry),
    )
    return _take_state(state, keys, outs, n_state)


register_check_rule(jit_p, _jit_rule)
register_check_rule(remat_p, _remat_rule)
register_check_rule(cond_p, _cond_rule)
register_check_rule(while_p, _while_rule)
register_check_rule(scan_p, _scan_rule)
