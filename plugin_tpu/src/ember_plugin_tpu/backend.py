"""The ``tpu`` backend: the kit's PJRT backend over libtpu's client, reporting the chips and
the libtpu it runs on (shown by ``python -m ember doctor``)."""

from __future__ import annotations

from typing import Any

from ember_plugin_kit.pjrt import PjrtBackend
from ember_plugin_tpu.chips import TpuChips

PLATFORM = "tpu"


class TpuBackend(PjrtBackend):
    """``PjrtBackend`` on TPU chips; its devices carry ``coords``, ``core_on_chip`` and
    ``slice_index``."""

    def __init__(self, client: Any, *, chips: TpuChips, library_version: str | None):
        super().__init__(PLATFORM, client)
        self.chips = chips
        self.library_version = library_version

    def versions(self) -> dict[str, str]:
        found = super().versions()
        found["libtpu"] = self.library_version or "from TPU_LIBRARY_PATH"
        found["TPU chips on this host"] = f"{self.chips.count} x {self.chips.generation}"
        return found
