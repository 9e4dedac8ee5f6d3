"""``check`` and ``debug_check``: a user's assertion on traced values, as the ``check``
primitive.

Outside ``checkify`` a check runs eagerly and raises ``CheckifyError`` at once when its
predicate is False (under ``grad`` and ``vmap`` too: their rules check the primal values, or
every lane). It cannot be staged: ``jit`` (or a loop or ``cond`` body) of a function with a
``check`` raises a ValueError saying to functionalize it with ``checkify`` first. Inside
``checkify`` the interpreter records it instead (``checkify/rules.py``). ``debug_check`` is the
same check, dropped wherever it is not checkified.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.checkify.error import ErrorSite, FailedCheckError
from ember._src.checkify.state import as_payload, slot_key
from ember._src.core import (
    Tracer,
    current_trace,
    eval_trace_is_current,
    get_aval,
    is_arraylike,
)
from ember._src.interpreters.batching import not_mapped
from ember._src.interpreters.partial_eval import PartialEvalTrace
from ember._src.interpreters.staging import StagingTrace
from ember._src.numpy.reductions import argmin
from ember._src.primitives.reduce import reduce_and
from ember._src.primitives.shape import bdim_to_front
from ember._src.source_info import current_source_info
from ember._src.transforms.trace_context import tracing_under
from ember._src.tree.util import tree_flatten, tree_unflatten

# How many checkify traces are running: a check staged inside one is functionalized by it.
_checkify_tracing: contextvars.ContextVar[int] = contextvars.ContextVar(
    "ember_checkify_tracing", default=0
)


@contextlib.contextmanager
def functionalizing() -> Iterator[None]:
    """The block traces a function for ``checkify``: its checks may be staged. What ``jit``
    and custom derivatives trace in it is cached apart from what they trace elsewhere, where
    the same checks must be refused."""
    token = _checkify_tracing.set(_checkify_tracing.get() + 1)
    try:
        with tracing_under("checkify"):
            yield
    finally:
        _checkify_tracing.reset(token)


def is_functionalizing() -> bool:
    return _checkify_tracing.get() > 0


def functionalization_error() -> ValueError:
    return ValueError(
        "Cannot abstractly evaluate a checkify.check which was not functionalized. This "
        "probably means you tried to stage (jit/scan/cond/...) a `check` without "
        "functionalizing it through `checkify.checkify`: use "
        f"checkify.checkify(f) (outside or inside the jit) and err.throw(){errors.where()}"
    )


# --------------------------------------------------------------------------------------------
# The primitive


def _check_abstract_eval(pred, *payload, site, debug):
    return []


def _check_jvp(primals, tangents, *, site, debug):
    emit_check(primals[0], primals[1:], site, debug)  # the primal values are what is checked
    return [], []


def _check_batch(vals, dims, *, site, debug):
    """Check every lane: the check fails if any lane's predicate is False, with the payload of
    the first lane that failed."""
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    pred, *payload = [
        v if d is not_mapped else bdim_to_front(v, d, size) for v, d in zip(vals, dims)
    ]
    first_failed = 0
    if dims[0] is not not_mapped:
        first_failed = argmin(pred)
        pred = reduce_and(pred, (0,))
    lanes = [p[first_failed] if d is not not_mapped else p for p, d in zip(payload, dims[1:])]
    emit_check(pred, lanes, site, debug)
    return [], []


def _check_lowering(ctx, pred, *payload, site, debug):
    if debug:  # a debug_check that was not checkified is dropped
        return []
    raise functionalization_error()


def _check_reference(pred, *payload, site, debug):
    if debug:
        return []
    raise functionalization_error()


check_p = rules.define_primitive(
    "check",
    sharding=rules.NOT_SHARDABLE,
    abstract_eval=_check_abstract_eval,
    jvp=_check_jvp,
    batch=_check_batch,
    lowering=_check_lowering,
    reference=_check_reference,
    multiple_results=True,
)


def emit_check(pred: Any, payload: Sequence[Any], site: ErrorSite, debug: bool) -> None:
    """Check ``pred`` now if its value is known (eagerly, or the primal values ``grad``
    computes as it goes) and no checkify is tracing; otherwise stage the check."""
    known = not any(isinstance(x, Tracer) for x in (pred, *payload))
    if not ((known and not is_functionalizing()) or eval_trace_is_current()):
        check_p.bind(pred, *payload, site=site, debug=debug)
    elif not debug and not bool(np.asarray(pred)):
        exc = site.exception([np.asarray(x) for x in payload])
        raise errors.CheckifyError(str(exc)) from exc


# --------------------------------------------------------------------------------------------
# The user-facing functions


def check(pred: Any, msg: str, *fmt_args: Any, **fmt_kwargs: Any) -> None:
    """Fail with ``msg.format(*fmt_args, **fmt_kwargs)`` when ``pred`` (a scalar bool) is
    False: at once outside ``checkify``, in the returned ``Error`` inside it. The format
    arguments may be arrays (traced ones too); they are formatted when the error is read."""
    _check(pred, msg, fmt_args, fmt_kwargs, debug=False, what="check")


def debug_check(pred: Any, msg: str, *fmt_args: Any, **fmt_kwargs: Any) -> None:
    """A ``check`` that only ``checkify`` sees: dropped (never an error) everywhere else."""
    _check(pred, msg, fmt_args, fmt_kwargs, debug=True, what="debug_check")


def _check(pred, msg, fmt_args, fmt_kwargs, *, debug: bool, what: str) -> None:
    if not _is_scalar_pred(pred):
        raise TypeError(f"{what} takes a scalar pred as argument, got {pred!r}{errors.where()}")
    if not isinstance(msg, str):
        raise TypeError(
            f"{what} takes a message string as its second argument, got "
            f"{type(msg).__name__}{errors.where()}"
        )
    if not debug and not is_functionalizing() and staging():
        raise functionalization_error()
    site, payload = user_site(msg, fmt_args, fmt_kwargs)
    emit_check(pred, payload, site, debug)


def _is_scalar_pred(pred: Any) -> bool:
    if isinstance(pred, (bool, np.bool_)):
        return True
    if not is_arraylike(pred) or isinstance(pred, (int, float, complex)):
        return False
    aval = get_aval(pred)
    return aval.shape == () and aval.dtype == dtypes.bool_


def staging() -> bool:
    """Whether the current trace stages into a jaxpr (jit, a loop or cond body, ...).
    Partial evaluation (``grad``) runs known values, as a check's primal values are, eagerly
    on the trace below it, so it does not count."""
    trace = current_trace()
    while trace is not None:
        if isinstance(trace, StagingTrace) and not isinstance(trace, PartialEvalTrace):
            return True
        trace = trace.parent
    return False


# Python scalars among the format arguments stay Python values, formatted as they are.
_PYTHON_SCALARS = (bool, int, float, complex)


def user_site(msg: str, fmt_args: tuple, fmt_kwargs: dict) -> tuple[ErrorSite, list[Any]]:
    """The site of a user's check and its payload: the format arguments that are arrays (the
    others are kept as they are, in the site)."""
    leaves, tree = tree_flatten((fmt_args, fmt_kwargs))
    is_array = [is_arraylike(x) and not isinstance(x, _PYTHON_SCALARS) for x in leaves]
    payload = as_payload([x for x, a in zip(leaves, is_array) if a])
    statics = [None if a else x for x, a in zip(leaves, is_array)]
    source = current_source_info()
    where = str(source) if source is not None else None

    def build(arrays: list[np.ndarray]) -> FailedCheckError:
        it = iter(arrays)
        values = [next(it) if a else s for a, s in zip(is_array, statics)]
        args, kwargs = tree_unflatten(tree, values)
        return FailedCheckError(where, msg, *args, **kwargs)

    payload_tree = tree_flatten(list(payload))[1]
    return ErrorSite(build, payload_tree, slot_key([get_aval(x) for x in payload])), payload
