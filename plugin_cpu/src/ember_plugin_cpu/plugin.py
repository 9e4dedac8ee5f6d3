"""Hook implementations of the CPU plugin.

Importing this module is cheap: jaxlib is imported only when the ``cpu`` backend is first
used (inside ``make_backend``), so a broken jaxlib shows up as a failed platform in
``python -m ember doctor`` rather than as an import error.
"""

from __future__ import annotations

import os
import re

from ember import config
from ember.errors import BackendError
from ember.extend import (
    Backend,
    CollectiveRegistry,
    Job,
    LoweringRegistry,
    PlatformSpec,
    collective_registry,
    current_job,
    define_config_option,
    hookimpl,
)
from ember_plugin_cpu import linalg

PLATFORM = "cpu"
OPTION = "cpu_device_count"

# Collectives XLA's CPU runtime implements itself within one process.
XLA_COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "collective_permute")

# JAX programs ask for several host devices through this XLA flag; ported ones still set it.
_XLA_DEVICE_COUNT_FLAG = re.compile(r"--xla_force_host_platform_device_count=(\S+)")

# The device count the backend started with: XLA splits the host once, when the client is made.
_started_with: int | None = None


def _refuse_change_after_start(value: object) -> None:
    if _started_with is None or value == _started_with:
        return
    raise BackendError(
        f"{OPTION}={value!r} cannot take effect: the CPU backend already started with "
        f"{_started_with} device(s), and XLA fixes the count when it starts. Set it before the "
        f"first computation (ember.config.update({OPTION!r}, {value!r}) at the top of the "
        f"program) or in the environment (EMBER_{OPTION.upper()}={value})"
    )


define_config_option(
    OPTION,
    1,
    help="How many devices the CPU backend splits the host into (read when it initialises; "
    "when unset, XLA_FLAGS=--xla_force_host_platform_device_count=N is honoured).",
    aliases=("num_cpu_devices",),  # JAX's name for it
    validate=_refuse_change_after_start,
)


TRANSPORT = "cpu_collectives"
define_config_option(
    TRANSPORT,
    "gloo",
    help="How the CPU backend's collectives travel between the processes of a multi-process "
    "job: a transport registered for platform 'cpu' through ember_register_collectives "
    "(this plugin registers 'gloo': TCP, rendezvous through the coordination service).",
)


LAPACK_OPTION = "cpu_lapack"
define_config_option(
    LAPACK_OPTION,
    True,
    help="Lower the linear algebra primitives (cholesky, lu, qr, eigh, svd, ...) on the CPU to "
    "LAPACK's routines (read when the plugin loads; off: ember's generic lowerings).",
)


def device_count() -> int:
    """ember's option when it was set, else the count in ``XLA_FLAGS``, else 1."""
    if config.is_set(OPTION):
        count = config.read(OPTION)
        source = OPTION
    else:
        found = _XLA_DEVICE_COUNT_FLAG.findall(os.environ.get("XLA_FLAGS", ""))
        if not found:
            return 1
        source = "XLA_FLAGS --xla_force_host_platform_device_count"
        try:
            count = int(found[-1])  # XLA takes the last occurrence of a flag
        except ValueError:
            count = found[-1]
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError(f"{source} must be a positive integer, not {count!r}")
    return count


def make_backend() -> Backend:
    # Imported here, not at the top, so that loading the plugin never imports jaxlib.
    from ember_plugin_kit.pjrt import (  # noqa: PLC0415
        PjrtBackend,
        make_cpu_client,
        register_lapack_handlers,
    )

    global _started_with
    count = device_count()
    # The handlers the LAPACK lowerings (linalg.py) call, before the first program compiles.
    register_lapack_handlers()
    job = current_job()
    if job is None:
        client = make_cpu_client(count)
    else:  # this process's devices of a multi-process job
        make_transport = collective_registry().transport(PLATFORM, config.read(TRANSPORT))
        client = make_cpu_client(
            count,
            coordination=job.coordination.raw,
            collectives=make_transport(job),
            process_id=job.process_id,
            num_processes=job.num_processes,
            topology_timeout_s=job.initialization_timeout,
        )
    backend = PjrtBackend(PLATFORM, client)
    _started_with = count
    return backend


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
def ember_register_lowerings(registry: LoweringRegistry) -> None:
    if config.read(LAPACK_OPTION):
        linalg.register(registry, PLATFORM)


@hookimpl
def ember_register_collectives(registry: CollectiveRegistry) -> None:
    for name in XLA_COLLECTIVES:
        registry.register(PLATFORM, name, "xla")
    registry.register_transport(PLATFORM, "gloo", _gloo)


def _gloo(job: Job) -> object:
    from ember_plugin_kit.pjrt import gloo_collectives  # noqa: PLC0415 - imports jaxlib

    return gloo_collectives(job.coordination.raw, job.host_address)


@hookimpl
def ember_distributed_runtime() -> object:
    from ember_plugin_kit.pjrt import XlaCoordination  # noqa: PLC0415 - imports jaxlib

    return XlaCoordination()
