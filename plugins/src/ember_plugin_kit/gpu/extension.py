"""What XLA's GPU plugins share around the PJRT library: the collectives XLA runs itself, and
registering a vendor's FFI extension (host callbacks on the GPU, ...) before the first client.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

# Collectives XLA's GPU runtime implements itself (over NCCL or RCCL, within and across
# processes): a GPU plugin registers each one as "xla".
XLA_COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "collective_permute")


def register_ffi_handlers(
    register: Callable[..., list[str]],
    platform: str,
    library: str,
    module: str | None,
    *,
    distribution: str,
    xla_platform: str,
    handler_modules: Sequence[str] = (),
) -> list[str] | str:
    """Register FFI extension ``module`` (None: its wheel, ``distribution``, is not installed)
    with the PJRT plugin at ``library`` through ``register`` (the kit's
    ``pjrt.register_plugin_extension``), and the handlers of ``handler_modules`` of the same
    wheel (each with a ``registrations()``, e.g. the vendor's solver library). Returns the
    handlers' names, or why there are none: the extension is optional (without it, programs
    with host callbacks or vendor linear algebra fail to compile on the GPU; everything else
    runs), so its absence is reported, not raised."""
    if module is None:
        return f"{distribution} is not installed"
    extra = (tuple(handler_modules),) if handler_modules else ()
    try:
        return register(platform, library, module, xla_platform, *extra)
    except ImportError as exc:
        return f"{module} could not be imported: {exc}"


def describe_ffi_handlers(ffi_handlers: list[str] | str) -> dict[str, str]:
    """The doctor's lines for ``register_ffi_handlers``' answer."""
    if isinstance(ffi_handlers, str):
        return {"host callbacks on the GPU": f"unavailable: {ffi_handlers}"}
    return {"FFI handlers registered": ", ".join(ffi_handlers) or "none"}
