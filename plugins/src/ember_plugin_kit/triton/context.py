"""The state of one kernel's lowering, the table of primitive rules, and the jaxpr walker.

A rule is registered with ``@rule("name", ...)`` and called as
``rule(kctx, eqn, *inputs) -> list`` of one value per output variable, where each input is a
``Value`` (an array or scalar), a ``RefBlock`` (a Ref of the kernel: see ``refs``), or a
static Python value for a literal. The rule modules (``arithmetic``, ``memory``,
``control_flow``) fill the table when ``lowering`` imports them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember_plugin_kit.triton.emitter import Emitter, Value

Rule = Callable[..., list]
RULES: dict[str, Rule] = {}


def rule(*names: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for name in names:
            RULES[name] = fn
        return fn

    return register


def unsupported(primitive: str, kernel: str, why: str = "") -> NotImplementedError:
    detail = f" ({why})" if why else ""
    return NotImplementedError(
        f"primitive {primitive!r} in Pallas kernel {kernel!r} is not supported by the Triton "
        f"lowering{detail}; use interpret=True"
    )


def is_literal(atom: Any) -> bool:
    """A jaxpr literal carries its value (``val``); a variable does not."""
    return hasattr(atom, "val")


class KernelContext:
    """What the rules of one kernel share: the emitter, the kernel's name and grid."""

    def __init__(self, name: str, grid: Sequence[int]):
        self.name = name
        self.grid = tuple(grid)
        self.emitter = Emitter()

    def fail(self, primitive: str, why: str = "") -> NotImplementedError:
        return unsupported(primitive, self.name, why)

    def constant_value(self, value: Any, aval: Any) -> Value:
        """A literal or a closed-over constant: a scalar, or an array of one repeated value
        (Triton has no way to embed an arbitrary array in a kernel)."""
        array = np.asarray(value, dtype=aval.dtype)
        flat = array.reshape(-1)
        if flat.size and not (flat == flat[0]).all():
            raise self.fail(
                "constant", f"an array constant of shape {array.shape} that is not uniform"
            )
        scalar = flat[0] if flat.size else 0
        return self.emitter.constant(scalar, aval.dtype, tuple(aval.shape))

    def lower_jaxpr(self, jaxpr: Any, consts: Sequence[Any], args: Sequence[Any]) -> list:
        """Lower the equations of ``jaxpr`` (a Jaxpr) with its constvars bound to ``consts``
        and its invars to ``args``; returns the lowered outvars."""
        env: dict[Any, Any] = {}
        for var, value in zip(jaxpr.constvars, consts):
            env[var] = value
        for var, value in zip(jaxpr.invars, args):
            env[var] = value

        def read(atom: Any) -> Any:
            if is_literal(atom):
                return self.constant_value(atom.val, atom.aval)
            return env[atom]

        for eqn in jaxpr.eqns:
            name = eqn.primitive.name
            lower = RULES.get(name)
            if lower is None:
                where = f"at {eqn.source_info}" if eqn.source_info is not None else ""
                raise self.fail(name, where)
            outs = lower(self, eqn, *[read(a) for a in eqn.invars])
            for var, value in zip(eqn.outvars, outs):
                env[var] = value
        return [read(a) for a in jaxpr.outvars]

    def lower_closed(self, closed: Any, args: Sequence[Any]) -> list:
        """Lower a ClosedJaxpr inline: its consts become constants of the kernel."""
        consts = [
            self.constant_value(c, v.aval) for v, c in zip(closed.jaxpr.constvars, closed.consts)
        ]
        return self.lower_jaxpr(closed.jaxpr, consts, args)
