"""What an exported program may and may not do besides computing: callbacks and effects.

An exported artifact is StableHLO plus JSON: it cannot carry a Python function. A program that
calls back into Python (``debug.print``, ``debug.callback``, ``pure_callback``,
``io_callback``) lowers to a custom call naming a host function of *this* process, which a
deserialising process does not have, so ``export`` refuses it, naming the callback and the
user's line that made it (JAX likewise refuses custom calls outside its stable list).

The effects an exported program records (``ordered_effects``/``unordered_effects``) are those
that can survive serialisation; no effect ember knows can today, so both stay empty.
"""

from __future__ import annotations

from collections.abc import Iterator

from ember._src import errors
from ember._src.ir import ClosedJaxpr, Jaxpr
from ember._src.primitives.callbacks import HostCallable


def host_callables(jaxpr: Jaxpr) -> Iterator[tuple[str, HostCallable]]:
    """(primitive name, callback) for every Python callback anywhere in ``jaxpr``, in order."""
    for eqn in jaxpr.eqns:
        for value in eqn.params.values():
            for item in value if isinstance(value, (tuple, list)) else (value,):
                if isinstance(item, HostCallable):
                    yield eqn.primitive.name, item
                inner = item.jaxpr if isinstance(item, ClosedJaxpr) else item
                if isinstance(inner, Jaxpr):
                    yield from host_callables(inner)


def check_exportable(closed: ClosedJaxpr, name: str) -> None:
    """``ExportError`` naming the first Python callback of ``closed``, if it has one."""
    for primitive, callback in host_callables(closed.jaxpr):
        raise errors.ExportError(
            f"cannot export {name}: it calls back into Python through {primitive} "
            f"({callback.__name__}{callback.where}), and an exported program cannot carry a "
            f"Python function. Export the part without the callback, or call back outside it"
        )
