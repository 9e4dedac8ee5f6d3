"""Device memory profiles (``ember.profiler.device_memory_profile``), as JAX's: which arrays
and executables hold the devices' memory, in pprof's format (``pprof --web profile.prof``)."""

from __future__ import annotations

import os

from ember._src import errors
from ember._src.plugin import manager


def device_memory_profile(backend: str | None = None) -> bytes:
    """A snapshot of the memory held on ``backend``'s devices (default: the default
    backend's), as a gzip-compressed pprof profile."""
    chosen = manager.backend(backend)
    try:
        return chosen.device_memory_profile()
    except NotImplementedError:
        raise errors.BackendError(
            f"the {chosen.platform!r} backend cannot profile device memory (a PJRT plugin such "
            f"as ember-plugin-cpu can){errors.where()}"
        ) from None


def save_device_memory_profile(
    filename: str | os.PathLike[str], backend: str | None = None
) -> None:
    """Write ``device_memory_profile(backend)`` to ``filename``."""
    profile = device_memory_profile(backend)
    with open(filename, "wb") as file:
        file.write(profile)
