"""Evaluating a jaxpr with NumPy, one primitive's reference rule at a time."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import rules
from ember._src.core import Primitive
from ember._src.ir import ClosedJaxpr, Literal, check_result_sizes


def evaluate_jaxpr(
    closed: ClosedJaxpr,
    args: Sequence[Any],
    *,
    rule_for: Callable[[Primitive], Callable[..., Any] | None] | None = None,
) -> list[np.ndarray]:
    """Run ``closed`` on NumPy arguments; results have exactly the outvars' dtypes.

    ``rule_for(primitive)`` may supply a rule of the caller's own for a primitive of the top
    level (an interpreting backend's kernels); where it returns None, the reference rule runs.
    """
    jaxpr = closed.jaxpr
    env: dict[Any, np.ndarray] = {}

    def read(atom: Any) -> np.ndarray:
        if type(atom) is Literal:
            return np.asarray(atom.val, atom.aval.dtype)
        return env[atom]

    for var, value in zip(jaxpr.constvars, closed.consts):
        env[var] = np.asarray(value, var.aval.dtype)
    for var, value in zip(jaxpr.invars, args):
        env[var] = np.asarray(value)
    for eqn in jaxpr.eqns:
        rule = rule_for(eqn.primitive) if rule_for is not None else None
        if rule is None:
            rule = rules.reference_rule(eqn.primitive)
        check_result_sizes(eqn)
        # Devices compute inf and nan silently; so does the reference.
        with np.errstate(all="ignore"):
            outs = rule(*[read(v) for v in eqn.invars], **eqn.params)
        outs = outs if eqn.primitive.multiple_results else [outs]
        for var, value in zip(eqn.outvars, outs):
            env[var] = np.asarray(value, var.aval.dtype).reshape(var.aval.shape)
    return [read(v) for v in jaxpr.outvars]
