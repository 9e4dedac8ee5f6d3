"""The reference backend, registered as a plugin like any other (entry point ``reference``)."""

from __future__ import annotations

from ember._src import errors
from ember._src.config import config
from ember._src.plugin.hookspecs import hookimpl
from ember._src.plugin.spec import PlatformSpec
from ember._src.reference.backend import PLATFORM, ReferenceBackend

OPTION = "reference_device_count"

# The device count the backend started with; its devices are fixed from then on.
_started_with: int | None = None


def _refuse_change_after_start(value: object) -> None:
    if _started_with is None or value == _started_with:
        return
    raise errors.BackendError(
        f"{OPTION}={value!r} cannot take effect: the reference backend already started with "
        f"{_started_with} device(s). Set it before the first computation "
        f"(ember.config.update({OPTION!r}, {value!r}) at the top of the program) or in the "
        f"environment (EMBER_{OPTION.upper()}={value})"
    )


config.define(
    OPTION,
    1,
    help="How many devices the NumPy reference backend pretends to have (read when it starts).",
    validate=_refuse_change_after_start,
)


def make_backend() -> ReferenceBackend:
    global _started_with
    count = config.read(OPTION)
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError(f"{OPTION} must be a positive integer, not {count!r}")
    backend = ReferenceBackend(count)
    _started_with = count
    return backend


@hookimpl
def ember_platforms() -> list[PlatformSpec]:
    return [
        PlatformSpec(
            name=PLATFORM,
            make_backend=make_backend,
            aliases=("numpy",),
            priority=0,  # the last resort: any real backend is preferred
            description="NumPy evaluation of every primitive (exact, slow, no compiler)",
        )
    ]
