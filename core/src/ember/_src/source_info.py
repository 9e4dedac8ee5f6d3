"""Where in the user's code each traced operation came from, captured cheaply.

Every staged equation records the innermost frame outside ember (file, line, function), so
error messages and printed jaxprs can point at the user's line. Whether a code object is
ember's own is decided once per code object and cached, which keeps the walk up the stack to a
few dictionary lookups per equation.

It also records the *name stack*: the ``named_scope`` names in force when it was traced
(``"outer/inner"``). A traced function's names start empty (``reset_name_stack``), as in JAX:
the lowering puts the scopes of the equations that call it in front, so a function traced once
and called from several places is named right in each.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from collections.abc import Iterator
from typing import NamedTuple

from ember._src.errors import is_internal_file


class SourceInfo(NamedTuple):
    filename: str
    lineno: int
    function: str
    name_stack: str = ""  # the named_scope names, outermost first, joined by "/"

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno} ({self.function})"


_internal_code: dict[object, bool] = {}
_name_stack: contextvars.ContextVar[str] = contextvars.ContextVar("ember_name_stack", default="")


def current_source_info() -> SourceInfo | None:
    frame = sys._getframe(1)
    cache = _internal_code
    while frame is not None:
        code = frame.f_code
        internal = cache.get(code)
        if internal is None:
            internal = cache[code] = is_internal_file(code.co_filename)
        if not internal:
            return SourceInfo(code.co_filename, frame.f_lineno, code.co_name, _name_stack.get())
        frame = frame.f_back
    return None


def current_name_stack() -> str:
    return _name_stack.get()


@contextlib.contextmanager
def named_scope(name: str) -> Iterator[None]:
    """``with ember.named_scope("block"):`` names the operations traced inside: the name shows
    in the StableHLO locations (``jit(f).lower(x).as_text(debug_info=True)``) and in XLA's
    op names (profiles, HLO dumps). Scopes nest: ``outer/inner``. As ``jax.named_scope``."""
    if not isinstance(name, str):
        raise TypeError(f"named_scope: the name must be a string, got {type(name).__name__}")
    outer = _name_stack.get()
    token = _name_stack.set(f"{outer}/{name}" if outer else name)
    try:
        yield
    finally:
        _name_stack.reset(token)


@contextlib.contextmanager
def reset_name_stack() -> Iterator[None]:
    """Trace a function's body with an empty name stack (see the module docstring)."""
    token = _name_stack.set("")
    try:
        yield
    finally:
        _name_stack.reset(token)
