"""The plugin contract: every hook a backend plugin may implement.

A plugin is a module (or object) with functions marked ``@ember.extend.hookimpl`` whose names
match the specs below, advertised through the ``ember_plugins`` entry-point group::

    [project.entry-points.ember_plugins]
    foo = "ember_plugin_foo.plugin"

ember imports a plugin only when a backend is first needed, never at ``import ember``. A
hook implementation with a name that matches no spec here is an error (caught by pluggy's
``check_pending``), so misspellings fail loudly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from ember._src.plugin.registries import CollectiveRegistry, LoweringRegistry
    from ember._src.plugin.spec import ClusterEnvironment, PlatformSpec

PROJECT_NAME = "ember"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def ember_platforms() -> list[PlatformSpec]:
    """Describe the platforms this plugin provides.

    Called once per plugin, when ember first needs a backend. Return a list of
    :class:`ember.extend.PlatformSpec`: the platform's name and aliases, its priority (the
    highest-priority platform that initialises becomes the default), the plugin API version it
    was written against, and ``make_backend``: a zero-argument factory that creates the
    :class:`ember.extend.Backend`. Device discovery belongs in the factory, which runs lazily
    on first use; this hook itself must be cheap and must not touch hardware.

    Not ``firstresult``: every plugin's platforms are collected.
    """


@hookspec
def ember_register_lowerings(registry: LoweringRegistry) -> None:
    """Register platform-specific lowering overrides and fused kernels.

    Called once per plugin, before the plugin's first computation is lowered. Use
    ``registry.register(primitive, rule, platform="name")``; a rule registered for a platform
    replaces the generic StableHLO rule on that platform only.
    ``registry.register_kernel_compiler(compiler, platform="name")`` compiles Pallas kernels
    natively there: ``compiler(ctx, call, *operands) -> list[str]`` emits a ``pallas_call``
    (``call``: an ``ember.extend.PallasCall``) into the module, unless the call asks for
    ``interpret=True``.
    ``registry.register_named_kernel(name, kernel, platform="name", fallback=None)`` registers
    a fused kernel that ``ember.extend.call_named_kernel(name, *args, result_shape_dtypes=...,
    **static_params)`` runs inside compiled programs on that platform, through XLA's buffer
    callback: ``kernel(ctx, outputs, *inputs, **static_params)`` gets the program's own
    buffers, writes ``outputs`` in place and launches its work on ``ctx.stream`` (a GPU's
    execution stream; None on CPU). ``fallback(*inputs, **static_params)``, written with
    ember ops, serves the platforms without such a kernel.
    """


@hookspec
def ember_register_collectives(registry: CollectiveRegistry) -> None:
    """Declare which collectives the plugin's platforms implement, and how.

    Called once per plugin, before the first collective is lowered for its platforms. Use
    ``registry.register(platform, collective_name, implementation)`` for each of
    ``all_reduce``, ``all_gather``, ``reduce_scatter``, ``all_to_all`` and
    ``collective_permute`` the platform runs, where the implementation is ``"xla"`` (XLA's
    own StableHLO op) or an object of the plugin's whose ``lower(ctx, *operands, collective,
    device_groups, **params)`` emits the collective into the module (e.g. a custom call into
    the plugin's transport); ``device_groups`` is a (groups, members) array of device
    positions. A platform that declares some collectives refuses the others, by name.
    """


@hookspec(firstresult=True)
def ember_distributed_runtime() -> object | None:
    """The coordination engine of multi-process jobs (XLA's distributed runtime).

    Called by ``ember.distributed.initialize()``, before any backend starts. Return an object
    with ``start_service(bind_address, num_processes, *, heartbeat_timeout,
    shutdown_timeout)`` (the service process 0 starts; its ``shutdown(wait=True)`` stops it,
    ``wait=False`` without waiting) and
    ``claim(address, process_id, num_processes, *, timeout)`` (checks this process's place
    before it registers: a handle to ``close()`` on leaving; ``ValueError`` with the reason
    when refused, ``TimeoutError`` when the coordinator does not answer), and
    ``client(address, process_id, *, init_timeout, heartbeat_timeout, shutdown_timeout)`` (a
    client with ``connect()``, ``key_value_set``, ``blocking_key_value_get``,
    ``key_value_dir_get``, ``wait_at_barrier`` and ``shutdown``; see
    ``ember._src.runtime.multiprocess.Coordination``), or None. ``ember_plugin_kit.pjrt``'s
    ``XlaCoordination`` is jaxlib's; PJRT plugins return it. Backends created afterwards read
    the job from ``ember.extend.current_job()``.

    ``firstresult``: the first plugin that returns one provides it.
    """


@hookspec
def ember_cluster_environments() -> list[ClusterEnvironment]:
    """Multi-process launch environments this plugin can detect (a scheduler, an MPI, a cloud).

    Return a list of :class:`ember.extend.ClusterEnvironment`: a ``name`` users can pass as
    ``cluster_detection_method``, an ``is_present()`` check, and zero-argument callables giving
    the coordinator's ``"host:port"``, the number of processes, this process's id and
    (optionally) the local device ids this process should use. The hook is called by
    ``ember.distributed.initialize()`` when the job is not fully described by its arguments; it
    must be cheap: build the objects, read nothing yet. ``is_present`` is called on every
    automatic detection and must not block; the value callables run only for the chosen
    environment, in the order address, count, id, local devices, on every process (so they may
    be collective, such as an MPI broadcast).

    Not ``firstresult``: every plugin's environments are collected. Without a
    ``cluster_detection_method`` the present environment of highest ``priority`` wins (ember's
    own: ``environment_variables`` 1000, ``ompi`` 300, ``slurm`` 200, ``kubernetes`` 100,
    ``mpi4py`` opt-in); ``opt_in=True`` environments are used only when named. An exception
    from this hook is raised to the user as ``ember.errors.PluginError`` naming the plugin.
    """
