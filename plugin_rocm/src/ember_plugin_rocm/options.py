"""The ROCm platform's options, read when its backend starts, and the PJRT client options
they become: the kit's GPU options (``ember_plugin_kit.gpu.options``) for ``rocm``.

``rocm_visible_devices``, ``rocm_allocator``, ``rocm_memory_fraction`` and
``rocm_preallocate`` are ember config options (``EMBER_<NAME>`` in the environment); JAX's
variables for the same settings are honoured when they are unset.
"""

from __future__ import annotations

from typing import Any

from ember_plugin_kit.gpu import GpuOptions

# XLA's GPU allocators on ROCm: ``default`` is the BFC allocator, preallocating; ``platform``
# allocates and frees exactly what is asked (slow, but no memory is held: for debugging
# out-of-memory errors); ``bfc`` is XLA's best-fit with coalescing allocator. (CUDA's
# ``cuda_async`` and ``vmm`` have no ROCm counterpart in XLA's plugin.)
ALLOCATORS = ("default", "platform", "bfc")

# The name XLA's ROCm plugin knows its platform by (JAX passes the same).
XLA_PLATFORM_NAME = "ROCM"

OPTIONS = GpuOptions(
    "rocm",
    display_name="ROCm",
    allocators=ALLOCATORS,
    visibility_variable="HIP_VISIBLE_DEVICES",
    allocator_help="XLA's GPU memory allocator: default (bfc, preallocating), platform "
    "(allocate on demand, free at once: slow, for debugging memory) or bfc.",
)
OPTIONS.define()

VISIBLE_DEVICES = OPTIONS.visible_devices_name
ALLOCATOR = OPTIONS.allocator_name
MEMORY_FRACTION = OPTIONS.memory_fraction_name
PREALLOCATE = OPTIONS.preallocate_name

# JAX's environment variables for the same settings (read only when ember's are unset).
JAX_VARIABLES = OPTIONS.jax_variables


def client_options() -> dict[str, Any]:
    """The PJRT ROCm client's options from ember's config (checked; ``ValueError`` names the
    option and the bad value)."""
    return OPTIONS.client_options(XLA_PLATFORM_NAME)


def requested_devices(gpu_count: int) -> tuple[int, ...] | None:
    """The ordinals of ``rocm_visible_devices`` (None: all), checked against ``gpu_count``."""
    return OPTIONS.requested_devices(gpu_count)


def mark_started() -> None:
    """Record the options the backend started with (later changes are then refused)."""
    OPTIONS.mark_started()
