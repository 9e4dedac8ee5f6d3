"""Profiling (``ember.profiler``), as ``jax.profiler``: traces of what the host and devices
do, annotations that mark spans in them, and device memory profiles."""

from ember._src.profiler.memory import (
    device_memory_profile as device_memory_profile,
    save_device_memory_profile as save_device_memory_profile,
)
from ember._src.profiler.tracing import (
    StepTraceAnnotation as StepTraceAnnotation,
    TraceAnnotation as TraceAnnotation,
    annotate_function as annotate_function,
    start_server as start_server,
    start_trace as start_trace,
    stop_server as stop_server,
    stop_trace as stop_trace,
    trace as trace,
)
