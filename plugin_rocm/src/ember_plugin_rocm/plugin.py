"""Hook implementations of the ROCm plugin: the ``rocm`` platform on AMD GPUs through XLA's
ROCm PJRT plugin.

Importing this module is cheap and touches no hardware: the driver is probed, the ROCm
libraries loaded and jaxlib imported only when the ``rocm`` backend is first used (inside
``make_backend``). Starting the backend checks, in order, the options, the driver (``/dev/kfd``
and HIP's device count, with a deadline), the PJRT wheel and every ROCm library its PJRT
library links, and only then loads the PJRT library, registers the FFI extension's handlers
with it and creates the client, so a machine without an AMD GPU or without ROCm learns exactly
why within seconds, from ``python -m ember doctor`` or from ``EMBER_PLATFORMS=rocm``.

No Pallas kernel compiler is registered: the kit's Triton compiler emits CUDA-only calls
(libdevice), so Pallas kernels run interpreted on ``rocm``.
"""

from __future__ import annotations

from collections.abc import Callable

from ember.errors import BackendError
from ember.extend import Backend, CollectiveRegistry, PlatformSpec, current_job, hookimpl
from ember_plugin_kit import gpu
from ember_plugin_rocm import driver, libraries, options

PLATFORM = "rocm"

# Above the CPU plugin's 100, as CUDA's: a machine with an AMD GPU computes on it.
PRIORITY = 500

# Collectives XLA's GPU runtime implements itself (over RCCL; the kit's list).
XLA_COLLECTIVES = gpu.XLA_COLLECTIVES


def make_backend() -> Backend:
    # Imported here, not at the top, so that loading the plugin never imports jaxlib.
    from ember_plugin_kit.pjrt import (  # noqa: PLC0415
        XlaRuntimeError,
        make_plugin_client,
        register_plugin_extension,
    )
    from ember_plugin_rocm.backend import RocmBackend  # noqa: PLC0415

    client_options = options.client_options()
    try:
        found = driver.probe(search_dirs=libraries.rocm_library_dirs())
    except driver.DriverUnavailableError as exc:
        raise BackendError(f"{exc}{_also_missing()}") from None
    ordinals = options.requested_devices(found.device_count)
    if ordinals is not None:
        client_options["visible_devices"] = list(ordinals)
    try:
        library = libraries.pjrt_library()
        libraries.load_runtime(library)
    except libraries.MissingRocmPartError as exc:
        raise BackendError(str(exc)) from None
    try:
        ffi_handlers = _register_ffi_handlers(library, register_plugin_extension)
        client = make_plugin_client(PLATFORM, library, client_options, current_job())
    except XlaRuntimeError as exc:
        raise BackendError(
            f"XLA's ROCm plugin could not start ({found.device_count} GPU(s) visible, HIP "
            f"driver {found.version_text}, options {client_options}): {exc}"
        ) from None
    backend = RocmBackend(client, driver=found, ffi_handlers=ffi_handlers)
    options.mark_started()
    return backend


def _register_ffi_handlers(library: str, register: Callable[..., list[str]]) -> list[str] | str:
    """Register the FFI extension's handlers with XLA's ROCm plugin, before its first client
    (the handlers' names, or why there are none)."""
    return gpu.register_ffi_handlers(
        register,
        PLATFORM,
        library,
        libraries.ffi_extension(),
        distribution=libraries.FFI_DISTRIBUTION,
        xla_platform=options.XLA_PLATFORM_NAME,
    )


def _also_missing() -> str:
    """A note on what is missing besides the driver (the PJRT wheel, ROCm libraries), so that
    fixing the driver is not followed by a second surprise."""
    try:
        library = libraries.pjrt_library()
        missing = libraries.missing_runtime(library)
    except libraries.MissingRocmPartError:
        return f"; the ROCm PJRT wheel is not installed either ({libraries.INSTALL_HINT})"
    if not missing:
        return ""
    return f"; ROCm runtime libraries are missing too: {', '.join(m.soname for m in missing)}"


@hookimpl
def ember_platforms() -> list[PlatformSpec]:
    return [
        PlatformSpec(
            name=PLATFORM,
            make_backend=make_backend,
            priority=PRIORITY,
            description="AMD GPUs through XLA's ROCm PJRT plugin (jax-rocm7-pjrt)",
        )
    ]


@hookimpl
def ember_register_collectives(registry: CollectiveRegistry) -> None:
    for name in XLA_COLLECTIVES:
        registry.register(PLATFORM, name, "xla")


@hookimpl
def ember_distributed_runtime() -> object:
    # Multi-process jobs: XLA's coordination service, through whose key-value store the ROCm
    # plugin exchanges the global topology and RCCL's ids (make_plugin_client passes the job).
    from ember_plugin_kit.pjrt import XlaCoordination  # noqa: PLC0415 - imports jaxlib

    return XlaCoordination()
