"""``ember.experimental.multihost_utils``: moving data between the processes of a job, and
between host-local and global arrays (JAX's functions of the same names).

Everything here runs through ordinary compiled programs over a mesh of every device (so the
data travels on the platform's collectives: gloo on CPU, NCCL on GPU) or through the
coordination service's barriers; every wait has the job's deadlines.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ember._src import errors
from ember._src.execution import devices as device_functions
from ember._src.runtime import multiprocess
from ember._src.runtime.array import Array
from ember._src.runtime.mesh import Mesh
from ember._src.runtime.sharding import NamedSharding, PartitionSpec
from ember._src.transforms.jit import jit
from ember._src.tree.util import tree_flatten, tree_map, tree_unflatten

PROCESSES, LOCAL = "processes", "local_devices"


def process_mesh() -> Mesh:
    """Every device of the job as a (processes, local_devices) grid."""
    by_process: dict[int, list[Any]] = {}
    for device in device_functions.devices():
        by_process.setdefault(device.process_index, []).append(device)
    counts = {p: len(d) for p, d in by_process.items()}
    if len(set(counts.values())) != 1:
        raise errors.DistributedError(
            f"the processes hold different numbers of devices ({counts}); multihost_utils "
            f"needs the same number in each"
        )
    grid = np.empty((len(by_process), next(iter(counts.values()))), dtype=object)
    for row, process in enumerate(sorted(by_process)):
        for col, device in enumerate(by_process[process]):
            grid[row, col] = device
    return Mesh(grid, (PROCESSES, LOCAL))


def _stacked(value: np.ndarray, mesh: Mesh) -> Array:
    """A global array of shape (processes, *value.shape) whose row p is process p's value."""
    sharding = NamedSharding(mesh, PartitionSpec(PROCESSES))
    return device_functions.make_array_from_callback(
        (mesh.shape[PROCESSES], *value.shape), sharding, lambda index: value[None]
    )


def _identity(v: Any) -> Any:
    return v


# One jitted all-gather per mesh: a new jit object per call would trace and compile anew.
_gather_to_all: dict[Mesh, Any] = {}


def _replicated(x: Array, mesh: Mesh) -> np.ndarray:
    """The whole of a global array, on every process (an all-gather over the job, on the
    array's own mesh when it has one)."""
    mesh = getattr(x.sharding, "mesh", mesh)
    gather = _gather_to_all.get(mesh)
    if gather is None:
        gather = jit(_identity, out_shardings=NamedSharding(mesh, PartitionSpec()))
        _gather_to_all[mesh] = gather
    return np.asarray(gather(x))


def process_allgather(in_tree: Any, tiled: bool = False) -> Any:
    """Every process's value of each leaf, on every process, as NumPy arrays.

    A leaf that is a global array (spread over several processes) comes back whole. Any other
    leaf is this process's value: the result stacks the processes' values on a new leading
    axis (``tiled=True``: concatenates them along the first axis)."""
    mesh = process_mesh()

    def gather(leaf: Any) -> np.ndarray:
        if isinstance(leaf, Array) and not leaf.is_fully_addressable:
            return _replicated(leaf, mesh)
        value = np.asarray(leaf)
        stacked = _replicated(_stacked(value, mesh), mesh)
        if not tiled:
            return stacked
        if value.ndim == 0:
            raise ValueError(
                f"process_allgather(tiled=True) concatenates along the first axis; a scalar "
                f"has none (use tiled=False){errors.where()}"
            )
        return stacked.reshape((-1, *value.shape[1:]))

    return tree_map(gather, in_tree)


def broadcast_one_to_all(in_tree: Any, is_source: bool | None = None) -> Any:
    """Process 0's value of each leaf (or that of the process passing ``is_source=True``), on
    every process, as NumPy arrays."""
    if is_source is None:
        is_source = multiprocess.this_process() == 0
    mesh = process_mesh()

    def broadcast(leaf: Any) -> np.ndarray:
        value = np.asarray(leaf)
        contribution = value if is_source else np.zeros_like(value)
        # Booleans are summed as integers (one source, so the sum is its value).
        wide = contribution.astype(np.int32) if value.dtype == bool else contribution
        total = jit(lambda v: v.sum(axis=0), out_shardings=NamedSharding(mesh, PartitionSpec()))(
            _stacked(wide, mesh)
        )
        return np.asarray(total).astype(value.dtype)

    return tree_map(broadcast, in_tree)


_syncs = 0


def sync_global_devices(name: str) -> None:
    """Wait until every process reaches this call with the same ``name`` (a barrier with the
    job's collective timeout); a process that reaches it with another name is an error."""
    global _syncs
    job = multiprocess.current_job()
    if job is None:
        return
    _syncs += 1
    prefix = f"ember/sync/{_syncs}/"
    job.coordination.key_value_set(f"{prefix}{job.process_id}", json.dumps(name))
    job.barrier(f"{prefix}barrier")
    names = {
        int(k.rsplit("/", 1)[-1]): json.loads(v)
        for k, v in job.coordination.key_value_dir_get(prefix)
        if not k.endswith("barrier")
    }
    differ = {p: n for p, n in names.items() if n != name}
    if differ:
        listed = ", ".join(f"process {p} at {n!r}" for p, n in sorted(differ.items()))
        raise errors.DistributedError(
            f"sync_global_devices({name!r}) on process {job.process_id} met {listed}: the "
            f"processes are not running the same program{errors.where()}"
        )


