"""``checkify``: a function's runtime errors as a value it returns.

``checkify(f)`` traces ``f`` to a jaxpr (its ``check``s are staged there, functionalized)
and evaluates that jaxpr with the checkify interpreter on the actual arguments, on the
current trace: called eagerly it runs checked, under ``jit`` it stages the checked program,
under ``vmap`` it gives a batched ``Error``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

# The rules register themselves with the interpreter when imported.
from ember._src.checkify import (
    control_flow as _control_flow,  # noqa: F401
    custom_derivatives as _custom_derivatives,  # noqa: F401
    rules as _rules,  # noqa: F401
    shard_map as _shard_map,  # noqa: F401
)
from ember._src.checkify.check import functionalizing
from ember._src.checkify.error import Error, ErrorCategory, error_set, user_checks
from ember._src.checkify.interpreter import checkify_jaxpr
from ember._src.checkify.state import ErrorState
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.transforms.arguments import leaf_aval
from ember._src.tree.util import flatten_fun, tree_flatten, tree_unflatten


def checkify(
    f: Callable[..., Any], errors: frozenset[ErrorCategory] = user_checks
) -> Callable[..., tuple[Error, Any]]:
    """``f`` returning ``(err, out)``: ``out`` is what ``f`` returns and ``err`` the first of
    the ``errors`` (a set of error kinds: ``user_checks``, ``nan_checks``, ``div_checks``,
    ``index_checks``, unions of them with ``|``) that happened while it ran."""
    enabled = error_set(errors)
    if not callable(f):
        raise TypeError(f"checkify: f must be callable, got {type(f).__name__}")
    name = getattr(f, "__name__", type(f).__name__)

    @functools.wraps(f)
    def checked(*args: Any, **kwargs: Any) -> tuple[Error, Any]:
        leaves, in_tree = tree_flatten((args, kwargs))
        avals = [leaf_aval(x, f"checkify({name}) argument leaf #{i}") for i, x in enumerate(leaves)]
        flat = flatten_fun(lambda a, k: f(*a, **k), in_tree)
        with functionalizing():
            closed = trace_to_jaxpr(flat, avals, name=f"checkify({name})")
        state = ErrorState.empty()
        outs = checkify_jaxpr(closed.jaxpr, closed.consts, state, enabled, leaves)
        return state.to_error(), tree_unflatten(flat.out_tree, outs)

    return checked
