"""Tracing profiles (``ember.profiler.trace``), as ``jax.profiler``'s.

A trace is XLA's profiler (through the default backend's ``Profiler``, a PJRT plugin's): while
it runs, it records what the host and the devices do, with the spans ``TraceAnnotation`` marks
and XLA's own op names (the ``named_scope`` names among them). Stopped, it is written in
TensorBoard's layout under the log directory (``plugins/profile/<run>/<host>.xplane.pb``),
which TensorBoard's profile plugin, XProf and Perfetto (``create_perfetto_trace``) read.
One trace runs at a time in a process.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ember._src import errors
from ember._src.plugin import manager
from ember._src.profiler import perfetto
from ember._src.runtime.backend import Profiler, ProfileSession


class _TraceState:
    """The trace running in this process, if any."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.session: ProfileSession | None = None
        self.log_dir = ""
        self.create_perfetto_link = False
        self.create_perfetto_trace = False


_trace = _TraceState()
_server: Any = None  # the handle of the running profiler server, if any


def _default_profiler() -> Profiler:
    backend = manager.backend(None)
    try:
        return backend.profiler()
    except NotImplementedError:
        raise errors.BackendError(
            f"ember.profiler needs a backend with a profiler (a PJRT plugin such as "
            f"ember-plugin-cpu); the default backend, {backend.platform!r}, has none"
            f"{errors.where()}"
        ) from None


def start_trace(
    log_dir: str | os.PathLike[str],
    create_perfetto_link: bool = False,
    create_perfetto_trace: bool = False,
) -> None:
    """Start a trace, written under ``log_dir`` by ``stop_trace``.

    ``create_perfetto_trace`` also writes ``perfetto_trace.json.gz`` (for ui.perfetto.dev)
    beside it; ``create_perfetto_link`` does too, and ``stop_trace`` then prints a link that
    opens it in the Perfetto UI and waits until the UI has fetched it.
    """
    with _trace.lock:
        if _trace.session is not None:
            raise RuntimeError(
                "Profile has already been started. Only one profile may be run at a time."
            )
        _trace.session = _default_profiler().start()
        _trace.log_dir = os.fspath(log_dir)
        _trace.create_perfetto_link = create_perfetto_link
        _trace.create_perfetto_trace = create_perfetto_trace


def stop_trace() -> None:
    """Stop the running trace and write it (see ``start_trace``)."""
    with _trace.lock:
        session = _trace.session
        if session is None:
            raise RuntimeError("No profile started")
        _trace.session = None
        run_dir = session.stop_and_export(_trace.log_dir)
        if _trace.create_perfetto_trace or _trace.create_perfetto_link:
            path = perfetto.write_perfetto_trace(run_dir)
            if _trace.create_perfetto_link:
                perfetto.serve_perfetto_link(path)


@contextlib.contextmanager
def trace(
    log_dir: str | os.PathLike[str],
    create_perfetto_link: bool = False,
    create_perfetto_trace: bool = False,
) -> Iterator[None]:
    """``with ember.profiler.trace("/tmp/trace"):`` traces the block (see ``start_trace``)."""
    start_trace(log_dir, create_perfetto_link, create_perfetto_trace)
    try:
        yield
    finally:
        stop_trace()


# -- annotations ----------------------------------------------------------------------------


@functools.cache
def _annotating_profiler() -> Profiler | None:
    """The profiler that records annotations; None where there is none (annotations then do
    nothing, as they would with no trace running)."""
    try:
        return manager.backend(None).profiler()
    except (NotImplementedError, errors.BackendError):
        return None


class TraceAnnotation:
    """``with TraceAnnotation("load batch", step=3):`` marks a span in the running trace,
    with its keyword arguments as metadata; nearly free when no trace runs."""

    __slots__ = ("name", "metadata", "_span")

    def __init__(self, name: str, **kwargs: Any):
        self.name = name
        self.metadata = kwargs
        self._span: Any = None

    def __enter__(self) -> TraceAnnotation:
        profiler = _annotating_profiler()
        if profiler is not None:
            self._span = profiler.annotation(self.name, self.metadata)
            self._span.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        span, self._span = self._span, None
        if span is not None:
            span.__exit__(*exc_info)


class StepTraceAnnotation(TraceAnnotation):
    """A ``TraceAnnotation`` marking one training step (``step_num=``): profile viewers
    group a trace by these steps."""

    __slots__ = ()

    def __init__(self, name: str, **kwargs: Any):
        super().__init__(name, _r=1, **kwargs)


def annotate_function(
    func: Callable[..., Any], name: str | None = None, **decorator_kwargs: Any
) -> Callable[..., Any]:
    """``func`` with each call marked as a ``TraceAnnotation`` (named ``name``, by default
    the function's qualified name); usable as a decorator."""
    name = name or getattr(func, "__qualname__", None) or func.__name__

    @functools.wraps(func)
    def annotated(*args: Any, **kwargs: Any) -> Any:
        with TraceAnnotation(name, **decorator_kwargs):
            return func(*args, **kwargs)

    return annotated


# -- the profiler server --------------------------------------------------------------------


def start_server(port: int) -> Any:
    """Serve traces on ``port`` to a profiler client (TensorBoard's "capture profile")."""
    global _server
    if _server is not None:
        raise ValueError("Only one profiler server can be active at a time.")
    _server = _default_profiler().start_server(port)
    return _server


def stop_server() -> None:
    """Stop the server ``start_server`` started."""
    global _server
    if _server is None:
        raise ValueError("No active profiler server.")
    _server = None  # dropping the handle stops it
