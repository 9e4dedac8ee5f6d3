"""Which backend turns StableHLO text into portable artifacts and back, for ember.export.

The core never parses MLIR; a backend that can (a PJRT backend) does it for export.
"""

from __future__ import annotations

from ember._src import errors
from ember._src.plugin import manager
from ember._src.runtime.backend import Backend


def artifact_backend() -> Backend:
    """A backend that converts StableHLO to and from portable artifacts: the default one if it
    can, else the first selected backend that can."""
    candidates = [manager.default_backend()]
    for name in manager.manager().selected():
        try:
            candidates.append(manager.backend(name))
        except errors.BackendError:
            continue
    for backend in candidates:
        if type(backend).stablehlo_versions is not Backend.stablehlo_versions:
            return backend
    raise errors.ExportError(
        "ember.export needs a backend that reads and writes StableHLO (a PJRT backend such as "
        "cpu); the backends in use are "
        + ", ".join(sorted({b.platform for b in candidates}))
        + ": select one with EMBER_PLATFORMS=cpu,reference"
    )
