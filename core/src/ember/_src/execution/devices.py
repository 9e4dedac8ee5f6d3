"""The devices users see, and putting data on them (``ember.devices``, ``ember.device_put``,
``ember.make_array_from_callback``, ...)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._src import core, dtypes, errors
from ember._src.core import ShapedArray
from ember._src.execution import placement
from ember._src.plugin import manager
from ember._src.runtime import mesh as mesh_module
from ember._src.runtime.array import Array
from ember._src.runtime.backend import Device
from ember._src.runtime.sharding import PartitionSpec, Sharding, SingleDeviceSharding
from ember._src.tree.util import flatten_up_to, tree_flatten, tree_map, tree_unflatten


def devices(backend: str | None = None) -> list[Device]:
    """All devices of ``backend`` (a platform name; default: the default backend)."""
    return manager.backend(backend).devices()


def local_devices(backend: str | None = None) -> list[Device]:
    return manager.backend(backend).local_devices()


def device_count(backend: str | None = None) -> int:
    return len(devices(backend))


def local_device_count(backend: str | None = None) -> int:
    return len(local_devices(backend))


def default_backend() -> str:
    """The platform name of the default backend, e.g. ``"cpu"``."""
    return manager.default_backend().platform


def process_index(backend: str | None = None) -> int:
    """This process's index in a multi-process job (0 when it runs alone)."""
    return manager.backend(backend).process_index()


def process_count(backend: str | None = None) -> int:
    """How many processes the job has (1 when this process runs alone)."""
    return len({d.process_index for d in devices(backend)})


def make_mesh(
    axis_shapes: Sequence[int], axis_names: Sequence[str], axis_types: Any = None, *,
    devices: Sequence[Device] | None = None,
) -> Any:  # fmt: skip
    """A ``Mesh`` of ``axis_shapes`` named ``axis_names`` over ``devices`` (default: every
    device of the default backend), its axes ``Explicit`` unless ``axis_types`` says
    otherwise (as ``jax.make_mesh``)."""
    return mesh_module.make_mesh(
        axis_shapes,
        axis_names,
        devices=devices if devices is not None else list(devices_fn()),
        axis_types=axis_types,
    )


def devices_fn() -> list[Device]:
    return manager.default_backend().devices()


def device_put(x: Any, device: Any = None) -> Any:
    """Copy ``x`` (a pytree of arrays) to ``device`` (default: the default device): a Device,
    a Sharding (which lays each array out over its devices), a PartitionSpec over the mesh in
    scope, or a pytree prefix of them."""
    if isinstance(device, PartitionSpec):
        device = placement.resolve(device, "device_put")
    if isinstance(device, (Device, Sharding)) or device is None:
        return tree_map(lambda leaf: _put_leaf(leaf, device), x)
    placements = (Sharding, PartitionSpec)
    leaves, treedef = tree_flatten(device, is_leaf=lambda s: s is None or isinstance(s, placements))
    # A leaf that is not a placement (a string like "gpu:0", an int) would otherwise be
    # treated as a one-leaf prefix tree and recursed into forever.
    for leaf in leaves:
        if not (leaf is None or isinstance(leaf, (Device, *placements))):
            raise ValueError(
                f"device_put accepts None, an ember Device (e.g. ember.devices()[0]), a Sharding, "
                f"a PartitionSpec (over the mesh in scope), or a pytree prefix of these; got "
                f"{leaf!r} of type {type(leaf).__name__}{errors.where()}"
            )
    subtrees = flatten_up_to(treedef, x, 1)
    placed = [device_put(sub, target) for sub, target in zip(subtrees, leaves)]
    return tree_unflatten(treedef, placed)


def _resolve_device(device: Any) -> Device:
    if device is None:
        return placement.default_device()
    return placement.resolve_device(device, "device_put's device")


def _put_leaf(leaf: Any, device: Any) -> Array:
    if isinstance(leaf, core.Tracer):
        return leaf
    _check_leaf(leaf)
    if isinstance(device, Sharding):
        return placement.put(leaf, device)
    return placement.to_device(leaf, _resolve_device(device))


def _check_leaf(leaf: Any) -> None:
    """A clear error for a leaf that is no array (what jit says of its arguments)."""
    try:
        core.get_aval(leaf)
    except errors.EmberTypeError as err:
        if isinstance(leaf, (np.ndarray, np.generic)):  # NumPy data of a non-numeric dtype
            raise errors.EmberTypeError(f"device_put argument: {err}") from None
        raise errors.EmberTypeError(
            f"device_put argument is a {type(leaf).__name__}, which is not a valid ember type: "
            f"arguments must be arrays, scalars or pytrees of them (mark it static to pass "
            f"other values){errors.where()}"
        ) from None


