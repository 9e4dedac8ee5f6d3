"""Checkify rule of ``custom_jvp`` and ``custom_vjp`` calls.

The call is bound again as it is, less the checks in its body, so that differentiating the
checkified function still uses the user's rule; the body is checked beside it, on values that
differentiation ignores. As in JAX, the user's rules are not checked: they run under a trace
that drops the checks they stage.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from ember._src.checkify.check import check_p, functionalizing
from ember._src.checkify.check_error import check_error_p
from ember._src.checkify.interpreter import checkify_jaxpr, register_check_rule
from ember._src.core import Primitive, Trace, current_trace, set_current_trace
from ember._src.ir import ClosedJaxpr, Jaxpr
from ember._src.primitives.custom_derivatives import custom_jvp_call_p, custom_vjp_call_p
from ember._src.primitives.stop_gradient import stop_gradient


def _custom_call_rule(state, enabled, eqn, *invals):
    """The call is bound as it is (less its own checks), so differentiating the checkified
    function still uses the user's rule; its body is checked beside it, on values that
    differentiation ignores. As in JAX, the rules themselves are not checked: checks in them
    are dropped."""
    call = eqn.params["call_jaxpr"]
    params = dict(eqn.params, call_jaxpr=without_checks(call))
    for name in ("jvp", "fwd", "bwd"):
        if name in params:
            params[name] = _rule_without_checks(params[name])
    outs = eqn.primitive.bind(*invals, **params)
    constants = [stop_gradient(x) for x in invals]
    checkify_jaxpr(call.jaxpr, call.consts, state, enabled, constants)
    return outs


# Both memoised, so that a rebound call's parameters are the same objects each time (the
# eager and jit caches key on them). A stripped jaxpr does not refer to its key, which may
# then go; a wrapped rule holds its rule, so that table is bounded instead.
_stripped: weakref.WeakKeyDictionary[ClosedJaxpr, ClosedJaxpr | None] = weakref.WeakKeyDictionary()
_wrapped_rules: dict[Any, _RuleWithoutChecks] = {}
WRAPPED_RULES_KEPT = 256
_MISSING: Any = object()


def without_checks(closed: ClosedJaxpr) -> ClosedJaxpr:
    """``closed`` without its ``check`` and ``check_error`` equations (they have no results,
    so nothing else changes), in the jaxprs it calls too."""
    found = _stripped.get(closed, _MISSING)
    if found is _MISSING:
        jaxpr = _strip(closed.jaxpr)
        found = None if jaxpr is closed.jaxpr else ClosedJaxpr(jaxpr, closed.consts)
        _stripped[closed] = found  # None: it has no checks
    return closed if found is None else found


def _strip(jaxpr: Jaxpr) -> Jaxpr:
    eqns = []
    for eqn in jaxpr.eqns:
        if eqn.primitive is check_p or eqn.primitive is check_error_p:
            continue
        params = {key: _strip_param(value) for key, value in eqn.params.items()}
        changed = any(params[key] is not value for key, value in eqn.params.items())
        eqns.append(eqn.replace(params=params) if changed else eqn)
    if len(eqns) == len(jaxpr.eqns) and all(a is b for a, b in zip(eqns, jaxpr.eqns)):
        return jaxpr
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns, jaxpr.debug_info)


def _strip_param(value: Any) -> Any:
    if isinstance(value, ClosedJaxpr):
        return without_checks(value)
    if isinstance(value, tuple) and value and all(isinstance(v, ClosedJaxpr) for v in value):
        return tuple(without_checks(v) for v in value)
    return value


class _DropChecks(Trace):
    """Passes every primitive through to the trace below, less checks: ``check`` and
    ``check_error`` are dropped, and so are those inside the jaxprs that calls carry."""

    __slots__ = ()

    def process_primitive(self, primitive: Primitive, args: Sequence[Any], params: dict) -> Any:
        if primitive is check_p or primitive is check_error_p:
            return []
        params = {key: _strip_param(value) for key, value in params.items()}
        with set_current_trace(self.parent):
            return primitive.bind(*args, **params)


class _RuleWithoutChecks:
    """A custom_jvp/custom_vjp rule (jvp, fwd or bwd) run with its checks dropped. The
    checks it traces are staged as usual (custom_jvp caches what it traces; a later
    checkify must find them there), as inside checkify, and dropped on their way down."""

    def __init__(self, rule: Any):
        self.rule = rule
        self.owner = rule.owner
        self.traced = getattr(rule, "traced", None)

    def __call__(self, *args: Any) -> Any:
        with functionalizing(), set_current_trace(_DropChecks(current_trace())):
            return self.rule(*args)


def _rule_without_checks(rule: Any) -> _RuleWithoutChecks:
    wrapped = _wrapped_rules.get(rule)
    if wrapped is None:
        if len(_wrapped_rules) >= WRAPPED_RULES_KEPT:  # drop the oldest
            del _wrapped_rules[next(iter(_wrapped_rules))]
        wrapped = _wrapped_rules[rule] = _RuleWithoutChecks(rule)
    return wrapped


register_check_rule(custom_jvp_call_p, _custom_call_rule)
register_check_rule(custom_vjp_call_p, _custom_call_rule)
