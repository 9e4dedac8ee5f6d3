"""Discharging state: a jaxpr over Refs turned into a functional jaxpr over values.

``discharge_state(closed, should_discharge)`` replaces each discharged Ref input by a value
input holding the Ref's initial contents. The new jaxpr returns the original outputs followed by
the final value of each discharged Ref, in input order. It is what interpret mode runs: a Ref
op cannot be lowered or evaluated, its discharged form can.

The pass evaluates the jaxpr while tracing a new one, keeping the *current value* of each
discharged Ref. An equation that touches a discharged Ref goes to its primitive's discharge
rule (``rules.discharge_rule``, registered beside the primitive):

    rule(in_avals, out_avals, *args, **params) -> (new_values, outs)

``in_avals`` are the equation's operand avals (``AbstractRef`` for Refs). ``args`` hold, for
a discharged Ref, its current value, and for a Ref left alone, the Ref itself (so a rule
tells them apart by ``is_ref(get_aval(arg))``). ``new_values`` has one entry per operand: the
Ref's value after the equation, or None where it is unchanged or not a discharged Ref;
``outs`` are the equation's results as ``bind`` would return them. Every other equation is
bound as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember._src import errors, rules
from ember._src.core import get_aval
from ember._src.interpreters.partial_eval import dce_jaxpr
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.ir import ClosedJaxpr, Eqn, Jaxpr, Literal, Var, eqn_effects
from ember._src.state_types import has_lasting_effects, is_ref


def discharge_state(
    closed: ClosedJaxpr, should_discharge: Sequence[bool] | bool | None = None
) -> ClosedJaxpr:
    """``closed`` with its Ref inputs (those ``should_discharge`` marks; all by default) made
    value inputs, returning its outputs then the final values of those Refs, in input order."""
    in_avals = closed.in_avals
    discharged = which_to_discharge(in_avals, should_discharge)
    new_avals = [a.inner_aval if d else a for a, d in zip(in_avals, discharged)]

    def run(*args: Any) -> list[Any]:
        return run_discharged(closed.jaxpr, closed.consts, args, discharged)

    result = trace_to_jaxpr(run, new_avals, name="discharge_state")
    # What a swap read and nobody used (the old value of most writes) is dropped here.
    return ClosedJaxpr(dce_jaxpr(result.jaxpr), result.consts)


def which_to_discharge(
    in_avals: Sequence[Any], should_discharge: Sequence[bool] | bool | None
) -> list[bool]:
    """Per input: whether it is a Ref to discharge (``should_discharge`` names inputs; a mark
    on an input that is not a Ref is ignored)."""
    if should_discharge is None or should_discharge is True:
        return [is_ref(a) for a in in_avals]
    if should_discharge is False:
        return [False] * len(in_avals)
    marks = list(should_discharge)
    if len(marks) != len(in_avals):
        raise ValueError(
            f"discharge_state: should_discharge has {len(marks)} entries for a jaxpr with "
            f"{len(in_avals)} inputs"
        )
    return [bool(m) and is_ref(a) for m, a in zip(marks, in_avals)]


def discharged_operands(in_avals: Sequence[Any], args: Sequence[Any]) -> list[bool]:
    """For a discharge rule: per operand, whether it is a discharged Ref (its aval is a Ref,
    and what the rule was given is its value rather than the Ref itself)."""
    return [is_ref(aval) and not is_ref(get_aval(x)) for aval, x in zip(in_avals, args)]


def new_ref_values(marks: Sequence[bool], finals: Sequence[Any]) -> list[Any]:
    """A discharge rule's per-operand new values: the ``finals`` (one per operand marked, in
    order) where ``marks`` is set, None elsewhere."""
    found = iter(finals)
    return [next(found) if marked else None for marked in marks]


def unchanged_refs(discharged: ClosedJaxpr, marks: Sequence[bool]) -> list[bool]:
    """For a jaxpr ``discharge_state(closed, marks)`` made: per discharged Ref (in input
    order), whether the jaxpr only reads it (its final value is its input, untouched). A loop
    can keep such a Ref as a constant rather than carry it."""
    jaxpr = discharged.jaxpr
    positions = [i for i, m in enumerate(marks) if m]
    finals = jaxpr.outvars[len(jaxpr.outvars) - len(positions) :]
    return [final is jaxpr.invars[i] for final, i in zip(finals, positions)]


def run_discharged(
    jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any], discharged: Sequence[bool]
) -> list[Any]:
    """Evaluate ``jaxpr`` on the current trace with the Ref inputs marked in ``discharged``
    given as values; returns its outputs, then the final value of each discharged Ref."""
    env: dict[Var, Any] = {}
    refs: set[int] = set()  # ids of the variables that are discharged Refs

    def read(atom: Var | Literal) -> Any:
        return atom.val if type(atom) is Literal else env[atom]

    for var, value in zip(jaxpr.constvars, consts):
        env[var] = value
    if len(args) != len(jaxpr.invars):
        raise TypeError(f"jaxpr takes {len(jaxpr.invars)} arguments, got {len(args)}")
    for var, value, is_discharged in zip(jaxpr.invars, args, discharged):
        env[var] = value
        if is_discharged:
            refs.add(id(var))
    for eqn in jaxpr.eqns:
        values = [read(v) for v in eqn.invars]
        if any(type(v) is Var and id(v) in refs for v in eqn.invars):
            outs = _discharge_eqn(eqn, values, env, refs)
        else:
            outs = eqn.primitive.bind(*values, **eqn.params)
        if eqn.primitive.multiple_results:
            for var, value in zip(eqn.outvars, outs):
                env[var] = value
        else:
            env[eqn.outvars[0]] = outs
    for atom in jaxpr.outvars:
        if type(atom) is Var and id(atom) in refs:
            raise errors.EmberTypeError(
                f"a jaxpr being discharged returns one of its Refs ({atom.aval.str_short()}); "
                f"a Ref can't be returned: return its value (x_ref[...]) instead"
                f"{errors.where()}"
            )
    final = [env[v] for v, d in zip(jaxpr.invars, discharged) if d]
    return [*(read(v) for v in jaxpr.outvars), *final]


def _discharge_eqn(eqn: Eqn, values: list[Any], env: dict[Var, Any], refs: set[int]) -> Any:
    rule = rules.discharge_rule(eqn.primitive)
    if rule is None:
        raise NotImplementedError(
            f"ember has no discharge rule for the primitive '{eqn.primitive.name}', which "
            f"was given a Ref; it can't run in a kernel's interpret mode{errors.where()}"
        )
    given = [id(v) for v in eqn.invars if type(v) is Var and id(v) in refs]
    if len(set(given)) != len(given) and has_lasting_effects(eqn_effects(eqn)):
        # Each operand would come back with its own final value, and one would silently win.
        raise NotImplementedError(
            f"{eqn.primitive.name} is given the same Ref twice and writes Refs; this can't be "
            f"discharged: pass the Ref once{errors.where()}"
        )
    in_avals = [v.aval for v in eqn.invars]
    out_avals = [v.aval for v in eqn.outvars]
    new_values, outs = rule(in_avals, out_avals, *values, **eqn.params)
    for var, new in zip(eqn.invars, new_values):
        if new is None:
            continue
        if type(var) is not Var or id(var) not in refs:
            raise AssertionError(
                f"internal error: {eqn.primitive.name}'s discharge rule updated an operand that "
                f"is not a discharged Ref"
            )
        if get_aval(new).shape != var.aval.shape:
            raise AssertionError(
                f"internal error: {eqn.primitive.name}'s discharge rule gave a Ref of shape "
                f"{var.aval.shape} a value of shape {get_aval(new).shape}"
            )
        env[var] = new
    return outs