# --------------------------------------------------------------------------------------------
# Host-local <-> global arrays


def local_mesh(mesh: Mesh) -> Mesh:
    """The block of ``mesh`` that this process's devices form, with the same axis names."""
    here = multiprocess.this_process()
    mine = np.vectorize(lambda d: d.process_index == here, otypes=[bool])(mesh.devices)
    if not mine.any():
        raise ValueError(f"{mesh!r} has no device of process {here}{errors.where()}")
    corners = np.argwhere(mine)
    block = tuple(slice(lo, hi + 1) for lo, hi in zip(corners.min(0), corners.max(0)))
    if not mine[block].all():
        raise ValueError(
            f"the devices of process {here} do not form a block of {mesh!r}, so they have "
            f"no local mesh{errors.where()}"
        )
    return Mesh(mesh.devices[block], mesh.axis_names)


def _spec_tree(pspecs: Any, tree: Any) -> list[PartitionSpec]:
    leaves, treedef = tree_flatten(tree)
    if isinstance(pspecs, PartitionSpec):
        return [pspecs] * len(leaves)
    specs, spec_def = tree_flatten(pspecs, is_leaf=lambda s: isinstance(s, PartitionSpec))
    if spec_def != treedef:
        raise ValueError(
            f"pspecs must be one PartitionSpec or a tree of them shaped like the inputs"
            f"{errors.where()}"
        )
    return specs


def host_local_array_to_global_array(local_inputs: Any, global_mesh: Mesh, pspecs: Any) -> Any:
    """Each leaf, this process's block laid out over its local devices as ``pspec`` says, as
    the global array over ``global_mesh`` that the processes' blocks form together (the
    shards are reused, not copied, when they already sit on the right devices)."""
    leaves, treedef = tree_flatten(local_inputs)
    specs = _spec_tree(pspecs, local_inputs)
    out = []
    for leaf, spec in zip(leaves, specs):
        sharding = NamedSharding(global_mesh, spec)
        if isinstance(leaf, Array) and _shards_fit(leaf, sharding):
            pieces = {s.device: s.data for s in leaf.addressable_shards}
            shape = _global_shape(leaf.shape, global_mesh, spec)
            out.append(
                device_functions.make_array_from_single_device_arrays(
                    shape, sharding, [pieces[d] for d in sharding.addressable_devices]
                )
            )
        else:
            out.append(device_functions.make_array_from_process_local_data(sharding, leaf))
    return tree_unflatten(treedef, out)


def global_array_to_host_local_array(global_inputs: Any, global_mesh: Mesh, pspecs: Any) -> Any:
    """Each leaf, a global array over ``global_mesh`` laid out as ``pspec`` says, as this
    process's block over its local devices (same shards, no copy)."""
    leaves, treedef = tree_flatten(global_inputs)
    specs = _spec_tree(pspecs, global_inputs)
    mesh = local_mesh(global_mesh)
    out = []
    for leaf, spec in zip(leaves, specs):
        if not isinstance(leaf, Array):
            raise TypeError(
                f"global_array_to_host_local_array needs ember Arrays, got "
                f"{type(leaf).__name__}{errors.where()}"
            )
        sharding = NamedSharding(global_mesh, spec)
        if leaf.sharding != sharding:
            leaf = device_functions.device_put(leaf, sharding)
        local = NamedSharding(mesh, spec)
        shape = _local_shape(leaf.shape, global_mesh, mesh, spec)
        pieces = [s.data for s in leaf.addressable_shards]
        out.append(device_functions.make_array_from_single_device_arrays(shape, local, pieces))
    return tree_unflatten(treedef, out)


def _global_shape(local_shape: tuple, global_mesh: Mesh, spec: PartitionSpec) -> tuple:
    mesh = local_mesh(global_mesh)
    return tuple(
        size * _split(global_mesh, spec, d) // _split(mesh, spec, d)
        for d, size in enumerate(local_shape)
    )


def _local_shape(global_shape: tuple, global_mesh: Mesh, mesh: Mesh, spec) -> tuple:
    return tuple(
        size * _split(mesh, spec, d) // _split(global_mesh, spec, d)
        for d, size in enumerate(global_shape)
    )


def _split(mesh: Mesh, spec: PartitionSpec, dim: int) -> int:
    return int(np.prod([mesh.axis_size(a) for a in spec.axes_of(dim)], dtype=np.int64))


def _shards_fit(leaf: Array, sharding: NamedSharding) -> bool:
    """Whether ``leaf``'s shards are already the global array's pieces on this process."""
    try:
        shards = leaf.addressable_shards
    except Exception:
        return False
    devices = {s.device for s in shards}
    if devices != set(sharding.addressable_devices) or len(shards) != len(devices):
        return False
    local = NamedSharding(local_mesh(sharding.mesh), sharding.spec)
    return leaf.sharding == local
