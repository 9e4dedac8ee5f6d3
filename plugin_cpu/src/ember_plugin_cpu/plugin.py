"""Hook implementations of the CPU plugin.

Importing this module is cheap: jaxlib is imported only when the ``cpu`` backend is first
used (inside ``make_backend``), so a broken jaxlib shows up as a failed platform in
``python -m ember doctor`` rather than as an import error.
"""

from __future__ import annotations

from ember import config
from ember.extend import Backend, CollectiveRegistry, PlatformSpec, define_config_option, hookimpl

PLATFORM = "cpu"

# Collectives XLA's CPU runtime implements itself within one process.
XLA_COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "collective_permute")

define_config_option(
    "cpu_device_count",
    1,
    help="How many devices the CPU backend splits the host into (read when it initialises).",
)


def make_backend() -> Backend:
    # Imported here, not at the top, so that loading the plugin never imports jaxlib.
    from ember_plugin_kit.pjrt import PjrtBackend, make_cpu_client  # noqa: PLC0415

    count = config.cpu_device_count
    if not isinstance(count, int) or count < 1:
        raise ValueError(f"cpu_device_count must be a positive integer, not {count!r}")
    return PjrtBackend(PLATFORM, make_cpu_client(count))


@hookimpl
def ember_platforms() -> list[PlatformSpec]:
    return [
        PlatformSpec(
            name=PLATFORM,
            make_backend=make_backend,
            aliases=("host",),
            priority=100,
            description="XLA's CPU compiler and runtime (jaxlib PJRT CPU client)",
        )
    ]


@hookimpl
def ember_register_collectives(registry: CollectiveRegistry) -> None:
    for name in XLA_COLLECTIVES:
        registry.register(PLATFORM, name, "xla")
