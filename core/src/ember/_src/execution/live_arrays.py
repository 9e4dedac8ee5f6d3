"""``ember.live_arrays()``: every ember Array alive on a platform, as ``jax.live_arrays``.

Arrays are found by walking the garbage collector's objects when asked, not by registering
each one as it is made: the registration (a weak set) would cost every eager operation and
jitted call its share of a microsecond, while this debugging aid may take milliseconds.
"""

from __future__ import annotations

import gc

from ember._src.plugin import manager
from ember._src.runtime.array import Array


def live_arrays(platform: str | None = None) -> list[Array]:
    """The Arrays alive (not deleted) on ``platform``'s devices (default: the default
    backend's). An Array that is no longer referenced but not yet collected may be among
    them: call ``gc.collect()`` first for an exact answer."""
    backend = manager.backend(platform)
    found = []
    for obj in gc.get_objects():
        if type(obj) is Array and not obj.is_deleted():
            device = next(iter(obj._sharding.device_set))
            if device.backend is backend:
                found.append(obj)
    return found
