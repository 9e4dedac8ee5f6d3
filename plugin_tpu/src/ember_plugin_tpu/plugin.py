"""Hook implementations of the TPU plugin: the ``tpu`` platform on Google TPUs through libtpu,
compile-only TPU topologies anywhere, and the TPU clusters' launch environments.

Importing this module is cheap and touches no hardware. Starting the backend first reads the
PCI bus (milliseconds) and the installed libtpu, and only on a machine with TPU chips loads
libtpu and creates its client, so a machine without a TPU learns why at once, from ``python
-m ember doctor`` or ``EMBER_PLATFORMS=tpu``, never after libtpu's minutes of asking for a
cloud metadata server.
"""

from __future__ import annotations

from typing import Any

from ember.errors import BackendError
from ember.extend import (
    Backend,
    ClusterEnvironment,
    CollectiveRegistry,
    PlatformSpec,
    current_job,
    hookimpl,
)
from ember_plugin_tpu import chips, clusters, library, options

PLATFORM = "tpu"

# Above the CUDA plugin's 500: a TPU VM computes on its TPUs.
PRIORITY = 600

# Collectives XLA's TPU runtime implements itself (over the chips' interconnect).
XLA_COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "collective_permute")

# What a topology name looks like, for the error that refuses one libtpu does not know.
KNOWN_TOPOLOGY_FORMS = (
    "a TPU topology is named '<generation>:<chips along each axis>': 'v5e:2x2' (4 chips), "
    "'v5e:2x4', 'v6e:2x2', 'v6e:4x4' (2-D for v5e and v6e), 'v4:2x2x1', 'v5p:2x2x4' (3-D "
    "for v4 and v5p), 'v3:2x2'; the axes must be multiples of one host's chips (2x2 for "
    "v5e, 2x2x1 for v4) unless chips_per_host_bounds says otherwise ('v5e:1x1' with "
    "chips_per_host_bounds=(1, 1, 1) is one chip), and '_twisted' may follow a torus"
)


def make_backend() -> Backend:
    # Imported here, not at the top, so that loading the plugin never imports jaxlib.
    from ember_plugin_kit.pjrt import XlaRuntimeError, make_plugin_client  # noqa: PLC0415
    from ember_plugin_tpu.backend import TpuBackend  # noqa: PLC0415

    client_options = options.client_options()
    found = chips.find_chips()
    try:
        path = library.library_path()
    except library.MissingLibtpuError as exc:
        if found is None:
            raise BackendError(f"{_no_chips()}; {exc}") from None
        raise BackendError(str(exc)) from None
    if found is None:
        raise BackendError(_no_chips())
    library.prepare_environment(on_a_tpu_vm=True)
    try:
        # libtpu refuses the GPU plugins' node_id/num_nodes options: in a multi-host slice it
        # finds its place through the job's coordination client alone.
        client = make_plugin_client(
            PLATFORM, path, client_options, current_job(), job_options=False
        )
    except XlaRuntimeError as exc:
        raise BackendError(
            f"libtpu could not start on this machine's {found.count} TPU {found.generation} "
            f"chip(s) (client options {client_options}): {exc} (is another process using the "
            f"TPU? only one may)"
        ) from None
    return TpuBackend(client, chips=found, library_version=library.installed_version())


def make_topology(topology_name: str, **topology_options: Any) -> Backend:
    """The compile-only devices of a named TPU slice (``PlatformSpec.make_topology``): libtpu
    describes any slice without a TPU present."""
    from ember_plugin_kit.pjrt import XlaRuntimeError  # noqa: PLC0415 - imports jaxlib
    from ember_plugin_kit.pjrt.topology import compile_only_backend  # noqa: PLC0415

    try:
        path = library.library_path()
    except library.MissingLibtpuError as exc:
        raise BackendError(f"TPU topologies need libtpu: {exc}") from None
    library.prepare_environment(on_a_tpu_vm=chips.find_chips() is not None)
    try:
        return compile_only_backend(PLATFORM, path, topology_name, topology_options)
    except XlaRuntimeError as exc:
        message = str(exc)
        if "INVALID_ARGUMENT" in message:
            raise ValueError(
                f"unknown TPU topology {topology_name!r}: {KNOWN_TOPOLOGY_FORMS} (libtpu: "
                f"{message})"
            ) from None
        raise BackendError(f"libtpu could not describe topology {topology_name!r}: {exc}") from None


def _no_chips() -> str:
    return (
        f"no TPU on this machine: no Google TPU chip on the PCI bus ({chips.PCI_DEVICES}, "
        f"vendor {chips.GOOGLE_VENDOR_ID}); run on a Cloud TPU VM or a GKE TPU node. "
        f"Compiling for a TPU slice works here: ember.experimental.topologies."
        f"get_topology_desc('v5e:2x2', 'tpu')"
    )


@hookimpl
def ember_platforms() -> list[PlatformSpec]:
    return [
        PlatformSpec(
            name=PLATFORM,
            make_backend=make_backend,
            priority=PRIORITY,
            description="Google TPUs through libtpu's PJRT plugin (libtpu 0.0.42)",
            make_topology=make_topology,
        )
    ]


@hookimpl
def ember_register_collectives(registry: CollectiveRegistry) -> None:
    for name in XLA_COLLECTIVES:
        registry.register(PLATFORM, name, "xla")


@hookimpl
def ember_cluster_environments() -> list[ClusterEnvironment]:
    return clusters.environments()


@hookimpl
def ember_distributed_runtime() -> object:
    # Multi-host slices: XLA's coordination service, through which libtpu's hosts meet.
    from ember_plugin_kit.pjrt import XlaCoordination  # noqa: PLC0415 - imports jaxlib

    return XlaCoordination()
