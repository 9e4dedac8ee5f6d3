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
from typing import Any, NamedTuple

from ember._src.errors import is_internal_file


class SourceInfo(NamedTuple):
    filename: str
    lineno: int
    function: str
    name_stack: str = ""  # the named_scope names, outermost first, joined by "/"
    code: Any = None  # the frame's code object and instruction offset, which give the column
    lasti: int = -1

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno} ({self.function})"

    @property
    def column(self) -> int | None:
        """The 0-based column where the expression that made this equation starts (found from
        the instruction offset only when asked: most equations are never printed)."""
        if self.code is None or self.lasti < 0:
            return None
        for i, position in enumerate(self.code.co_positions()):
            if i == self.lasti // 2:
                return position[2]
        return None

    def summary(self) -> str:
        """``file:line:column (qualified function name)``, as JAX summarises a location."""
        column = self.column
        where = f"{self.filename}:{self.lineno}" + ("" if column is None else f":{column}")
        function = getattr(self.code, "co_qualname", self.function)
        return f"{where} ({function})"


_internal_code: dict[object, bool] = {}
_name_stack: contextvars.ContextVar[str] = contextvars.ContextVar("ember_name_stack", default="")
# Set while a jaxpr's equation is evaluated again (``eval_jaxpr`` re-binding it under a
# transformation): the equations made then come from the user's line that made the original
# one (its name stack inside the scopes in force now), not from whatever user frame is on
# the stack at the time. Set and reset directly (no context manager): it runs per equation.
replayed_source_info: contextvars.ContextVar[SourceInfo | None] = contextvars.ContextVar(
    "ember_replayed_source_info", default=None
)


def current_source_info() -> SourceInfo | None:
    replayed = replayed_source_info.get()
    if replayed is not None:
        outer = _name_stack.get()
        if not outer:
            return replayed
        inner = replayed.name_stack
        return replayed._replace(name_stack=f"{outer}/{inner}" if inner else outer)
    frame = sys._getframe(1)
    cache = _internal_code
    while frame is not None:
        code = frame.f_code
        internal = cache.get(code)
        if internal is None:
            internal = cache[code] = is_internal_file(code.co_filename)
        if not internal:
            return SourceInfo(
                code.co_filename,
                frame.f_lineno,
                code.co_name,
                _name_stack.get(),
                code,
                frame.f_lasti,
            )
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
