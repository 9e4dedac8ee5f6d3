"""ember's NumPy evaluation, offered to backends that interpret jaxprs (``ember.extend``).

The ``reference`` backend gives every primitive a NumPy rule. A backend that interprets
programs instead of compiling StableHLO reuses those rules rather than rewriting them: all of
them through :func:`evaluate_jaxpr`, or one primitive at a time through
:func:`reference_rule`, with its own kernels for the primitives it accelerates. Both are part
of plugin API version 1 (``ember.extend.PLUGIN_API_VERSION``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ember._src import rules
from ember._src.core import Primitive
from ember._src.interpreters import reference as interpreter
from ember._src.ir import ClosedJaxpr


def reference_rule(primitive: Primitive | str) -> Callable[..., Any]:
    """The NumPy evaluation rule of ``primitive`` (a ``Primitive`` or its name).

    Call it as ``rule(*operands, **eqn.params)`` with NumPy arrays; it returns one array, or a
    list of arrays when ``primitive.multiple_results``. Results may need
    ``np.asarray(out, aval.dtype)`` to get exactly the equation's dtype. Primitives that hold
    sub-programs (``cond``, ``while``, ``scan``, ``pjit``, ...) evaluate them with the
    reference rules. Raises ``ValueError`` for an unknown name and ``NotImplementedError`` for
    a primitive without a NumPy rule.
    """
    if isinstance(primitive, str):
        known = rules.all_primitives()
        if primitive not in known:
            raise ValueError(f"ember has no primitive named {primitive!r}")
        primitive = known[primitive]
    return rules.reference_rule(primitive)


def evaluate_jaxpr(
    closed: ClosedJaxpr,
    args: Sequence[Any],
    *,
    rules: Mapping[str, Callable[..., Any]] | None = None,
) -> list[np.ndarray]:
    """Evaluate ``closed`` (e.g. ``computation.jaxpr``) on NumPy ``args``, one array per input.

    Returns one NumPy array per output, with exactly the output avals' shapes and dtypes.
    ``rules`` maps primitive names to the caller's own rules (same calling convention as
    :func:`reference_rule`), used instead of the reference rule for the program's top-level
    equations.
    """
    rule_for = None
    if rules:
        overrides = dict(rules)

        def rule_for(primitive: Primitive) -> Callable[..., Any] | None:
            return overrides.get(primitive.name)

    return interpreter.evaluate_jaxpr(closed, args, rule_for=rule_for)
