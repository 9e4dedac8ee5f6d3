"""Running programs over several devices: placing arrays by sharding, compiling SPMD programs.

An SPMD computation runs one program on every device of a mesh. Its arguments are laid out by
``NamedSharding``s of that mesh; the StableHLO module declares the mesh (``sdy.mesh``) and
annotates arguments and fixed results with Shardy shardings, and XLA's partitioner (Shardy)
splits the program and inserts the communication. Results come back laid out as the
partitioner decided, described again as ``NamedSharding``s of the mesh.

Shardy rather than GSPMD: XLA is retiring GSPMD's propagation (it warns on every compile),
Shardy's annotations name mesh axes exactly as ``PartitionSpec``s do (no device-id strings to
build), and ``shard_map`` is one ``sdy.manual_computation`` op.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import errors
from ember._src.config import config
from ember._src.core import ShapedArray, get_aval
from ember._src.execution.dispatch import (
    CompiledComputation,
    default_device,
    mesh_in_jaxpr,
    set_multi_device_dispatcher,
    single_equation,
    to_device,
)
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.ir import ClosedJaxpr
from ember._src.lowering.module import lower_module
from ember._src.plugin import manager
from ember._src.runtime.array import Array
from ember._src.runtime.backend import Computation
from ember._src.sharding.mesh import Mesh, current_mesh
from ember._src.sharding.shardings import (
    NamedSharding,
    PartitionSpec,
    Sharding,
    SingleDeviceSharding,
    named_sharding_from_hlo,
)
from ember._src.tree.util import _flatten_up_to, tree_flatten

# --------------------------------------------------------------------------------------------
# Placement


def is_multi_device(x: Any) -> bool:
    return isinstance(x, Array) and isinstance(x._device, Sharding)


def put(value: Any, sharding: Sharding, what: str = "device_put") -> Array:
    """``value`` (host data or an Array) as an Array laid out by ``sharding``."""
    if isinstance(sharding, SingleDeviceSharding):
        return to_device(value, sharding.device)
    if sharding.num_devices == 1:
        return to_device(value, sharding.device_list[0])
    if type(value) is Array and value._device == sharding:
        return value
    aval = get_aval(value)
    if isinstance(value, Array):
        if isinstance(value._device, Sharding) and value._device.is_equivalent_to(
            sharding, aval.ndim
        ):
            return value if value._device == sharding else Array(aval, value._buffer, sharding)
        if (
            isinstance(value._device, NamedSharding)
            and isinstance(sharding, NamedSharding)
            and value._device.mesh == sharding.mesh
        ):
            return _reshard(value, sharding, what)
        host = value._value
    else:
        host = np.asarray(value, aval.dtype)
    try:
        indices = sharding.addressable_devices_indices_map(aval.shape)
    except ValueError as err:
        raise ValueError(f"{what}: cannot lay out an array {aval.str_short()}: {err}") from None
    shards = [np.asarray(host[indices[d]], order="C") for d in sharding.device_list]
    buffer = sharding.backend.buffer_from_shards(shards, aval, sharding)
    out = Array(aval, buffer, sharding)
    frozen = np.array(host, copy=True)
    frozen.setflags(write=False)
    out._host = frozen  # the value is known: reading it back needs no transfer
    return out


_reshards: dict[tuple, SpmdComputation] = {}


def _reshard(value: Array, sharding: NamedSharding, what: str) -> Array:
    """Move ``value`` to another layout on its mesh with an identity program whose result
    layout differs from its argument's: the partitioner emits the exchange, device to
    device."""
    aval = value.aval
    try:
        sharding.shard_shape(aval.shape)
    except ValueError as err:
        raise ValueError(f"{what}: cannot lay out an array {aval.str_short()}: {err}") from None
    source = value._device
    key = (aval, source.layout_key(aval.ndim), sharding.layout_key(aval.ndim))
    program = _reshards.get(key)
    if program is None:
        identity = trace_to_jaxpr(lambda x: [x], [aval], name="reshard")
        program = compile_spmd(identity, sharding.mesh, "reshard", [source], [sharding])
        if len(_reshards) > 256:
            _reshards.clear()
        _reshards[key] = program
    return program.call([value])[0]


def mesh_of(shardings: Sequence[Any], args: Sequence[Any], what: str) -> Mesh | None:
    """The one mesh that the given shardings and the multi-device arguments use."""
    found: Mesh | None = None
    owner = ""
    candidates = [(s, f"sharding {s!r}") for s in shardings if s is not None]
    candidates += [
        (x._device, f"argument #{i} ({x.aval.str_short()})")
        for i, x in enumerate(args)
        if is_multi_device(x)
    ]
    for sharding, label in candidates:
        mesh = getattr(sharding, "mesh", None)
        if mesh is None:
            raise ValueError(
                f"{what}: {label} is not a NamedSharding; pass in_shardings with "
                f"NamedShardings or device_put it first{errors.where()}"
            )
        if found is None:
            found, owner = mesh, label
        elif mesh != found:
            raise ValueError(
                f"{what}: {label} lives on {mesh!r} but {owner} on {found!r}; arrays of one "
                f"call must share one mesh (move them with ember.device_put){errors.where()}"
            )
    return found if found is not None else current_mesh()


def place_arguments(
    args: Sequence[Any], shardings: Sequence[Any], mesh: Mesh, what: str
) -> tuple[list[Array], list[NamedSharding]]:
    """Every argument laid out on ``mesh``: as asked, else as it is, else replicated."""
    layouts = argument_layouts(args, shardings, mesh, what)
    placed = [
        put(x, wanted, f"{what}, argument #{i}") for i, (x, wanted) in enumerate(zip(args, layouts))
    ]
    return placed, layouts


def argument_layouts(
    args: Sequence[Any], shardings: Sequence[Any], mesh: Mesh, what: str
) -> list[NamedSharding]:
    """Where each argument goes on ``mesh``: as asked, else as it is, else replicated."""
    layouts = []
    replicated = NamedSharding(mesh, PartitionSpec())
    for i, (x, wanted) in enumerate(zip(args, shardings)):
        if wanted is None:
            if is_multi_device(x):
                wanted = x._device
            else:
                if isinstance(x, Array):
                    _check_joins_mesh(x, i, mesh, what)
                wanted = replicated
        layouts.append(wanted)
    return layouts


def _check_joins_mesh(x: Array, index: int, mesh: Mesh, what: str) -> None:
    """A single-device array is replicated onto the mesh only from the default device, where
    arrays nobody placed are made (JAX's uncommitted arrays); one put on another device on
    purpose does not silently join a computation over other devices (JAX refuses it too)."""
    if x._device not in mesh.device_set:
        raise ValueError(
            f"{what}: argument #{index} ({x.aval.str_short()}) is committed to "
            f"{x._device!r}, which is not in {mesh!r}{errors.where()}"
        )
    if x._device is not default_device():
        raise ValueError(
            f"{what}: argument #{index} ({x.aval.str_short()}) is committed to the single "
            f"device {x._device!r} while the call runs on the {mesh.size} devices of {mesh!r}; "
            f"put it on the mesh first, e.g. ember.device_put(x, NamedSharding(mesh, P())) "
            f"to replicate it{errors.where()}"
        )


# --------------------------------------------------------------------------------------------
# Compiling and calling


def spmd_computation(
    closed: ClosedJaxpr,
    mesh: Mesh,
    name: str,
    in_shardings: Sequence[NamedSharding],
    out_shardings: Sequence[Sharding | None],
    donated_invars: Sequence[bool] | None = None,
) -> Computation:
    """The computation (not yet compiled) of an SPMD program over ``mesh``."""
    for sharding, aval in zip(out_shardings, closed.out_avals):
        if sharding is not None:
            sharding.shard_shape(aval.shape)  # a bad out_sharding fails here, by name
    return Computation(
        name,
        closed,
        devices=mesh.device_list,
        donated_invars=donated_invars,
        lower=_lower,
        in_shardings=in_shardings,
        out_shardings=out_shardings,
        mesh=mesh,
    )


def _lower(computation: Computation, platform: str) -> str:
    mesh = computation.mesh
    args = [
        f"sdy.sharding = {s.sdy_sharding(a.ndim)}"
        for s, a in zip(computation.in_shardings, computation.in_avals)
    ]
    results = [
        None if s is None else f"sdy.sharding = {s.sdy_sharding(a.ndim)}"
        for s, a in zip(computation.out_shardings, computation.out_avals)
    ]
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
    )


class SpmdComputation:
    """A compiled SPMD program and the layouts of its results."""

    __slots__ = ("compiled", "out_shardings", "mesh")

    def __init__(self, compiled: CompiledComputation, out_shardings: list[Sharding], mesh: Mesh):
        self.compiled = compiled
        self.out_shardings = out_shardings
        self.mesh = mesh

    def call(self, arrays: Sequence[Array]) -> list[Array]:
        outs = self.compiled.executable.execute([a._buffer for a in arrays])
        return [
            Array(aval, buf, sharding)
            for aval, buf, sharding in zip(self.compiled.out_avals, outs, self.out_shardings)
        ]


def compile_spmd(
    closed: ClosedJaxpr,
    mesh: Mesh,
    name: str,
    in_shardings: Sequence[NamedSharding],
    out_shardings: Sequence[Sharding | None],
    donated_invars: Sequence[bool] | None = None,
) -> SpmdComputation:
    computation = spmd_computation(closed, mesh, name, in_shardings, out_shardings, donated_invars)
    if config.log_compiles:
        print(f"ember: compiling {name} for {mesh!r}")
    backend = mesh.device_list[0].backend
    executable = backend.compile(computation)
    chosen = executable.output_shardings()
    layouts: list[Sharding] = []
    for i, aval in enumerate(closed.out_avals):
        if out_shardings[i] is not None:
            layouts.append(out_shardings[i])
        elif chosen is not None:
            layouts.append(named_sharding_from_hlo(mesh, chosen[i], aval.ndim))
        else:  # a backend without a partitioner computes whole values
            layouts.append(NamedSharding(mesh, PartitionSpec()))
    return SpmdComputation(CompiledComputation(computation, executable), layouts, mesh)


def layouts_key(avals: Sequence[ShapedArray], layouts: Sequence[Sharding]) -> tuple:
    return tuple(s.layout_key(a.ndim) for a, s in zip(avals, layouts))


# --------------------------------------------------------------------------------------------
# Eager primitives on multi-device arrays

_eager_cache: dict[tuple, SpmdComputation] = {}


def apply_primitive(primitive: Any, args: Sequence[Any], params: dict) -> Any:
    """Run one primitive over the mesh its multi-device operands live on."""
    mesh = mesh_of((), args, primitive.name)
    if mesh is None:  # single-device operands, but a mesh inside (a jit call of a shard_map)
        avals = [get_aval(x) for x in args]
        mesh = mesh_in_jaxpr(single_equation(primitive, avals, params).jaxpr)
    placed, layouts = place_arguments(args, [None] * len(args), mesh, primitive.name)
    avals = [x.aval for x in placed]
    key = (primitive, tuple(params.items()), tuple(avals), layouts_key(avals, layouts))
    compiled = _eager_cache.get(key)
    if compiled is None:
        closed = single_equation(primitive, avals, params)
        compiled = compile_spmd(
            closed, mesh, primitive.name, layouts, [None] * len(closed.out_avals)
        )
        _eager_cache[key] = compiled
    outs = compiled.call(placed)
    return outs if primitive.multiple_results else outs[0]


set_multi_device_dispatcher(apply_primitive)


# --------------------------------------------------------------------------------------------
# Shardings given as pytree prefixes (jit's in_shardings/out_shardings)


def _is_sharding_leaf(x: Any) -> bool:
    return x is None or isinstance(x, (Sharding, PartitionSpec))


def resolve(sharding: Any, what: str) -> Sharding | None:
    """A Sharding, or a PartitionSpec resolved against the mesh of ``with mesh:``."""
    if sharding is None or isinstance(sharding, Sharding):
        return sharding
    if isinstance(sharding, PartitionSpec):
        mesh = current_mesh()
        if mesh is None:
            raise ValueError(
                f"{what}: a bare PartitionSpec {sharding} needs an enclosing `with mesh:`; or "
                f"pass NamedSharding(mesh, spec){errors.where()}"
            )
        return NamedSharding(mesh, sharding)
    raise TypeError(f"{what}: expected a Sharding, PartitionSpec or None, got {sharding!r}")


def broadcast_prefix(prefix: Any, tree: Any, count: int, what: str) -> list[Sharding | None]:
    """One sharding per leaf of ``tree`` (whose leaves are 0..count-1), from a pytree prefix
    of it whose leaves are shardings (or None)."""
    if _is_sharding_leaf(prefix):
        return [resolve(prefix, what)] * count
    leaves, treedef = tree_flatten(prefix, is_leaf=_is_sharding_leaf)
    try:
        subtrees = _flatten_up_to(treedef, tree, 1)
    except ValueError as err:
        raise ValueError(f"{what} does not match the structure of the values: {err}") from None
    out: list[Sharding | None] = [None] * count
    for sharding, subtree in zip(leaves, subtrees):
        resolved = resolve(sharding, what)
        for index in tree_flatten(subtree)[0]:
            out[index] = resolved
    return out
