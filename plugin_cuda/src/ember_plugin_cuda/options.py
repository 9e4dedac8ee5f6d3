"""The CUDA platform's options, read when its backend starts, and the PJRT client options
they become: the kit's GPU options (``ember_plugin_kit.gpu.options``) for ``cuda``.

``cuda_visible_devices``, ``cuda_allocator``, ``cuda_memory_fraction`` and
``cuda_preallocate`` are ember config options (``EMBER_<NAME>`` in the environment); JAX's
variables for the same settings are honoured when they are unset.
"""

from __future__ import annotations

from typing import Any

from ember_plugin_kit.gpu import GpuOptions

# XLA's GPU allocators (the PJRT plugin's ``allocator`` option): ``default`` is the BFC
# allocator, preallocating; ``platform`` allocates and frees exactly what is asked (slow, but
# no memory is held: for debugging out-of-memory errors); ``bfc`` is XLA's best-fit with
# coalescing allocator; ``cuda_async`` is CUDA's stream-ordered cudaMallocAsync; ``vmm``
# grows by mapping virtual memory.
ALLOCATORS = ("default", "platform", "bfc", "cuda_async", "vmm")

OPTIONS = GpuOptions(
    "cuda",
    display_name="CUDA",
    allocators=ALLOCATORS,
    visibility_variable="CUDA_VISIBLE_DEVICES",
    allocator_help="XLA's GPU memory allocator: default (bfc, preallocating), platform "
    "(allocate on demand, free at once: slow, for debugging memory), bfc, cuda_async or vmm.",
)
OPTIONS.define()

VISIBLE_DEVICES = OPTIONS.visible_devices_name
ALLOCATOR = OPTIONS.allocator_name
MEMORY_FRACTION = OPTIONS.memory_fraction_name
PREALLOCATE = OPTIONS.preallocate_name

# JAX's environment variables for the same settings (read only when ember's are unset).
JAX_VARIABLES = OPTIONS.jax_variables


def client_options() -> dict[str, Any]:
    """The PJRT CUDA client's options from ember's config (checked; ``ValueError`` names the
    option and the bad value)."""
    return OPTIONS.client_options("cuda")


def requested_devices(gpu_count: int) -> tuple[int, ...] | None:
    """The ordinals of ``cuda_visible_devices`` (None: all), checked against ``gpu_count``."""
    return OPTIONS.requested_devices(gpu_count)


def mark_started() -> None:
    """Record the options the backend started with (later changes are then refused)."""
    OPTIONS.mark_started()
