"""``check_error``: raise an ``Error`` if it failed, functionalized by ``checkify``.

Outside ``checkify`` it is ``error.throw()``. Inside it, as the ``check_error`` primitive, the
error is merged into the error state of the enclosing ``checkify``, so an error returned by
one checkified function can be handed on through another (as JAX's). Staged without
``checkify`` (under ``jit``), it asks to be functionalized, as ``check`` does.
"""

from __future__ import annotations

from typing import Any

from ember._src import rules
from ember._src.checkify.check import functionalization_error, is_functionalizing, staging
from ember._src.checkify.error import Error
from ember._src.core import Tracer, eval_trace_is_current, get_aval
from ember._src.interpreters.batching import not_mapped
from ember._src.primitives.shape import bdim_to_front
from ember._src.tree.util import PyTreeDef, tree_flatten, tree_unflatten


def _abstract_eval(*leaves, error_tree):
    return []


def _jvp(primals, tangents, *, error_tree):
    _emit(list(primals), error_tree)
    return [], []


def _batch(vals, dims, *, error_tree):
    """A batched error: every leaf with the batch axis first (the merge keeps the first lane
    that failed, ``throw`` reports them all)."""
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    _emit([bdim_to_front(v, d, size) for v, d in zip(vals, dims)], error_tree)
    return [], []


def _not_functionalized(*args, **params):
    raise functionalization_error()


check_error_p = rules.define_primitive(
    "check_error",
    sharding=rules.NOT_SHARDABLE,
    abstract_eval=_abstract_eval,
    jvp=_jvp,
    batch=_batch,
    lowering=_not_functionalized,
    reference=_not_functionalized,
    multiple_results=True,
)


def _emit(leaves: list[Any], error_tree: PyTreeDef) -> None:
    known = not any(isinstance(x, Tracer) for x in leaves)
    if (known and not is_functionalizing()) or eval_trace_is_current():
        tree_unflatten(error_tree, leaves).throw()
    else:
        check_error_p.bind(*leaves, error_tree=error_tree)


def check_error(error: Error) -> None:
    """Raise ``error`` if it represents a failure (``error.throw()``); inside ``checkify``,
    add it to the error the checkified function returns."""
    if not isinstance(error, Error):
        raise TypeError(
            f"check_error takes the Error a checkified function returned, got "
            f"{type(error).__name__}"
        )
    leaves, tree = tree_flatten(error)
    if not is_functionalizing() and staging():
        raise functionalization_error()
    _emit(leaves, tree)
