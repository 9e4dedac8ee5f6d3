"""Uncaught exceptions that passed through ember are printed with the user's frames only.

``config.traceback_filtering = "off"`` (or ``EMBER_TRACEBACK_FILTERING=off``) prints every
frame. Only the printout of an uncaught exception changes (through ``sys.excepthook``): code
that catches an exception keeps its full traceback.
"""

from __future__ import annotations

import sys
import types

from ember._src import errors
from ember._src.config import config

_FILTER_NOTE = (
    "ember: {n} ember-internal frame(s) hidden from this traceback; set "
    "EMBER_TRACEBACK_FILTERING=off (or ember.config.update('traceback_filtering', 'off')) "
    "to show them."
)


def filter_traceback(tb: types.TracebackType | None) -> tuple[types.TracebackType | None, int]:
    """``tb`` without ember's (and plugins') frames, and how many frames were dropped."""
    kept: list[types.TracebackType] = []
    dropped = 0
    while tb is not None:
        if errors.is_internal_file(tb.tb_frame.f_code.co_filename):
            dropped += 1
        else:
            kept.append(tb)
        tb = tb.tb_next
    filtered = None
    for entry in reversed(kept):
        filtered = types.TracebackType(filtered, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return filtered, dropped


def _filter_chain(exc: BaseException, seen: set[int]) -> None:
    """Filter ``exc`` and the exceptions it was raised from or during, once each."""
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        filtered, dropped = filter_traceback(exc.__traceback__)
        if dropped and filtered is not None:  # keep an all-internal traceback whole
            exc.__traceback__ = filtered
            if hasattr(exc, "add_note"):  # Python 3.11+; 3.10 prints the filtered frames alone
                exc.add_note(_FILTER_NOTE.format(n=dropped))
        if exc.__context__ is not None:
            _filter_chain(exc.__context__, seen)
        exc = exc.__cause__


def _excepthook(etype: type, value: BaseException, tb: types.TracebackType | None) -> None:
    if config.traceback_filtering != "off" and value is not None:
        try:
            value.__traceback__ = tb
            _filter_chain(value, set())
            tb = value.__traceback__
        except Exception:  # never let the filter hide the real error
            pass
    _previous_excepthook(etype, value, tb)


_previous_excepthook = sys.excepthook


def install_traceback_filter() -> None:
    """Print uncaught exceptions with ember's internal frames hidden (see above)."""
    global _previous_excepthook
    if sys.excepthook is not _excepthook:
        _previous_excepthook = sys.excepthook
        sys.excepthook = _excepthook
