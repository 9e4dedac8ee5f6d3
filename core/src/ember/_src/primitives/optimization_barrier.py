"""``optimization_barrier``: an identity that XLA may not move computations across.

Its operands are computed before anything that uses its results, and equal computations on
either side are not merged (``checkpoint`` relies on this to keep its recomputation in the
backward pass).
"""

from __future__ import annotations

from typing import Any

from ember._src import rules
from ember._src.core import Zero
from ember._src.tree.util import tree_flatten, tree_unflatten


def _barrier_abstract_eval(*avals):
    return list(avals)


def _barrier_reference(*values):
    return list(values)


def _barrier_lowering(ctx, *values):
    return ctx.op("stablehlo.optimization_barrier", list(values), list(ctx.avals_out))


def _barrier_jvp(primals, tangents):
    outs = optimization_barrier_p.bind(*primals)
    live = [t for t in tangents if type(t) is not Zero]
    behind = iter(optimization_barrier_p.bind(*live) if live else [])
    return outs, [t if type(t) is Zero else next(behind) for t in tangents]


def _barrier_transpose(cts, *values):
    live = [c for c in cts if type(c) is not Zero]
    behind = iter(optimization_barrier_p.bind(*live) if live else [])
    return [c if type(c) is Zero else next(behind) for c in cts]


def _barrier_batch(vals, dims):
    return optimization_barrier_p.bind(*vals), list(dims)


def _barrier_sharding(*avals):
    return [a.typed_sharding for a in avals]


optimization_barrier_p = rules.define_primitive(
    "optimization_barrier",
    sharding=_barrier_sharding,
    abstract_eval=_barrier_abstract_eval,
    jvp=_barrier_jvp,
    transpose=_barrier_transpose,
    batch=_barrier_batch,
    lowering=_barrier_lowering,
    reference=_barrier_reference,
    multiple_results=True,
)


def optimization_barrier(operand: Any, /) -> Any:
    """Return ``operand`` (a pytree) unchanged, computed before anything that uses it and
    not merged with equal computations elsewhere."""
    leaves, tree = tree_flatten(operand)
    if not leaves:
        return operand
    return tree_unflatten(tree, optimization_barrier_p.bind(*leaves))
