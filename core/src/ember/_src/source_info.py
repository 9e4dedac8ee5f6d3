"""Where in the user's code each traced operation came from, captured cheaply.

Every staged equation records the innermost frame outside ember (file, line, function), so
error messages and printed jaxprs can point at the user's line. Whether a code object is
ember's own is decided once per code object and cached, which keeps the walk up the stack to a
few dictionary lookups per equation.
"""

from __future__ import annotations

import sys
from typing import NamedTuple

from ember._src.errors import is_internal_file


class SourceInfo(NamedTuple):
    filename: str
    lineno: int
    function: str

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno} ({self.function})"


_internal_code: dict[object, bool] = {}


def current_source_info() -> SourceInfo | None:
    frame = sys._getframe(1)
    cache = _internal_code
    while frame is not None:
        code = frame.f_code
        internal = cache.get(code)
        if internal is None:
            internal = cache[code] = is_internal_file(code.co_filename)
        if not internal:
            return SourceInfo(code.co_filename, frame.f_lineno, code.co_name)
        frame = frame.f_back
    return None
