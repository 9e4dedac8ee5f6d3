"""The ``rocm`` backend: the kit's PJRT backend over XLA's ROCm client, reporting the ROCm
parts it runs on (shown by ``python -m ember doctor``)."""

from __future__ import annotations

from typing import Any

from ember_plugin_kit.gpu import describe_ffi_handlers
from ember_plugin_kit.pjrt import PjrtBackend
from ember_plugin_rocm.driver import DriverReport

PLATFORM = "rocm"


class RocmBackend(PjrtBackend):
    """``PjrtBackend`` on XLA's ROCm client. ``driver``: what HIP reported before the client
    started. ``ffi_handlers``: the names of the FFI handlers registered with XLA's ROCm plugin
    (host callbacks, ...), or why there are none."""

    def __init__(self, client: Any, *, driver: DriverReport, ffi_handlers: list[str] | str):
        super().__init__(PLATFORM, client)
        self.driver = driver
        self.ffi_handlers = ffi_handlers

    def versions(self) -> dict[str, str]:
        found = super().versions()
        found["HIP driver"] = self.driver.version_text
        found.update(describe_ffi_handlers(self.ffi_handlers))
        found["Pallas kernels"] = "interpreted (the kit's Triton compiler is CUDA-only)"
        return found
