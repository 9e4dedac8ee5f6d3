"""Control flow run as plain Python under ``disable_jit``, as JAX runs it.

With jit disabled, JAX does not trace the bodies of ``scan``, ``while_loop`` (and so
``fori_loop``), ``cond`` and ``switch``: it runs them as Python loops and branches, op by op,
so that prints, breakpoints and the NaN checks see every iteration. These are those forms; the
user-facing functions call them when the option is on. ``while_loop``, ``cond`` and ``switch``
need a concrete predicate or index; where a transformation makes it abstract they fall back to
the primitive (these functions then return ``NOT_APPLICABLE``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ember._src import errors
from ember._src.config import config
from ember._src.core import get_aval
from ember._src.primitives.shape import expand_dims, squeeze
from ember._src.primitives.slicing import concatenate, slice_along
from ember._src.tree.util import tree_flatten, tree_unflatten

disable_jit = config.reader("disable_jit")

# Returned when the Python form cannot run (a traced predicate): use the primitive.
NOT_APPLICABLE = object()


def scan(f: Callable, init: Any, xs: Any, length: int, reverse: bool) -> tuple[Any, Any]:
    """``lax.scan`` as a Python loop over the leading axis of ``xs``."""
    if length == 0:
        raise ValueError(
            f"scan: a zero-length scan cannot run under disable_jit: with no iteration the type "
            f"of its outputs is unknown{errors.where()}"
        )
    x_leaves, x_tree = tree_flatten(xs)
    carry = init
    ys = []
    steps = range(length - 1, -1, -1) if reverse else range(length)
    for i in steps:
        x_slices = [squeeze(slice_along(leaf, 0, i, i + 1), [0]) for leaf in x_leaves]
        x = tree_unflatten(x_tree, x_slices)
        out = f(carry, x)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise errors.ControlFlowTypeError(
                f"scan: f must return a pair (carry, y), got {type(out).__name__}{errors.where()}"
            )
        carry, y = out
        ys.append(tree_flatten(y))
    if reverse:
        ys.reverse()
    y_tree = ys[0][1]
    columns = zip(*(leaves for leaves, _ in ys))
    stacked = [concatenate([expand_dims(y, [0]) for y in column], 0) for column in columns]
    return carry, tree_unflatten(y_tree, stacked)


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """``lax.while_loop`` as a Python ``while``; NOT_APPLICABLE when the predicate is traced."""
    val = init_val
    try:
        while _concrete_bool(cond_fun(val)):
            val = body_fun(val)
    except errors.ConcretizationTypeError:
        return NOT_APPLICABLE
    return val


def switch(index: Any, branches: Sequence[Callable], operands: tuple) -> Any:
    """``branches[clamped index](*operands)``; NOT_APPLICABLE when ``index`` is traced."""
    try:
        chosen = min(max(int(index), 0), len(branches) - 1)
    except errors.ConcretizationTypeError:
        return NOT_APPLICABLE
    return branches[chosen](*operands)


def _concrete_bool(pred: Any) -> bool:
    aval = get_aval(pred)
    if aval.shape != ():
        raise errors.ControlFlowTypeError(
            f"while_loop: cond_fun must return a boolean scalar, got {aval.str_short()}"
            f"{errors.where()}"
        )
    return bool(pred)
