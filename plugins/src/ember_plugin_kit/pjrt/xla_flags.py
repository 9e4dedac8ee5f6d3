"""Checking ``XLA_FLAGS`` before XLA reads it: XLA ends the whole process on a flag it does not
know (a fatal log line, exit status 1, no exception), the first time a client is created.

So before the first client of a process, a flag not known to be valid is tried in a child
process (which XLA may end instead), and a bad one becomes a ``BackendError`` naming it. The
common flags below are known to be valid for the pinned jaxlib and skip the child (~0.2 s).

Nothing here imports ember at module level: ``_jaxlib`` imports this module, and the process
that hosts a job's coordination service (``coordinator``) imports ``_jaxlib`` without ember,
which would cost it (and the whole job's start-up) a few tenths of a second.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

_KNOWN = frozenset(
    {
        "xla_force_host_platform_device_count",
        "xla_dump_to",
        "xla_dump_hlo_as_text",
        "xla_dump_hlo_as_proto",
        "xla_dump_hlo_pass_re",
        "xla_dump_hlo_module_re",
        "xla_cpu_multi_thread_eigen",
        "xla_cpu_use_thunk_runtime",
        "xla_gpu_autotune_level",
        "xla_gpu_enable_triton_gemm",
        "xla_gpu_enable_latency_hiding_scheduler",
        "xla_gpu_deterministic_ops",
        "xla_backend_optimization_level",
    }
)
_checked: set[str] = set()
_UNKNOWN = re.compile(r"Unknown flags? in XLA_FLAGS: (.*)")


def check_xla_flags() -> None:
    """Raise ``BackendError`` if ``XLA_FLAGS`` holds a flag XLA would die on."""
    flags = os.environ.get("XLA_FLAGS", "").strip()
    if not flags or flags in _checked:
        return
    names = {part.lstrip("-").split("=", 1)[0] for part in flags.split()}
    if names <= _KNOWN:
        _checked.add(flags)
        return
    try:
        probe = subprocess.run(
            [sys.executable, "-c", "from jaxlib import xla_client; xla_client.CompileOptions()"],
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return  # could not tell: let XLA read them
    if probe.returncode != 0:
        found = _UNKNOWN.search(probe.stderr)
        if found is not None:
            # Imported here only: see the module's docstring (ember is loaded by now anyway).
            from ember.errors import BackendError  # noqa: PLC0415

            raise BackendError(
                f"XLA_FLAGS names a flag XLA does not know: {found.group(1).strip()} (XLA "
                f"would end the process on it). Remove it from XLA_FLAGS={flags!r}"
            )
    _checked.add(flags)
