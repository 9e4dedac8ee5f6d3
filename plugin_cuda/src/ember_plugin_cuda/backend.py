"""The ``cuda`` backend: the kit's PJRT backend over XLA's CUDA client, reporting the CUDA
parts it runs on (shown by ``python -m ember doctor``)."""

from __future__ import annotations

from typing import Any

from ember_plugin_cuda.driver import DriverReport
from ember_plugin_cuda.libraries import Preloaded
from ember_plugin_kit.gpu import describe_ffi_handlers
from ember_plugin_kit.pjrt import PjrtBackend

PLATFORM = "cuda"


class CudaBackend(PjrtBackend):
    """``PjrtBackend`` with the GPU compiler pointed at ptxas and libdevice.

    ``cuda_data_dir``: the directory with ``bin/ptxas`` and ``nvvm/libdevice`` (the
    nvidia-cuda-nvcc-cu12 wheel's), or None to leave XLA's own search (``/usr/local/cuda``
    and the like). ``ffi_handlers``: the names of the FFI handlers registered with XLA's CUDA
    plugin (host callbacks, ...), or why there are none."""

    def __init__(
        self,
        client: Any,
        *,
        driver: DriverReport,
        preloaded: Preloaded,
        cuda_data_dir: str | None,
        ffi_handlers: list[str] | str,
    ):
        debug_options = {"xla_gpu_cuda_data_dir": cuda_data_dir} if cuda_data_dir else {}
        super().__init__(PLATFORM, client, debug_options=debug_options)
        self.driver = driver
        self.preloaded = preloaded
        self.cuda_data_dir = cuda_data_dir
        self.ffi_handlers = ffi_handlers

    def versions(self) -> dict[str, str]:
        found = super().versions()
        major, minor = self.driver.cuda_version
        found["NVIDIA driver"] = f"supports CUDA {major}.{minor}"
        found["ptxas and libdevice"] = self.cuda_data_dir or "not in a wheel: XLA's default search"
        found.update(describe_ffi_handlers(self.ffi_handlers))
        if self.preloaded.missing_optional:
            names = ", ".join(
                f"{lib.soname} ({lib.distribution})" for lib in self.preloaded.missing_optional
            )
            found["CUDA libraries not found (some operations will fail)"] = names
        return found
