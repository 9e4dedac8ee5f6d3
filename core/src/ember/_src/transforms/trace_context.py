"""What besides a function's arguments decides how it traces: part of every trace cache key.

``jit`` caches what it traces. A trace depends on x64, on the
mesh in scope (it resolves PartitionSpecs and sets the axis types) and on the transformations
that change what tracing stages (``checkify`` lets a ``check`` be staged, which it otherwise
refuses), so each of these gets its own traces: a function first traced inside ``checkify``
and called outside it traces again, and its unfunctionalized check fails as it should.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Hashable, Iterator

from ember._src.config import config
from ember._src.runtime.mesh import current_mesh

_enable_x64 = config.reader("enable_x64")

# The transformations in scope that change what tracing stages, outermost first.
_tracing_under: contextvars.ContextVar[tuple[Hashable, ...]] = contextvars.ContextVar(
    "ember_tracing_under", default=()
)


@contextlib.contextmanager
def tracing_under(name: Hashable) -> Iterator[None]:
    """Trace the block as ``name`` asks (once per name: nesting the same one changes
    nothing), so traces cached in it are not those cached outside it."""
    entries = _tracing_under.get()
    if name in entries:
        yield
        return
    token = _tracing_under.set((*entries, name))
    try:
        yield
    finally:
        _tracing_under.reset(token)


def trace_context() -> tuple:
    """The part of a trace cache's key that is not the arguments."""
    return (_enable_x64(), current_mesh(), _tracing_under.get())
