"""Hook implementations of the CUDA plugin: the ``cuda`` platform on NVIDIA GPUs through XLA's
CUDA PJRT plugin.

Importing this module is cheap and touches no hardware: the driver is probed, the CUDA
libraries loaded and jaxlib imported only when the ``cuda`` backend is first used (inside
``make_backend``). Starting the backend checks, in order, the options, the driver (a few
milliseconds, with a deadline), the CUDA wheels, and only then loads the PJRT library,
registers the FFI extension's handlers with it and creates the client, so a machine without
a GPU learns why within seconds, from ``python -m ember doctor`` or from
``EMBER_PLATFORMS=cuda``.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable

from ember.errors import BackendError
from ember.extend import (
    Backend,
    CollectiveRegistry,
    LoweringRegistry,
    PlatformSpec,
    current_job,
    hookimpl,
)
from ember_plugin_cuda import driver, libraries, linalg, options
from ember_plugin_kit import gpu

PLATFORM = "cuda"

# Above the CPU plugin's 100: a machine with a GPU and this plugin computes on the GPU.
PRIORITY = 500

# Collectives XLA's GPU runtime implements itself (over NCCL; the kit's list).
XLA_COLLECTIVES = gpu.XLA_COLLECTIVES

# The kit's Pallas-to-Triton kernel compiler (the Pallas contract, §3). Registered for this
# platform when the installed kit ships it; until then Pallas kernels run interpreted here.
TRITON_MODULE = "ember_plugin_kit.triton"

# The fused kernels written with cupy (the ``cuda12`` extra brings it), registered as named
# kernels for this platform when cupy is installed.
CUPY_MODULE = "cupy"
KERNELS_MODULE = "ember_plugin_cuda.kernels"


def make_backend() -> Backend:
    # Imported here, not at the top, so that loading the plugin never imports jaxlib.
    from ember_plugin_cuda.backend import CudaBackend  # noqa: PLC0415
    from ember_plugin_kit.pjrt import (  # noqa: PLC0415
        XlaRuntimeError,
        make_plugin_client,
        register_plugin_extension,
    )

    client_options = options.client_options()
    try:
        found = driver.probe()
    except driver.DriverUnavailableError as exc:
        raise BackendError(f"{exc}{_also_missing_wheels()}") from None
    ordinals = options.requested_devices(found.device_count)
    if ordinals is not None:
        client_options["visible_devices"] = list(ordinals)
    try:
        library = libraries.pjrt_library()
        preloaded = libraries.preload_cuda_libraries()
    except libraries.MissingCudaPartError as exc:
        raise BackendError(str(exc)) from None
    try:
        ffi_handlers = _register_ffi_handlers(library, register_plugin_extension)
        client = make_plugin_client(PLATFORM, library, client_options, current_job())
    except XlaRuntimeError as exc:
        major, minor = found.cuda_version
        raise BackendError(
            f"XLA's CUDA plugin could not start ({found.device_count} GPU(s) visible, driver "
            f"for CUDA {major}.{minor}, options {client_options}): {exc}"
        ) from None
    backend = CudaBackend(
        client,
        driver=found,
        preloaded=preloaded,
        cuda_data_dir=libraries.cuda_data_dir(),
        ffi_handlers=ffi_handlers,
    )
    options.mark_started()
    return backend


def _register_ffi_handlers(library: str, register: Callable[..., list[str]]) -> list[str] | str:
    """Register the FFI extension's handlers, and the wheel's cuSOLVER/GPU linear algebra
    ones, with XLA's CUDA plugin before its first client (the handlers' names, or why there
    are none)."""
    return gpu.register_ffi_handlers(
        register,
        PLATFORM,
        library,
        libraries.ffi_extension(),
        distribution=libraries.FFI_DISTRIBUTION,
        xla_platform="CUDA",
        handler_modules=libraries.LINALG_HANDLER_MODULES,
    )


def _also_missing_wheels() -> str:
    """A note that the CUDA wheels are missing too, so that fixing the driver is not followed
    by a second surprise."""
    try:
        libraries.pjrt_library()
    except libraries.MissingCudaPartError:
        return f"; the CUDA wheels are not installed either ({libraries.INSTALL_HINT})"
    return ""


@hookimpl
def ember_platforms() -> list[PlatformSpec]:
    return [
        PlatformSpec(
            name=PLATFORM,
            make_backend=make_backend,
            aliases=("gpu",),
            priority=PRIORITY,
            description="NVIDIA GPUs through XLA's CUDA PJRT plugin (jax-cuda12-pjrt)",
        )
    ]


@hookimpl
def ember_register_collectives(registry: CollectiveRegistry) -> None:
    for name in XLA_COLLECTIVES:
        registry.register(PLATFORM, name, "xla")


@hookimpl
def ember_register_lowerings(registry: LoweringRegistry) -> None:
    # cuSOLVER for the linear algebra primitives (linalg.py).
    linalg.register(registry, PLATFORM)
    if importlib.util.find_spec(TRITON_MODULE) is not None:
        importlib.import_module(TRITON_MODULE).register(registry, PLATFORM)
    if importlib.util.find_spec(CUPY_MODULE) is not None:
        # Imported here, not at the top: importing cupy is slow and needs its CUDA wheels.
        importlib.import_module(KERNELS_MODULE).register(registry, PLATFORM)


@hookimpl
def ember_distributed_runtime() -> object:
    # Multi-process jobs: XLA's coordination service, through whose key-value store the CUDA
    # plugin exchanges the global topology and NCCL's ids (make_plugin_client passes the job).
    from ember_plugin_kit.pjrt import XlaCoordination  # noqa: PLC0415 - imports jaxlib

    return XlaCoordination()
