"""Evaluating and checking jaxprs.

``eval_jaxpr`` binds each equation's primitive on the current trace, so evaluating a jaxpr
under a transformation transforms it (this is how jvp, vmap and staging re-trace jaxprs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember._src import errors, rules
from ember._src.core import ShapedArray
from ember._src.ir import ClosedJaxpr, Jaxpr, Literal, Var
from ember._src.source_info import replayed_source_info


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args: Any) -> list[Any]:
    env: dict[Var, Any] = {}

    def read(atom: Var | Literal) -> Any:
        return atom.val if type(atom) is Literal else env[atom]

    for var, value in zip(jaxpr.constvars, consts):
        env[var] = value
    if len(args) != len(jaxpr.invars):
        raise TypeError(f"jaxpr takes {len(jaxpr.invars)} arguments, got {len(args)}")
    for var, value in zip(jaxpr.invars, args):
        env[var] = value
    for eqn in jaxpr.eqns:
        # What this equation makes comes from the user's line that made it.
        token = replayed_source_info.set(eqn.source_info)
        try:
            outs = eqn.primitive.bind(*[read(v) for v in eqn.invars], **eqn.params)
        finally:
            replayed_source_info.reset(token)
        if eqn.primitive.multiple_results:
            for var, value in zip(eqn.outvars, outs):
                env[var] = value
        else:
            env[eqn.outvars[0]] = outs
    return [read(v) for v in jaxpr.outvars]


def eval_closed_jaxpr(closed: ClosedJaxpr, *args: Any) -> list[Any]:
    return eval_jaxpr(closed.jaxpr, closed.consts, *args)


JaxprTypeError = errors.JaxprTypeError  # defined with the other public errors


def typecheck(jaxpr: Jaxpr) -> None:
    """Check that every variable is defined before use and every equation's output types are
    what its primitive's abstract evaluation rule says; raise JaxprTypeError otherwise."""
    defined: set[int] = set()

    def check_atom(atom: Var | Literal, where: str) -> ShapedArray:
        if isinstance(atom, Var) and id(atom) not in defined:
            raise JaxprTypeError(f"{where}: variable {atom!r} used before it is defined")
        return atom.aval

    for var in (*jaxpr.constvars, *jaxpr.invars):
        defined.add(id(var))
    for i, eqn in enumerate(jaxpr.eqns):
        where = f"equation {i} ({eqn.primitive.name})"
        avals_in = [check_atom(v, where) for v in eqn.invars]
        expected = rules.abstract_eval(eqn.primitive, avals_in, eqn.params)
        expected = list(expected) if eqn.primitive.multiple_results else [expected]
        got = [v.aval for v in eqn.outvars]
        if len(expected) != len(got) or any(not e.same_type(g) for e, g in zip(expected, got)):
            shown = ", ".join(a.str_short() for a in expected)
            raise JaxprTypeError(
                f"{where}: outputs are typed {', '.join(a.str_short() for a in got)} "
                f"but the rule gives {shown}"
            )
        for var in eqn.outvars:
            defined.add(id(var))
    for atom in jaxpr.outvars:
        check_atom(atom, "jaxpr outputs")
