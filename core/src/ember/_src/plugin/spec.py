"""The descriptions plugins hand back from their hooks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ember._src.runtime.backend import Backend

# Bumped when the plugin contract changes incompatibly. A plugin declares the version it was
# written against in each PlatformSpec; a mismatch skips the plugin with an actionable message.
PLUGIN_API_VERSION = 1


@dataclass(frozen=True)
class PlatformSpec:
    """One platform a plugin provides."""

    name: str
    make_backend: Callable[[], Backend]
    aliases: tuple[str, ...] = ()
    priority: int = 0
    api_version: int = PLUGIN_API_VERSION
    description: str = ""
    # Compiling for hardware this machine lacks (``ember.experimental.topologies``):
    # ``make_topology(topology_name, **options)`` returns a backend whose ``devices()`` are the
    # compile-only devices of that named topology (e.g. a TPU slice, ``"v5e:2x2"``). It must
    # not need the hardware; an unknown name raises ValueError listing the known forms.
    make_topology: Callable[..., Backend] | None = None


@dataclass(frozen=True)
class ClusterEnvironment:
    """A multi-process launch environment (SLURM, Open MPI, ...) ``ember.distributed`` can detect.

    Returned by a plugin's ``ember_cluster_environments()`` hook. Every value is a zero-argument
    callable, called only when the environment is chosen, so building the object must be cheap
    and must not import heavy or side-effecting packages (MPI initialises on import).

    Fields:
        name: what users pass as ``cluster_detection_method`` to choose this environment; unique
            across plugins (ember's own: ``environment_variables``, ``ompi``, ``slurm``,
            ``mpi4py``, ``kubernetes``).
        is_present: whether this process runs under the environment. Called on every
            automatic detection, so it must be cheap and must not raise or block (read
            environment variables; do not contact servers).
        coordinator_address: ``"host:port"`` of process 0's coordination service, the same on
            every process. Pick a port from the job's identity (JAX uses
            ``job_id % 4096 + 61440``) so that concurrent jobs on one host do not collide.
        num_processes: how many processes the job has.
        process_id: this process's index, ``0 <= process_id < num_processes``.
        priority: automatic detection tries the present environments in decreasing priority
            (ties keep the plugins' order). ember's own: ``environment_variables`` 1000,
            ``ompi`` 300, ``slurm`` 200, ``kubernetes`` 100; a third-party environment
            usually stays below them.
        local_device_ids: the ids of this process's local devices it should use (for one
            accelerator per process: ``[local_rank]``); ``None``, or a callable returning
            ``None``, leaves every local device visible.
        opt_in: tried only when named by ``cluster_detection_method``, never by automatic
            detection (for environments whose ``is_present`` is only a guess, such as "mpi4py
            is installed").
        description: what the environment looks for (e.g. ``"SLURM_JOB_ID, ..."``), shown
            when a user names it but it is not present.

    The callables run in this order: ``coordinator_address``, ``num_processes``,
    ``process_id``, ``local_device_ids``, on every process, so an environment may use
    collective operations (an MPI broadcast) inside them. A missing or malformed value should
    raise ``ValueError`` naming where it came from.
    """

    name: str
    is_present: Callable[[], bool]
    coordinator_address: Callable[[], str]
    num_processes: Callable[[], int]
    process_id: Callable[[], int]
    priority: int = 0
    local_device_ids: Callable[[], list[int] | None] | None = None
    opt_in: bool = False
    description: str = ""
