"""The one execution path: a jaxpr lowered and compiled for where it runs, called with Arrays.

Eager primitives, ``jit``, ``pmap`` and ``shard_map`` all end here. ``build_computation``
turns a closed jaxpr plus *where it runs* into a backend ``Computation``; ``compile_program``
compiles it into a ``Program``, whose ``call_buffers`` runs it and wraps the results as Arrays.
Each concern is settled once, here:

- where: one ``Device`` (lowered without Shardy annotations, ``num_partitions=1``: the
  StableHLO of a one-device program is plain), or a ``Mesh`` (arguments and fixed results
  annotated with Shardy shardings, the module declaring the mesh; XLA's partitioner splits the
  program and inserts the communication);
- donation: the donated flags go into the computation (``jax.buffer_donor`` in the module);
- float0 (the tangent type of integers, which carries no data and has no device buffer type):
  such inputs are dropped from the program and such outputs rebuilt on the host as NumPy zeros;
- output shardings: given by the caller, else read back from the executable (what the
  partitioner chose), else the one device's sharding.

Shardy rather than GSPMD: XLA is retiring GSPMD's propagation (it warns on every compile),
Shardy's annotations name mesh axes exactly as ``PartitionSpec``s do, and ``shard_map`` is
one ``sdy.manual_computation`` op.

The call step works on *the shards this process owns*: an Array's buffer is the backend's
handle on its addressable shards (one device's buffer, or a multi-device buffer over this
process's devices of the layout), and ``Program.call_buffers`` hands those to the executable
and wraps what comes back with the global abstract value and the output sharding. An array
whose layout spans several processes takes exactly this path: its buffer holds only the local
shards, the executable (compiled for every device of the mesh) runs this process's part, and
the results are again global Arrays holding their local shards. Nothing here assumes that
every shard is local, so multi-process execution needs no second path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.config import config
from ember._src.execution import host_callbacks
from ember._src.execution.compilation_cache import compile_cached
from ember._src.interpreters.partial_eval import dce_jaxpr
from ember._src.ir import ClosedJaxpr, Jaxpr, jaxprs_in
from ember._src.lowering.module import lower_module
from ember._src.plugin import manager
from ember._src.runtime import multiprocess
from ember._src.runtime.array import Array
from ember._src.runtime.backend import TOKEN_AVAL, Computation, Device, Executable
from ember._src.runtime.mesh import AxisType, Mesh, current_mesh
from ember._src.runtime.sharding import (
    NamedSharding,
    PartitionSpec,
    Sharding,
    SingleDeviceSharding,
    named_sharding_from_hlo,
)

# Every XLA CPU executable holds several memory mappings until it is freed, and a process may
# hold only so many (65530 on Linux by default): a long-lived process that keeps every program
# it compiled eventually crashes inside the compiler. Caches of programs are bounded (the
# oldest entry dropped first, on the compile path, so cache hits pay nothing).


def remember(cache: dict, key: Any, value: Any, limit: int) -> None:
    """``cache[key] = value``, first dropping the oldest entry when ``cache`` holds ``limit``."""
    if len(cache) >= limit:
        del cache[next(iter(cache))]
    cache[key] = value


# --------------------------------------------------------------------------------------------
# Programs


class Program:
    """A backend executable plus what is needed to call it with the buffers of Arrays."""

    __slots__ = (
        "computation",
        "executable",
        "out_avals",
        "out_shardings",
        "spans_processes",
        "backend",
        "has_effects",
        "token_effects",
    )

    def __init__(
        self, computation: Computation, executable: Executable, out_shardings: list[Sharding]
    ):
        self.computation = computation
        self.executable = executable
        self.out_avals = computation.out_avals
        self.out_shardings = out_shardings
        mesh = computation.mesh
        self.spans_processes = mesh is not None and mesh.is_multi_process
        self.backend = computation.devices[0].backend
        self.has_effects = bool(computation.host_callbacks or computation.effect_tokens)
        # The ordered effects whose tokens the executable takes and returns first, in order.
        self.token_effects = (
            computation.jaxpr.jaxpr.ordered_effects if computation.effect_tokens else []
        )

    def call_buffers(self, buffers: list[Any]) -> list[Any]:
        """Run on one buffer per input (this process's shards); the results as Arrays."""
        if self.has_effects:
            return self._call_with_effects(buffers)
        return self._call(buffers)

    def _call_with_effects(self, buffers: list[Any]) -> list[Any]:
        """Run a program that calls back into Python: the tokens of its ordered effects are
        chained from the previous run's, and a callback's failure is raised as itself."""
        computation = self.computation
        device = computation.devices[0]
        effects = self.token_effects
        tokens = [_runtime_tokens.get((e, device)) for e in effects]
        for i, token in enumerate(tokens):
            if token is None:
                tokens[i] = self.backend.buffer_from_numpy(
                    np.zeros(0, np.bool_), TOKEN_AVAL, device
                )
        try:
            outs = self.executable.execute([*tokens, *buffers])
        except errors.ExecutionError as err:
            host_callbacks.raise_failure(err)
            raise
        _runtime_tokens.update(zip(((e, device) for e in effects), outs))
        outs = outs[len(effects) :]
        _effectful_runs[device] = (self.backend, outs)
        return [Array(a, b, s) for a, b, s in zip(self.out_avals, outs, self.out_shardings)]

    def _call(self, buffers: list[Any]) -> list[Any]:
        job = multiprocess.current_job()
        if job is None:
            outs = self.executable.execute(buffers)
        else:
            # In a multi-process job a launch can block on the other processes (its inputs or
            # the devices' queues waiting on a collective): bounded by the job's deadlines.
            if self.spans_processes:  # counted, so a timed-out wait can name who is behind
                job.launched += 1
            last = job.last_launch
            if self.backend.buffers_ready(buffers) and (
                last is None or last[0].buffers_ready(last[1])
            ):
                # Nothing it needs is pending, and nothing launched before is still queued
                # on the devices: the launch cannot block. Run it here, without a hand-off.
                outs = self.executable.execute(buffers)
            else:
                run = self.executable.execute
                outs = job.wait(lambda: run(buffers), f"running {self.computation.name}")
            job.last_launch = (self.backend, outs)
        return [Array(a, b, s) for a, b, s in zip(self.out_avals, outs, self.out_shardings)]


# The latest token of each (ordered effect, device): the next program with that effect on that
# device takes it, so its effects happen after the previous program's.
_runtime_tokens: dict[tuple[Any, Device], Any] = {}
# The results of the latest program with effects run on each device (effects_barrier waits
# for them: the unordered effects of a program are done when its results are).
_effectful_runs: dict[Device, tuple[Any, list[Any]]] = {}


def effects_barrier() -> None:
    """Wait until every effect of every program launched so far has happened."""
    waits: dict[int, tuple[Any, list[Any]]] = {}
    for (_, device), token in list(_runtime_tokens.items()):
        waits.setdefault(id(device.backend), (device.backend, []))[1].append(token)
    for backend, outs in list(_effectful_runs.values()):
        waits.setdefault(id(backend), (backend, []))[1].extend(outs)
    for backend, buffers in waits.values():
        for buffer in buffers:
            try:
                backend.block_until_ready([buffer])
            except errors.ExecutionError:  # donated since, or failed: its program has run
                pass


class Float0Program(Program):
    """A program some of whose inputs or outputs are float0: the compiled executable takes
    and returns only the others; float0 inputs are skipped (their buffers are None) and float0
    outputs rebuilt on the host as NumPy zeros (what JAX returns for them)."""

    __slots__ = ("keep_in", "all_out_avals", "float0_outs")

    def __init__(
        self,
        computation: Computation,
        executable: Executable,
        out_shardings: list[Sharding],
        keep_in: list[int],
        outvars: list[Any],
    ):
        super().__init__(computation, executable, out_shardings)
        self.keep_in = keep_in
        self.all_out_avals = [v.aval for v in outvars]
        self.float0_outs = [is_float0(v.aval) for v in outvars]

    def call_buffers(self, buffers: list[Any]) -> list[Any]:
        outs = iter(super().call_buffers([buffers[i] for i in self.keep_in]))
        return [
            np.zeros(aval.shape, aval.dtype) if host else next(outs)
            for aval, host in zip(self.all_out_avals, self.float0_outs)
        ]


def is_float0(aval: Any) -> bool:
    return getattr(aval, "dtype", None) == dtypes.float0


def without_float0(closed: ClosedJaxpr, name: str, donated) -> tuple | None:
    """(jaxpr, donated flags, kept input positions) of ``closed`` without its float0 inputs
    and outputs, or None if it has none."""
    jaxpr = closed.jaxpr
    in_f0 = [is_float0(v.aval) for v in jaxpr.invars]
    out_f0 = [is_float0(v.aval) for v in jaxpr.outvars]
    if not any(in_f0) and not any(out_f0):
        return None
    body = dce_jaxpr(jaxpr, [not f for f in out_f0])
    dropped = {id(v) for v, f in zip(jaxpr.invars, in_f0) if f}
    for eqn in body.eqns:
        if any(id(v) in dropped for v in eqn.invars):
            raise errors.EmberTypeError(
                f"{name}: {eqn.primitive.name} got a float0 operand; float0 values (tangents "
                f"of integers) carry no data and can only be passed through{errors.where()}"
            )
    keep_in = [i for i, f in enumerate(in_f0) if not f]
    stripped = Jaxpr(
        body.constvars,
        [jaxpr.invars[i] for i in keep_in],
        body.outvars,
        body.eqns,
        jaxpr.debug_info,
    )
    kept_donated = None if donated is None else [donated[i] for i in keep_in]
    return ClosedJaxpr(stripped, closed.consts), kept_donated, keep_in


# --------------------------------------------------------------------------------------------
# Where a program runs, and how it is lowered there


def mesh_in_jaxpr(jaxpr: Jaxpr) -> Mesh | None:
    """The mesh a shard_map or sharding constraint anywhere in ``jaxpr`` names (as a ``Mesh``
    or a ``NamedSharding`` parameter), else the mesh in scope when a value is typed over its
    Explicit axes (``zeros(..., out_sharding=...)``): such a program must run over that mesh."""
    named = _named_mesh_in_jaxpr(jaxpr)
    if named is not None:
        return named
    in_scope = current_mesh()
    if in_scope is not None:
        for eqn in jaxpr.eqns:
            for var in eqn.outvars:
                typed = var.aval.typed_sharding
                if typed is not None and typed.mesh.shape_tuple == in_scope.shape_tuple:
                    return in_scope
    return None


def _named_mesh_in_jaxpr(jaxpr: Jaxpr) -> Mesh | None:
    for eqn in jaxpr.eqns:
        for value in eqn.params.values():
            if isinstance(value, Mesh):
                return value
            if isinstance(value, NamedSharding) and isinstance(value.mesh, Mesh):
                return value.mesh  # (a typed out_sharding, over an abstract mesh, names none)
        for inner in jaxprs_in(eqn.params.values()):
            found = _named_mesh_in_jaxpr(inner)
            if found is not None:
                return found
    return None


def _lower_on_one_device(computation: Computation, platform: str) -> str:
    computation.host_callbacks.clear()
    return lower_module(
        computation.jaxpr,
        platform=platform,
        name=computation.name,
        donated_invars=computation.donated_invars,
        num_partitions=1,
        host_callbacks=computation.host_callbacks,
        effect_tokens=computation.effect_tokens > 0,
    )


def _lower_on_mesh(computation: Computation, platform: str) -> str:
    mesh = computation.mesh
    args = [
        f"sdy.sharding = {s.sdy_sharding(a.ndim)}"
        for s, a in zip(computation.in_shardings, computation.in_avals)
    ]
    results = [
        None if s is None else f"sdy.sharding = {s.sdy_sharding(a.ndim)}"
        for s, a in zip(computation.out_shardings, computation.out_avals)
    ]
    computation.host_callbacks.clear()
    return lower_module(
        computation.jaxpr,
        platform=platform,
        name=computation.name,
        donated_invars=computation.donated_invars,
        num_partitions=mesh.size,
        arg_attrs=args,
        result_attrs=results,
        mesh=mesh,
        collectives=manager.collective_registry(),
        host_callbacks=computation.host_callbacks,
    )


class Prepared:
    """A computation ready to compile: float0 values stripped, plus what calling it needs."""

    __slots__ = ("computation", "where", "out_shardings", "keep_in", "outvars")

    def __init__(
        self,
        computation: Computation,
        where: Device | Mesh,
        out_shardings: list[Sharding | None],
        keep_in: list[int] | None,
        outvars: list[Any],
    ):
        self.computation = computation
        self.where = where
        self.out_shardings = out_shardings
        self.keep_in = keep_in  # None when no input or output is float0
        self.outvars = outvars


def prepare(
    closed: ClosedJaxpr,
    name: str,
    where: Device | Mesh,
    in_shardings: Sequence[Sharding | None] | None = None,
    out_shardings: Sequence[Sharding | None] | None = None,
    donated_invars: Sequence[bool] | None = None,
) -> Prepared:
    """``closed`` as a computation for ``where`` (one device, or a mesh whose arguments are
    laid out as ``in_shardings`` say, results as ``out_shardings`` say where not None)."""
    n_in, n_out = len(closed.jaxpr.invars), len(closed.jaxpr.outvars)
    in_shardings = list(in_shardings or [None] * n_in)
    out_shardings = list(out_shardings or [None] * n_out)
    outvars = closed.jaxpr.outvars
    keep_in = None
    stripped = without_float0(closed, name, donated_invars)
    if stripped is not None:
        closed, donated_invars, keep_in = stripped
        in_shardings = [in_shardings[i] for i in keep_in]
        out_shardings = [s for s, v in zip(out_shardings, outvars) if not is_float0(v.aval)]
    if isinstance(where, Mesh):
        # A result typed over Explicit axes comes out exactly as typed; over a mesh whose axes
        # are all Explicit, a result typed whole comes out whole.
        all_explicit = all(t is AxisType.Explicit for t in where.axis_types)
        for i, aval in enumerate(closed.out_avals):
            if out_shardings[i] is None and aval.typed_sharding is not None:
                out_shardings[i] = _as_typed(where, aval.typed_sharding)
            elif out_shardings[i] is None and all_explicit:
                out_shardings[i] = NamedSharding(where, PartitionSpec())
            elif out_shardings[i] is not None:
                out_shardings[i].shard_shape(aval.shape)  # a bad out_sharding fails here
        computation = Computation(
            name,
            closed,
            devices=where.device_list,
            donated_invars=donated_invars,
            lower=_lower_on_mesh,
            in_shardings=in_shardings,
            out_shardings=out_shardings,
            mesh=where,
        )
        if closed.jaxpr.ordered_effects and where.size > 1:
            raise errors.EmberError(
                f"{name} has ordered effects ({_effect_names(closed)}) and runs over "
                f"{where.size} devices; ordered effects run on one device. Use ordered=False, "
                f"or run this part on one device{errors.where()}"
            )
    else:
        computation = Computation(
            name, closed, devices=[where], donated_invars=donated_invars, lower=_lower_on_one_device
        )
        if closed.jaxpr.effects and where.backend.compiles_stablehlo:
            computation.effect_tokens = len(closed.jaxpr.ordered_effects)
    return Prepared(computation, where, out_shardings, keep_in, outvars)


def _effect_names(closed: ClosedJaxpr) -> str:
    return ", ".join(e.name for e in closed.jaxpr.ordered_effects)


def _as_typed(mesh: Mesh, typed: NamedSharding) -> NamedSharding:
    """The layout of a result typed ``typed``, over ``mesh`` seen with the axis types of the
    type (inside ``auto_axes`` the program's mesh and a result's type may differ in them)."""
    if mesh.abstract_mesh != typed.mesh:
        mesh = mesh.update_axis_types(dict(zip(mesh.axis_names, typed.mesh.axis_types)))
    return NamedSharding(mesh, typed.spec)


def compile_prepared(prepared: Prepared) -> Program:
    computation, where = prepared.computation, prepared.where
    if config.log_compiles:
        print(f"ember: compiling {computation.name} for {where!r}")
    executable = compile_cached(computation)
    if isinstance(where, Mesh):
        chosen = executable.output_shardings()
        out_shardings: list[Sharding] = []
        for i, aval in enumerate(computation.out_avals):
            given = prepared.out_shardings[i]
            if given is not None:
                out_shardings.append(given)
            elif chosen is not None:
                out_shardings.append(named_sharding_from_hlo(where, chosen[i], aval.ndim))
            else:  # a backend without a partitioner computes whole values
                out_shardings.append(NamedSharding(where, PartitionSpec()))
    else:
        out_shardings = [SingleDeviceSharding(where)] * len(computation.out_avals)
    if prepared.keep_in is None:
        return Program(computation, executable, out_shardings)
    return Float0Program(computation, executable, out_shardings, prepared.keep_in, prepared.outvars)


def compile_program(
    closed: ClosedJaxpr,
    name: str,
    where: Device | Mesh,
    in_shardings: Sequence[Sharding | None] | None = None,
    out_shardings: Sequence[Sharding | None] | None = None,
    donated_invars: Sequence[bool] | None = None,
) -> Program:
    """Lower and compile ``closed`` for ``where`` (see ``prepare``)."""
    return compile_prepared(
        prepare(closed, name, where, in_shardings, out_shardings, donated_invars)
    )
