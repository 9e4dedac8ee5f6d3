"""The checkify interpreter: evaluate a jaxpr, threading an error state through it.

Each equation's primitive is bound on the current trace (so interpreting under ``jit`` stages
the checked program, and interpreting eagerly runs it), through its *checkify rule* when it
has one: a rule binds the primitive and records what can go wrong in the state (a NaN in the
result, a zero divisor, an index out of bounds, a user's ``check``), or, for primitives that
carry jaxprs (``jit``, ``cond``, loops), binds them on checkified jaxprs that take and return
the state. Rules are registered beside what they check, in ``checkify/rules.py`` and
``checkify/control_flow.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ember._src.checkify.error import ErrorCategory, ErrorSite
from ember._src.checkify.state import ErrorState
from ember._src.core import Primitive, ShapedArray
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.ir import ClosedJaxpr, Eqn, Jaxpr, Literal, Var
from ember._src.primitives.jaxpr_transforms import trace_const_free

# rule(state, enabled, eqn, *invals) -> the primitive's outputs (as bind returns them)
CheckRule = Callable[..., Any]
_rules: dict[Primitive, CheckRule] = {}


def register_check_rule(primitive: Primitive, rule: CheckRule) -> None:
    _rules[primitive] = rule


def checkify_jaxpr(
    jaxpr: Jaxpr,
    consts: Sequence[Any],
    state: ErrorState,
    enabled: frozenset[ErrorCategory],
    args: Sequence[Any],
) -> list[Any]:
    """Evaluate ``jaxpr`` on ``args``, recording failed checks in ``state``."""
    env: dict[Var, Any] = {}

    def read(atom: Var | Literal) -> Any:
        return atom.val if type(atom) is Literal else env[atom]

    for var, value in zip(jaxpr.constvars, consts):
        env[var] = value
    for var, value in zip(jaxpr.invars, args):
        env[var] = value
    for eqn in jaxpr.eqns:
        invals = [read(v) for v in eqn.invars]
        rule = _rules.get(eqn.primitive)
        if rule is None:
            outs = eqn.primitive.bind(*invals, **eqn.params)
        else:
            outs = rule(state, enabled, eqn, *invals)
        if eqn.primitive.multiple_results:
            for var, value in zip(eqn.outvars, outs):
                env[var] = value
        else:
            env[eqn.outvars[0]] = outs
    return [read(v) for v in jaxpr.outvars]


def where(eqn: Eqn) -> str | None:
    """The user's line an equation came from, for messages."""
    return str(eqn.source_info) if eqn.source_info is not None else None


# --------------------------------------------------------------------------------------------
# Checkified sub-jaxprs (the bodies of calls, conds and loops)


class CheckedBody:
    """``body`` (a function of (state, args) -> outs) run checked, as a flat function of
    ``[*leading args, *state leaves, *other args] -> [*state leaves, *outs]``, where the
    state starts with the slots ``keys`` and the first ``n_leading`` args come before it (a
    loop's constants). After it runs, ``out_keys`` are the slots of the state it returns;
    the sites it records go to ``sites``."""

    def __init__(
        self,
        body: Callable[[ErrorState, Sequence[Any]], Sequence[Any]],
        keys: Sequence[Any],
        sites: dict[int, ErrorSite],
        n_leading: int = 0,
    ):
        self.body = body
        self.keys = list(keys)
        self.n_state = 1 + sum(len(k) for k in self.keys)
        self.sites = sites
        self.n_leading = n_leading
        self.out_keys: list[Any] = []

    def __call__(self, *leaves: Any) -> list[Any]:
        lead, rest = leaves[: self.n_leading], leaves[self.n_leading :]
        state = ErrorState.from_leaves(self.keys, rest[: self.n_state], self.sites)
        outs = self.body(state, [*lead, *rest[self.n_state :]])
        self.out_keys = state.keys()
        return [*state.leaves(), *outs]

    @property
    def n_out_state(self) -> int:
        return 1 + sum(len(k) for k in self.out_keys)


def jaxpr_body(
    jaxpr: ClosedJaxpr, enabled: frozenset[ErrorCategory]
) -> Callable[[ErrorState, Sequence[Any]], list[Any]]:
    """``jaxpr`` as a body for ``CheckedBody``."""
    return lambda state, args: checkify_jaxpr(jaxpr.jaxpr, jaxpr.consts, state, enabled, args)


def pad_for(
    state: ErrorState,
    bodies: Sequence[Callable[[ErrorState, Sequence[Any]], Sequence[Any]]],
    arg_avals: Sequence[ShapedArray],
) -> None:
    """Give ``state`` every slot that running any of ``bodies`` (on arguments of types
    ``arg_avals``) would add to it, so that each returns a state of the structure it was
    given, as loops and conds need. Bodies are traced (and the traces dropped) until none
    adds a slot."""
    while True:
        keys = state.keys()
        found = set(keys)
        for body in bodies:
            probe = CheckedBody(body, keys, {})
            trace_to_jaxpr(probe, [*state.avals(), *arg_avals], name="checkify_probe")
            found.update(probe.out_keys)
        if found == set(keys):
            return
        state.pad(found)


def trace_checked(
    body: Callable[[ErrorState, Sequence[Any]], Sequence[Any]],
    state: ErrorState,
    arg_avals: Sequence[ShapedArray],
    name: str,
    n_leading: int = 0,
) -> tuple[list[Any], ClosedJaxpr, CheckedBody]:
    """Trace ``body`` checked, from ``state``'s structure, to a const-free jaxpr (laid out as
    ``CheckedBody`` says); returns (its consts, the jaxpr, the checked body)."""
    checked = CheckedBody(body, state.keys(), state.sites, n_leading)
    avals = [*arg_avals[:n_leading], *state.avals(), *arg_avals[n_leading:]]
    consts, closed = trace_const_free(checked, avals, name)
    return consts, closed, checked
