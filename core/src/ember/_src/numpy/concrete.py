"""Concrete values for value-dependent shapes, looking through differentiation.

Functions whose result shape depends on values (``trim_zeros``, ``compress`` without
``size=``, ``delete``) need those values concretely. Under ``grad``/``jvp`` a traced value
still carries its concrete primal, and the shape depends only on that, so they work there,
as in JAX; under ``jit`` or ``vmap`` there is no concrete value and a
ConcretizationTypeError names the argument.
"""

from __future__ import annotations

from typing import Any

from ember._src import core
from ember._src.interpreters.ad import JVPTracer


def concrete_or_none(value: Any) -> Any:
    """``value`` itself, or the concrete primal inside differentiation tracers; None when
    it has no concrete content (a value traced by ``jit`` or ``vmap``)."""
    while isinstance(value, JVPTracer):
        value = value.primal
    return None if isinstance(value, core.Tracer) else value


def concrete_or_error(value: Any, context: str) -> Any:
    """Like ``concrete_or_none``, but a ConcretizationTypeError (naming ``context``) when
    there is no concrete value."""
    inner = concrete_or_none(value)
    if inner is None and value is not None:
        return core.concrete_or_error(value, context)
    return inner