def make_array_from_callback(
    shape: Sequence[int], sharding: Sharding, data_callback: Callable[[Any], Any]
) -> Array:
    """An array of global ``shape`` laid out by ``sharding``, each of this process's devices
    getting ``data_callback(index)`` (``index``: a tuple of slices into the global array). In a
    multi-process job every process calls it for its own devices."""
    shape = tuple(int(d) for d in shape)
    indices = sharding.addressable_devices_indices_map(shape)
    pieces = []
    for device in sharding.addressable_devices:
        piece = np.asarray(data_callback(indices[device]))
        want = tuple(len(range(*s.indices(n))) for s, n in zip(indices[device], shape))
        if piece.shape != want:
            raise ValueError(
                f"make_array_from_callback: the callback returned shape {piece.shape} for "
                f"index {indices[device]} of {device!r}; that piece has shape {want}"
                f"{errors.where()}"
            )
        pieces.append(piece)
    if not pieces:
        raise ValueError(
            f"make_array_from_callback: {sharding} has no device in this process "
            f"(process {placement.this_process()}){errors.where()}"
        )
    dtype = dtypes.canonicalize(np.result_type(*pieces))
    aval = ShapedArray(shape, dtype)
    pieces = [p.astype(dtype, copy=False) for p in pieces]
    if isinstance(sharding, SingleDeviceSharding) or sharding.num_devices == 1:
        return placement.device_put_numpy(pieces[0], sharding.device_list[0])
    buffer = sharding.backend.buffer_from_shards(pieces, aval, sharding)
    return Array(aval, buffer, sharding)


def make_array_from_process_local_data(
    sharding: Sharding, local_data: Any, global_shape: Sequence[int] | None = None
) -> Array:
    """A global array laid out by ``sharding`` from the data this process holds: the block of
    the global array that this process's devices cover (for data-parallel input: this
    process's slice of the batch). ``global_shape`` defaults to the local shape scaled by how
    many processes split each dimension."""
    local = np.asarray(local_data)
    # Which blocks each device holds, on a probe shape that every split divides.
    probe = (sharding.num_devices,) * local.ndim
    every = sharding.devices_indices_map(probe)
    mine = sharding.addressable_devices
    if not mine:
        raise ValueError(
            f"make_array_from_process_local_data: {sharding} has no device in this process "
            f"(process {placement.this_process()}){errors.where()}"
        )
    if global_shape is None:
        global_shape = []
        for d, size in enumerate(local.shape):
            blocks = {every[dev][d].indices(probe[d])[:2] for dev in every}
            local_blocks = {every[dev][d].indices(probe[d])[:2] for dev in mine}
            global_shape.append(size * len(blocks) // len(local_blocks))
    global_shape = tuple(int(n) for n in global_shape)
    if len(global_shape) != local.ndim:
        raise ValueError(
            f"make_array_from_process_local_data: local data of shape {local.shape} cannot "
            f"make a global array of shape {global_shape} (the ranks differ){errors.where()}"
        )
    indices = sharding.devices_indices_map(global_shape)
    starts, stops = [], []
    for d, size in enumerate(global_shape):
        spans = [indices[dev][d].indices(size)[:2] for dev in mine]
        starts.append(min(a for a, _ in spans))
        stops.append(max(b for _, b in spans))
    want = tuple(b - a for a, b in zip(starts, stops))
    if want != local.shape:
        raise ValueError(
            f"make_array_from_process_local_data: process {placement.this_process()} holds "
            f"local data of shape {local.shape}, but its devices cover a block of shape {want} "
            f"of the global shape {global_shape} laid out as {sharding}{errors.where()}"
        )

    def local_piece(index: tuple) -> np.ndarray:
        return local[
            tuple(
                slice(s.indices(n)[0] - a, s.indices(n)[1] - a)
                for s, n, a in zip(index, global_shape, starts)
            )
        ]

    return make_array_from_callback(global_shape, sharding, local_piece)


def make_array_from_single_device_arrays(
    shape: Sequence[int], sharding: Sharding, arrays: Sequence[Array]
) -> Array:
    """An array of global ``shape`` laid out by ``sharding`` from one Array per device of this
    process (in any order; each must already be that device's piece)."""
    shape = tuple(int(d) for d in shape)
    by_device = {}
    for a in arrays:
        if not isinstance(a, Array) or type(a._sharding) is not SingleDeviceSharding:
            raise TypeError(
                f"make_array_from_single_device_arrays needs single-device ember Arrays, got "
                f"{type(a).__name__}{errors.where()}"
            )
        by_device[a._sharding.device] = a
    local = sharding.addressable_devices
    missing = [d for d in local if d not in by_device]
    if missing or len(by_device) != len(arrays) or len(arrays) != len(local):
        raise ValueError(
            f"make_array_from_single_device_arrays: need exactly one array on each of "
            f"{local}; missing {missing}{errors.where()}"
        )
    piece_shape = sharding.shard_shape(shape)
    ordered = [by_device[d] for d in local]
    dtype = ordered[0].dtype
    for d, a in zip(local, ordered):
        if a.shape != piece_shape or a.dtype != dtype:
            raise ValueError(
                f"make_array_from_single_device_arrays: the array on {d!r} is "
                f"{a.aval.str_short()}; pieces of {shape} laid out as {sharding} are "
                f"{dtype}{list(piece_shape)}{errors.where()}"
            )
    aval = ShapedArray(shape, dtype)
    if sharding.num_devices == 1:
        return ordered[0]
    buffer = sharding.backend.assemble_buffers([a._buffer for a in ordered], aval, sharding)
    return Array(aval, buffer, sharding)


def device_get(x: Any) -> Any:
    """Copy a pytree of arrays to the host, as NumPy arrays."""
    return tree_map(lambda leaf: np.asarray(leaf) if isinstance(leaf, Array) else leaf, x)


def block_until_ready(x: Any) -> Any:
    """Wait until every array in the pytree ``x`` is computed; return ``x``."""
    for leaf in tree_flatten(x)[0]:
        if isinstance(leaf, Array):
            leaf.block_until_ready()
    return x
