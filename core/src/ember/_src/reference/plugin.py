"""The reference backend, registered as a plugin like any other (entry point ``reference``)."""

from __future__ import annotations

from ember._src.config import config
from ember._src.plugin.hookspecs import hookimpl
from ember._src.plugin.spec import PlatformSpec
from ember._src.reference.backend import PLATFORM, ReferenceBackend

config.define(
    "reference_device_count",
    1,
    help="How many devices the NumPy reference backend pretends to have.",
)


@hookimpl
def ember_platforms() -> list[PlatformSpec]:
    return [
        PlatformSpec(
            name=PLATFORM,
            make_backend=lambda: ReferenceBackend(config.reference_device_count),
            aliases=("numpy",),
            priority=0,  # the last resort: any real backend is preferred
            description="NumPy evaluation of every primitive (exact, slow, no compiler)",
        )
    ]
