"""Partial evaluation: run what is known now, stage what is not.

``PartialEvalTrace`` is a staging trace whose tracers are the *unknown* values. A primitive
applied only to known values runs on the enclosing trace right away; one that touches an
unknown value is recorded, and any known values it reads become the recorded jaxpr's
constants — the *residuals*. Linearisation uses it with the tangents unknown.

Under ``checkpoint`` the trace also carries the checkpoint's *policy*, so that a loop or a
cond inside the checkpointed function can choose its own residuals by it, equation by
equation of its body, instead of being saved or recomputed whole. What such a rule has
already decided is recorded in ``decided``: the enclosing checkpoint saves the values it
chose to save, and recomputes those it chose to recompute, without asking the policy again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember._src import rules
from ember._src.core import Primitive, ShapedArray, current_trace, set_current_trace
from ember._src.interpreters.eval import eval_jaxpr
from ember._src.interpreters.staging import StagingTrace, StagingTracer, trace_to_jaxpr
from ember._src.ir import ClosedJaxpr, Jaxpr, Var, eqn_effects
from ember._src.state_types import has_lasting_effects


class PartialEvalTrace(StagingTrace):
    __slots__ = ("policy", "decided")

    def __init__(self, parent: Any, name: str = "partial_eval", policy: Any = None):
        super().__init__(parent, name)
        # The enclosing checkpoint's policy, ``(primitive, *avals, **params) -> answer``.
        self.policy = policy
        # Known values a rule decided by ``policy``: id -> (value, kept alive; saved?).
        self.decided: dict[int, tuple[Any, bool]] = {}

    def mark_saved(self, values: Sequence[Any]) -> None:
        """Record known values that a rule saved by the policy: they are saved as they are."""
        for value in values:
            self.decided[id(value)] = (value, True)

    def mark_recomputed(self, values: Sequence[Any]) -> None:
        """Record known values that a rule computed only to be recomputed in the backward
        pass (the policy did not save them): they are never saved."""
        for value in values:
            self.decided[id(value)] = (value, False)

    def describe(self) -> str:
        return "reverse-mode differentiation (grad, vjp, linearize)"

    def owns(self, x: Any) -> bool:
        return isinstance(x, StagingTracer) and x._trace is self

    def process_primitive(self, primitive: Primitive, args: Sequence[Any], params: dict) -> Any:
        for x in args:
            if isinstance(x, StagingTracer) and x._trace is self:
                break
        else:
            with set_current_trace(self.parent):
                return primitive.bind(*args, **params)
        rule = rules.partial_eval_rule(primitive)
        if rule is not None:
            return rule(self, args, params)
        return StagingTrace.process_primitive(self, primitive, args, params)

    def stage(self, primitive: Primitive, args: Sequence[Any], params: dict) -> Any:
        """Record ``primitive`` unconditionally (used by custom partial-evaluation rules)."""
        return StagingTrace.process_primitive(self, primitive, args, params)


class PartialEvalResult:
    """A jaxpr split in two: ``known`` runs now and also returns residuals; ``unknown`` takes
    the residuals followed by the unknown inputs. ``decided`` maps (the ids of) variables of
    the known part that a rule inside already decided by the policy to whether it saved them
    (True) or computed them to be recomputed (False); empty without a policy."""

    def __init__(
        self,
        known: ClosedJaxpr,
        unknown: ClosedJaxpr,
        out_unknowns: list[bool],
        num_residuals: int,
        decided: dict[int, bool],
    ):
        self.known = known
        self.unknown = unknown
        self.out_unknowns = out_unknowns
        self.num_residuals = num_residuals
        self.decided = decided


def partial_eval_jaxpr(
    closed: ClosedJaxpr,
    unknowns: Sequence[bool],
    instantiate: Sequence[bool] | bool = False,
    policy: Any = None,
) -> PartialEvalResult:
    """Split ``closed`` into what its known inputs determine and what needs the unknown ones.

    Outputs marked in ``instantiate`` are made unknown even when they are known (the unknown
    jaxpr then returns them from residuals), so that several jaxprs can be split alike.
    ``policy`` is a checkpoint's, handed to the rules of the loops and conds inside.
    """
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * len(closed.out_avals)
    known_avals = [a for a, u in zip(closed.in_avals, unknowns) if not u]
    unknown_avals = [a for a, u in zip(closed.in_avals, unknowns) if u]
    split: dict[str, Any] = {}

    def known_part(*known_args: Any) -> list[Any]:
        pe = PartialEvalTrace(current_trace(), "partial_eval", policy)
        unknown_args = [pe.new_arg(aval) for aval in unknown_avals]
        args = merge(unknowns, known_args, unknown_args)
        with set_current_trace(pe):
            outs = eval_jaxpr(closed.jaxpr, closed.consts, *args)
        out_unknowns = [pe.owns(x) or force for x, force in zip(outs, instantiate)]
        unknown_jaxpr = pe.to_jaxpr([x for x, u in zip(outs, out_unknowns) if u])
        split["out_unknowns"] = out_unknowns
        split["unknown"] = _residuals_as_inputs(unknown_jaxpr)
        residuals = unknown_jaxpr.consts
        split["num_residuals"] = len(residuals)
        # The known values are tracers of the known part's trace: their variables.
        split["decided"] = {
            id(value.var): saved
            for value, saved in pe.decided.values()
            if isinstance(value, StagingTracer)
        }
        return [x for x, u in zip(outs, out_unknowns) if not u] + list(residuals)

    known = trace_to_jaxpr(known_part, known_avals, name="partial_eval_known")
    return PartialEvalResult(
        known, split["unknown"], split["out_unknowns"], split["num_residuals"], split["decided"]
    )


def _residuals_as_inputs(closed: ClosedJaxpr) -> ClosedJaxpr:
    jaxpr = closed.jaxpr
    return ClosedJaxpr(
        Jaxpr([], [*jaxpr.constvars, *jaxpr.invars], jaxpr.outvars, jaxpr.eqns, jaxpr.debug_info),
        [],
    )


def merge(mask: Sequence[bool], if_false: Sequence[Any], if_true: Sequence[Any]) -> list[Any]:
    """Interleave two lists: take from ``if_true`` where ``mask`` is set, else ``if_false``."""
    false_iter, true_iter = iter(if_false), iter(if_true)
    return [next(true_iter) if m else next(false_iter) for m in mask]


def unknown_avals(closed: ClosedJaxpr, unknowns: Sequence[bool]) -> list[ShapedArray]:
    return [a for a, u in zip(closed.in_avals, unknowns) if u]


def dce_jaxpr(jaxpr: Jaxpr, used_outputs: Sequence[bool] | None = None) -> Jaxpr:
    """Drop equations whose outputs nobody uses, except those with side effects (but for
    reading a Ref, which changes nothing) and those with no outputs at all (a
    ``checkify.check`` exists for what it checks)."""
    outvars = (
        jaxpr.outvars
        if used_outputs is None
        else [v for v, used in zip(jaxpr.outvars, used_outputs) if used]
    )
    live: set[int] = {id(v) for v in outvars if isinstance(v, Var)}
    kept = []
    for eqn in reversed(jaxpr.eqns):
        if (
            not eqn.outvars
            or any(id(v) in live for v in eqn.outvars)
            or has_lasting_effects(eqn_effects(eqn))
        ):
            kept.append(eqn)
            live.update(id(v) for v in eqn.invars if isinstance(v, Var))
    kept.reverse()
    if len(kept) == len(jaxpr.eqns) and used_outputs is None:
        return jaxpr
    return Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, kept, jaxpr.debug_info)
