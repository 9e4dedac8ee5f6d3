"""A pytree of arrays as one flat vector and back, so the integrator works on a 1-d state.

The leaves are promoted to one inexact dtype (the integrator's arithmetic needs it) and laid
end to end; ``unravel`` undoes that on the last axis, so it also unravels a stack of states
(the solution at every time) in one go, casting each leaf back to its own dtype.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ember._src import dtypes
from ember._src.core import get_aval
from ember._src.numpy import creation, manipulation
from ember._src.numpy.dtype_functions import result_type
from ember._src.tree.util import tree_flatten, tree_unflatten


def ravel(tree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """``(flat, unravel)``: ``flat`` a 1-d array of all of ``tree``'s leaves; ``unravel(x)``
    gives a tree like ``tree`` from ``x`` of shape ``(..., flat.size)``, each leaf of shape
    ``(...) + leaf.shape``."""
    leaves, treedef = tree_flatten(tree)
    leaves = [creation.asarray(x) for x in leaves]
    avals = [get_aval(x) for x in leaves]
    dtype = result_type(*leaves) if leaves else dtypes.default_float()
    if not dtypes.is_inexact(dtype):
        dtype = dtypes.default_float()
    sizes = [math.prod(a.shape) for a in avals]
    if leaves:
        flat = manipulation.concatenate([manipulation.ravel(x).astype(dtype) for x in leaves])
    else:
        flat = creation.zeros((0,), dtype)

    def unravel(x: Any) -> Any:
        batch = get_aval(x).shape[:-1]
        parts, start = [], 0
        for aval, size in zip(avals, sizes):
            part = x[..., start : start + size]
            parts.append(manipulation.reshape(part, batch + aval.shape).astype(aval.dtype))
            start += size
        return tree_unflatten(treedef, parts)

    return flat, unravel
