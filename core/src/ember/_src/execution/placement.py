"""Placing data: host values onto devices, Arrays moved, replicated or resharded.

Every Array has a sharding; a single-device one has its device's interned
``SingleDeviceSharding``. ``device_put_numpy`` and ``to_device`` put values on one device,
``put`` lays a value out by any sharding, and ``place_arguments`` decides and performs the
layout of a call's arguments over a mesh (as asked, else as they are, else replicated).
Host scalars that eager operations meet again and again are put on a device once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import get_aval
from ember._src.execution.compiled import Program, compile_program
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.plugin import manager
from ember._src.runtime.array import Array
from ember._src.runtime.backend import Device
from ember._src.runtime.mesh import Mesh, current_mesh
from ember._src.runtime.sharding import (
    NamedSharding,
    PartitionSpec,
    Sharding,
    SingleDeviceSharding,
)
from ember._src.tree.util import flatten_up_to, tree_flatten

# --------------------------------------------------------------------------------------------
# One device


def default_device() -> Device:
    return manager.default_backend().local_devices()[0]


def this_process() -> int:
    return manager.default_backend().process_index()


def default_sharding() -> SingleDeviceSharding:
    return SingleDeviceSharding(default_device())


def resolve_device(device: Any, what: str) -> Any:
    """``device`` (None, a Device, or a sharding) as a Device, a Sharding or None; any other
    value (a name such as "gpu:0", an int) is a ValueError naming it and what is accepted."""
    if device is None or isinstance(device, Device):
        return device
    inner = getattr(device, "device", None)
    if isinstance(inner, Device):
        return inner
    if isinstance(device, Sharding):  # a layout over several devices: placed as such
        return device
    raise ValueError(
        f"{what} must be None, an ember Device (e.g. ember.devices()[0]) or a "
        f"Sharding; got {device!r} of type {type(device).__name__}{errors.where()}"
    )


def device_put_numpy(value: Any, device: Device | None = None, *, weak_type: bool = False) -> Array:
    """Copy host data (NumPy or a Python scalar) to ``device`` as an ember.Array."""
    aval = get_aval(value)
    if weak_type and not aval.weak_type:
        aval = aval.update(weak_type=True)
    if aval.dtype == dtypes.float0:
        # float0 (the tangent type of integers) carries no data and no device has a buffer
        # type for it: it stays a NumPy array, as in JAX.
        return np.zeros(aval.shape, dtypes.float0)
    device = device or default_device()
    host = np.asarray(value, dtype=aval.dtype)
    buffer = device.backend.buffer_from_numpy(host, aval, device)
    return Array(aval, buffer, SingleDeviceSharding(device))


def to_device(value: Any, device: Device) -> Array:
    """``value`` as an Array on ``device`` (moving or copying it if needed)."""
    target = SingleDeviceSharding(device)
    if isinstance(value, Array):
        source = value._sharding
        if source is target:
            return value
        value._check_alive()
        if type(source) is SingleDeviceSharding and source.backend is device.backend:
            buffer = device.backend.copy_to_device(value._buffer, value.aval, device)
            return Array(value.aval, buffer, target)
        return device_put_numpy(value._value, device, weak_type=value.aval.weak_type)
    if isinstance(value, core.Tracer):
        raise TypeError("internal error: a tracer reached device placement")
    return device_put_numpy(value, device)


def common_device(args: Sequence[Any], what: str) -> Device | None:
    """The device every committed Array in ``args`` lives on (error if they disagree), or None
    if one of them spans several devices (the call then runs over a mesh)."""
    sharding = common_sharding(args, what)
    return None if sharding is None else sharding.device


def common_sharding(args: Sequence[Any], what: str) -> SingleDeviceSharding | None:
    """``common_device``'s answer as that device's sharding."""
    sharding = None
    for x in args:
        if type(x) is Array:
            if type(x._sharding) is not SingleDeviceSharding:
                return None
            if sharding is None:
                sharding = x._sharding
            elif x._sharding is not sharding:
                raise ValueError(
                    f"{what} got arrays committed to different devices: {sharding.device!r} and "
                    f"{x._sharding.device!r}; move them with ember.device_put first"
                    f"{errors.where()}"
                )
    return sharding if sharding is not None else default_sharding()


def place_on_device(args: Sequence[Any], target: SingleDeviceSharding | Device) -> list[Any]:
    """Every argument on one device (float0 values, which carry no data, as None)."""
    if not isinstance(target, SingleDeviceSharding):
        target = SingleDeviceSharding(target)
    device = target.device
    placed = []
    for x in args:
        if type(x) is not Array or x._sharding is not target:
            if get_aval(x).dtype == dtypes.float0:
                placed.append(None)
                continue
            x = scalar_on_device(x, device) if is_host_scalar(x) else to_device(x, device)
        placed.append(x)
    return placed


# Host scalars that eager operations meet again and again (`x > 0`, `x * 0.5`) are put on
# the device once. Device buffers are immutable and these never reach a donating call, so
# sharing them is safe; the table is bounded.
_scalar_cache: dict[tuple, Array] = {}
_SCALAR_CACHE_SIZE = 512


def is_host_scalar(x: Any) -> bool:
    return isinstance(x, (bool, int, float, np.generic)) or (
        isinstance(x, np.ndarray) and x.ndim == 0
    )


def scalar_on_device(x: Any, device: Device) -> Array:
    aval = get_aval(x)
    value = np.asarray(x, aval.dtype)
    key = (device, aval.dtype, aval.weak_type, value.tobytes())
    cached = _scalar_cache.get(key)
    if cached is None or cached.is_deleted():
        cached = device_put_numpy(value, device, weak_type=aval.weak_type)
        if len(_scalar_cache) >= _SCALAR_CACHE_SIZE:
            _scalar_cache.clear()
        _scalar_cache[key] = cached
    return cached


# --------------------------------------------------------------------------------------------
# Any layout


def is_multi_device(x: Any) -> bool:
    return isinstance(x, Array) and type(x._sharding) is not SingleDeviceSharding


def put(value: Any, sharding: Sharding, what: str = "device_put") -> Array:
    """``value`` (host data or an Array) as an Array laid out by ``sharding``."""
    if isinstance(sharding, SingleDeviceSharding):
        return to_device(value, sharding.device)
    if sharding.num_devices == 1:
        return to_device(value, sharding.device_list[0])
    if type(value) is Array and value._sharding == sharding:
        return value
    aval = get_aval(value)
    if isinstance(value, Array):
        source = value._sharding
        if type(source) is not SingleDeviceSharding and source.is_equivalent_to(
            sharding, aval.ndim
        ):
            return value if source == sharding else Array(aval, value._buffer, sharding)
        if (
            isinstance(source, NamedSharding)
            and isinstance(sharding, NamedSharding)
            and source.mesh.same_devices(sharding.mesh)
        ):
            return _reshard(value, sharding, what)
        host = value._value
    else:
        host = np.asarray(value, aval.dtype)
    try:
        indices = sharding.addressable_devices_indices_map(aval.shape)
    except ValueError as err:
        raise ValueError(f"{what}: cannot lay out an array {aval.str_short()}: {err}") from None
    shards = [np.asarray(host[indices[d]], order="C") for d in sharding.addressable_devices]
    buffer = sharding.backend.buffer_from_shards(shards, aval, sharding)
    out = Array(aval, buffer, sharding)
    frozen = np.array(host, copy=True)
    frozen.setflags(write=False)
    out._host = frozen  # the value is known: reading it back needs no transfer
    return out


_reshards: dict[tuple, Program] = {}


def _reshard(value: Array, sharding: NamedSharding, what: str) -> Array:
    """Move ``value`` to another layout on its mesh with an identity program whose result
    layout differs from its argument's: the partitioner emits the exchange, device to
    device."""
    aval = value.aval
    try:
        sharding.shard_shape(aval.shape)
    except ValueError as err:
        raise ValueError(f"{what}: cannot lay out an array {aval.str_short()}: {err}") from None
    source = value._sharding
    key = (aval, source.layout_key(aval.ndim), sharding.layout_key(aval.ndim))
    program = _reshards.get(key)
    if program is None:
        identity = trace_to_jaxpr(lambda x: [x], [aval], name="reshard")
        program = compile_program(identity, "reshard", sharding.mesh, [source], [sharding])
        if len(_reshards) > 256:
            _reshards.clear()
        _reshards[key] = program
    return program.call_buffers([value._buffer])[0]


def mesh_of(shardings: Sequence[Any], args: Sequence[Any], what: str) -> Mesh | None:
    """The one mesh that the given shardings and the multi-device arguments use."""
    found: Mesh | None = None
    owner = ""
    candidates = [(s, f"sharding {s!r}") for s in shardings if s is not None]
    candidates += [
        (x._sharding, f"argument #{i} ({x.aval.str_short()})")
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
        elif not found.same_devices(mesh):
            raise ValueError(
                f"{what}: {label} lives on {mesh!r} but {owner} on {found!r}; arrays of one "
                f"call must share one mesh (move them with ember.device_put){errors.where()}"
            )
    return found if found is not None else current_mesh()


def place_arguments(
    args: Sequence[Any], shardings: Sequence[Any], mesh: Mesh, what: str
) -> tuple[list[Any], list[Sharding]]:
    """Every argument laid out on ``mesh``: as asked, else as it is, else replicated (float0
    values, which carry no data, as None)."""
    layouts = argument_layouts(args, shardings, mesh, what)
    placed = [
        None if get_aval(x).dtype == dtypes.float0 else put(x, wanted, f"{what}, argument #{i}")
        for i, (x, wanted) in enumerate(zip(args, layouts))
    ]
    return placed, layouts


def argument_layouts(
    args: Sequence[Any], shardings: Sequence[Any], mesh: Mesh, what: str
) -> list[Sharding]:
    """Where each argument goes on ``mesh``: as asked, else as it is, else replicated."""
    layouts = []
    replicated = NamedSharding(mesh, PartitionSpec())
    for i, (x, wanted) in enumerate(zip(args, shardings)):
        if wanted is None:
            if is_multi_device(x):
                wanted = x._sharding
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
    device = x._sharding.device
    if device not in mesh.device_set:
        raise ValueError(
            f"{what}: argument #{index} ({x.aval.str_short()}) is committed to "
            f"{device!r}, which is not in {mesh!r}{errors.where()}"
        )
    if device is not default_device():
        raise ValueError(
            f"{what}: argument #{index} ({x.aval.str_short()}) is committed to the single "
            f"device {device!r} while the call runs on the {mesh.size} devices of {mesh!r}; "
            f"put it on the mesh first, e.g. ember.device_put(x, NamedSharding(mesh, P())) "
            f"to replicate it{errors.where()}"
        )


def layout_of(placed: Sequence[Any], where: Device | Mesh) -> Any:
    """The cache key of the placed arguments' layouts: their one sharding when they share
    it (the common case: one object, compared by identity), else the tuple of them; with no
    arrays among them, where the call runs."""
    first = None
    for x in placed:
        if x is not None:
            first = x._sharding
            break
    if first is None:
        return SingleDeviceSharding(where) if isinstance(where, Device) else where
    for x in placed:
        if x is not None and x._sharding is not first:
            return tuple(None if y is None else y._sharding for y in placed)
    return first


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
                f"{what}: a bare PartitionSpec {sharding} needs a mesh in scope "
                f"(ember.set_mesh(mesh), or `with ember.sharding.use_mesh(mesh):`); or pass "
                f"NamedSharding(mesh, spec){errors.where()}"
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
        subtrees = flatten_up_to(treedef, tree, 1)
    except ValueError as err:
        raise ValueError(f"{what} does not match the structure of the values: {err}") from None
    out: list[Sharding | None] = [None] * count
    for sharding, subtree in zip(leaves, subtrees):
        resolved = resolve(sharding, what)
        for index in tree_flatten(subtree)[0]:
            out[index] = resolved
    return out


def clear_caches() -> None:
    _scalar_cache.clear()
    _reshards.clear()
