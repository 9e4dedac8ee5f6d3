"""What the GPU plugins (CUDA, ROCm) share, written once: their memory options and the PJRT
client options they become (``options``), a call to a GPU driver with a deadline (``probe``),
finding installed libraries and what a shared library needs to load (``libraries``), and
the collectives and FFI extension around XLA's GPU plugins (``extension``).

Nothing here imports jaxlib or touches a GPU on import. Device discovery and memory stats
come from the PJRT client itself, through the kit's ``PjrtBackend`` (``ember_plugin_kit.pjrt``).
"""

from ember_plugin_kit.gpu.extension import (
    XLA_COLLECTIVES as XLA_COLLECTIVES,
    describe_ffi_handlers as describe_ffi_handlers,
    register_ffi_handlers as register_ffi_handlers,
)
from ember_plugin_kit.gpu.libraries import (
    DynamicSection as DynamicSection,
    MissingLibrary as MissingLibrary,
    dynamic_section as dynamic_section,
    missing_libraries as missing_libraries,
    package_directory as package_directory,
)
from ember_plugin_kit.gpu.options import GpuOptions as GpuOptions
from ember_plugin_kit.gpu.probe import call_within as call_within

__all__ = [
    "XLA_COLLECTIVES",
    "DynamicSection",
    "GpuOptions",
    "MissingLibrary",
    "call_within",
    "describe_ffi_handlers",
    "dynamic_section",
    "missing_libraries",
    "package_directory",
    "register_ffi_handlers",
]
