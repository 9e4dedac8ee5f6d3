"""Shardings: how an array's data is laid out over devices.

Every ``ember.Array`` carries a sharding; an array on one device has a
``SingleDeviceSharding``. Shardings compare and hash by value so that caches keyed on them
(jit's executable cache) hit whenever the layout is the same; single-device shardings are
interned, so for them value is identity.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import errors
from ember._src.runtime import multiprocess
from ember._src.runtime.backend import Device
from ember._src.runtime.mesh import get_abstract_mesh


class Sharding:
    """Base class of ember's shardings."""

    @property
    def device_set(self) -> set[Device]:
        return set(self.device_list)

    @property
    def device_list(self) -> list[Device]:
        """The devices in the order shard positions refer to."""
        raise NotImplementedError

    @property
    def num_devices(self) -> int:
        return len(self.device_list)

    @property
    def backend(self) -> Any:
        return self.device_list[0].backend

    def hlo_sharding(self, ndim: int) -> str:
        """XLA's sharding string; device ids are positions in ``device_list``."""
        raise NotImplementedError

    def layout_key(self, ndim: int) -> tuple:
        """Equal for two shardings that place an array of rank ``ndim`` identically."""
        return (tuple(self.device_list), self.hlo_sharding(ndim))

    def is_equivalent_to(self, other: Sharding, ndim: int) -> bool:
        return self.layout_key(ndim) == other.layout_key(ndim)

    @property
    def is_fully_replicated(self) -> bool:
        raise NotImplementedError

    @property
    def addressable_devices(self) -> list[Device]:
        """The devices of this process, in ``device_list`` order (all of them unless the
        sharding spans several processes of a multi-process job)."""
        return multiprocess.addressable(self.device_list)

    @property
    def is_fully_addressable(self) -> bool:
        return len(self.addressable_devices) == self.num_devices

    def shard_shape(self, global_shape: tuple[int, ...]) -> tuple[int, ...]:
        raise NotImplementedError

    def devices_indices_map(self, global_shape: tuple[int, ...]) -> dict[Device, Any]:
        """Each device's piece of an array of ``global_shape``, as a tuple of slices."""
        raise NotImplementedError

    def addressable_devices_indices_map(self, global_shape: tuple[int, ...]) -> dict[Device, Any]:
        """``devices_indices_map`` for this process's devices only."""
        every = self.devices_indices_map(global_shape)
        return {d: every[d] for d in self.addressable_devices}


class SingleDeviceSharding(Sharding):
    """All of the array on one device.

    Interned: ``SingleDeviceSharding(device)`` is the same object every time (one per device
    and memory kind), so equality is identity and the runtime's hot paths (eager dispatch,
    jit's fast path) compare and hash these by identity, as cheaply as the device itself.
    """

    __slots__ = ("_device", "_memory_kind")
    _interned: dict[tuple, SingleDeviceSharding] = {}

    def __new__(cls, device: Device, *, memory_kind: str | None = None) -> SingleDeviceSharding:
        key = (device, memory_kind)
        sharding = cls._interned.get(key)
        if sharding is None:
            sharding = object.__new__(cls)
            sharding._device = device
            sharding._memory_kind = memory_kind
            sharding = cls._interned.setdefault(key, sharding)
        return sharding

    def __reduce__(self) -> Any:
        return (_single_device_sharding, (self._device, self._memory_kind))

    @property
    def device(self) -> Device:
        return self._device

    @property
    def memory_kind(self) -> str | None:
        return self._memory_kind

    @property
    def device_list(self) -> list[Device]:
        return [self._device]

    @property
    def backend(self) -> Any:
        return self._device.backend

    @property
    def is_fully_replicated(self) -> bool:
        return True

    @property
    def addressable_devices(self) -> list[Device]:
        return [self._device]

    @property
    def is_fully_addressable(self) -> bool:
        return True

    def hlo_sharding(self, ndim: int) -> str:
        return "{replicated}"

    def shard_shape(self, global_shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(global_shape)

    def devices_indices_map(self, global_shape: tuple[int, ...]) -> dict[Device, Any]:
        return {self._device: tuple(slice(None) for _ in global_shape)}

    addressable_devices_indices_map = devices_indices_map

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self._device!r})"


def _single_device_sharding(device: Device, memory_kind: str | None) -> SingleDeviceSharding:
    return SingleDeviceSharding(device, memory_kind=memory_kind)


# --------------------------------------------------------------------------------------------
# Named shardings over a mesh


class PartitionSpec(tuple):
    """How each dimension of an array is split over mesh axes: an entry per dimension that is
    None (not split), an axis name, or a tuple of axis names (split over their product).
    Trailing dimensions without an entry are not split."""

    def __new__(cls, *entries: Any) -> PartitionSpec:
        normalized = []
        for entry in entries:
            if entry is None or isinstance(entry, str):
                normalized.append(entry)
            elif isinstance(entry, (tuple, list)) and all(isinstance(e, str) for e in entry):
                normalized.append(tuple(entry) if len(entry) != 1 else entry[0])
            else:
                raise TypeError(
                    f"PartitionSpec entries are None, an axis name or a tuple of names, got "
                    f"{entry!r}"
                )
        return super().__new__(cls, normalized)

    def __repr__(self) -> str:
        return "PartitionSpec(" + ", ".join(repr(e) for e in self) + ")"

    def axes_of(self, dim: int) -> tuple[str, ...]:
        """The mesh axes dimension ``dim`` is split over (empty if none)."""
        if dim >= len(self) or self[dim] is None:
            return ()
        entry = self[dim]
        return (entry,) if isinstance(entry, str) else tuple(entry)


class NamedSharding(Sharding):
    """An array laid out over a ``Mesh`` as a ``PartitionSpec`` says.

    Over an ``AbstractMesh`` (no devices) it is a *typed* sharding: what an abstract value
    says of its layout (``typeof(x).sharding``), naming Explicit axes only.
    """

    __slots__ = ("mesh", "spec", "_memory_kind", "_key", "_hash", "_layouts", "_typed")

    def __init__(self, mesh: Any, spec: Any, *, memory_kind: str | None = None):
        spec = spec if isinstance(spec, PartitionSpec) else PartitionSpec(*spec)
        used: list[str] = []
        for dim in range(len(spec)):
            for name in spec.axes_of(dim):
                if name not in mesh.axis_names:
                    raise ValueError(
                        f"PartitionSpec {spec} names axis {name!r}, which the mesh does not have "
                        f"(its axes are {mesh.axis_names}){errors.where()}"
                    )
                if name in used:
                    raise ValueError(
                        f"PartitionSpec {spec} uses mesh axis {name!r} twice{errors.where()}"
                    )
                used.append(name)
        self.mesh = mesh
        self.spec = spec
        self._memory_kind = memory_kind
        entries = list(spec)
        while entries and entries[-1] is None:  # P("x") and P("x", None) mean the same
            entries.pop()
        self._key = (mesh, tuple(entries), memory_kind)
        self._hash = hash(self._key)
        self._layouts: dict[int, tuple] = {}
        self._typed: dict[int, NamedSharding | None] = {}

    def typed(self, ndim: int) -> NamedSharding | None:
        """The part of this layout an abstract value of rank ``ndim`` carries in its type:
        the split over the mesh's Explicit axes, over its abstract mesh (None when no
        dimension is split over an Explicit axis)."""
        found = self._typed.get(ndim, self)
        if found is self:
            found = self._typed[ndim] = typed_sharding(
                self.mesh.abstract_mesh, explicit_entries(self.spec, ndim, self.mesh)
            )
        return found

    def layout_key(self, ndim: int) -> tuple:
        # Computed once per rank: jit's cache keys read it on every call.
        key = self._layouts.get(ndim)
        if key is None:
            key = self._layouts[ndim] = (tuple(self.device_list), self.hlo_sharding(ndim))
        return key

    @property
    def memory_kind(self) -> str | None:
        return self._memory_kind

    @property
    def device_list(self) -> list[Device]:
        return self.mesh.device_list

    @property
    def addressable_devices(self) -> list[Device]:
        return self.mesh.addressable_devices

    @property
    def is_fully_replicated(self) -> bool:
        return all(not self.spec.axes_of(d) for d in range(len(self.spec)))

    def _factors(self, ndim: int) -> list[int]:
        if len(self.spec) > ndim:
            raise ValueError(
                f"PartitionSpec {self.spec} has {len(self.spec)} entries for an array of rank "
                f"{ndim}{errors.where()}"
            )
        return [
            int(np.prod([self.mesh.axis_size(a) for a in self.spec.axes_of(d)], dtype=np.int64))
            for d in range(ndim)
        ]

    def shard_shape(self, global_shape: tuple[int, ...]) -> tuple[int, ...]:
        shape = []
        for d, (size, factor) in enumerate(zip(global_shape, self._factors(len(global_shape)))):
            if size % factor:
                axes = self.spec.axes_of(d)
                raise ValueError(
                    f"dimension {d} of size {size} is not divisible by mesh axes {axes} of total "
                    f"size {factor} (sharding {self.spec}){errors.where()}"
                )
            shape.append(size // factor)
        return tuple(shape)

    def devices_indices_map(self, global_shape: tuple[int, ...]) -> dict[Device, Any]:
        shard = self.shard_shape(global_shape)
        names = self.mesh.axis_names
        result = {}
        for position in np.ndindex(*self.mesh.devices.shape):
            coordinate = dict(zip(names, position))
            index = []
            for d in range(len(global_shape)):
                block = 0
                for axis in self.spec.axes_of(d):  # major to minor, in the listed order
                    block = block * self.mesh.axis_size(axis) + coordinate[axis]
                index.append(slice(block * shard[d], (block + 1) * shard[d]))
            result[self.mesh.devices[position]] = tuple(index)
        return result

    def hlo_sharding(self, ndim: int) -> str:
        """The GSPMD sharding string, device ids being positions in the mesh's device list."""
        if self.is_fully_replicated:
            return "{replicated}"
        names = list(self.mesh.axis_names)
        order = [a for d in range(ndim) for a in self.spec.axes_of(d)]
        unused = [a for a in names if a not in order]
        positions = np.arange(self.mesh.size).reshape(self.mesh.axis_sizes)
        permuted = np.transpose(positions, [names.index(a) for a in order + unused])
        tiles = self._factors(ndim)
        replicate = int(np.prod([self.mesh.axis_size(a) for a in unused], dtype=np.int64))
        dims = tiles + ([replicate] if replicate > 1 else [])
        ids = ",".join(str(i) for i in permuted.reshape(-1))
        suffix = " last_tile_dim_replicate" if replicate > 1 else ""
        return f"{{devices=[{','.join(str(t) for t in dims)}]{ids}{suffix}}}"

    def sdy_sharding(self, ndim: int, mesh_name: str = "mesh") -> str:
        """The Shardy annotation: one ``{axes}`` per dimension, major axis first."""
        self._factors(ndim)  # checks the rank
        dims = ", ".join(
            "{" + ", ".join(f'"{a}"' for a in self.spec.axes_of(d)) + "}" for d in range(ndim)
        )
        return f"#sdy.sharding<@{mesh_name}, [{dims}]>"

    def __eq__(self, other: object) -> bool:
        return self is other or isinstance(other, NamedSharding) and self._key == other._key

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r})"


def explicit_entries(spec: PartitionSpec, ndim: int, mesh: Any) -> tuple:
    """``spec``'s entries for rank ``ndim`` (padded with None), keeping Explicit axes only."""
    explicit = set(mesh.explicit_axes)
    entries = []
    for d in range(ndim):
        kept = tuple(a for a in spec.axes_of(d) if a in explicit)
        entries.append(None if not kept else kept[0] if len(kept) == 1 else kept)
    return tuple(entries)


_typed: dict[tuple, NamedSharding] = {}


def typed_sharding(abstract_mesh: Any, entries: Sequence[Any]) -> NamedSharding | None:
    """The typed sharding with these spec entries over ``abstract_mesh``; None (the type of
    an array split over no Explicit axis) when every entry is None.

    Interned: tracing under Explicit axes asks for the same few types over and over, and one
    object per type makes them cheap to build, hash and compare (by identity first)."""
    key = (abstract_mesh, tuple(entries))
    found = _typed.get(key)
    if found is None:
        if all(e is None for e in entries):
            return None
        found = NamedSharding(abstract_mesh, PartitionSpec(*entries))
        if len(_typed) < 4096:
            _typed[key] = found
    return found


def unsplit_sharding(ndim: int) -> NamedSharding:
    """``typeof(x).sharding`` of an array split over no Explicit axis: the abstract mesh in
    scope, every dimension whole."""
    return NamedSharding(get_abstract_mesh(), PartitionSpec(*[None] * ndim))


# --------------------------------------------------------------------------------------------
# Shardings as XLA reports them


_TILED = re.compile(r"^\{devices=\[([\d,]+)\]([\d,]+)( last_tile_dim_replicate)?\}$")
_MAXIMAL = re.compile(r"^\{maximal device=(\d+)\}$")


class GSPMDSharding(Sharding):
    """A layout given as XLA's sharding string over a list of devices.

    Compiled programs report their output layouts this way; ``named_sharding_from_hlo`` turns
    the ones a mesh can express back into ``NamedSharding``s. Accepted strings (what backends
    report): ``{replicated}``, ``{maximal device=K}`` and ``{devices=[d0,...]i0,i1,...}`` with
    an optional ``last_tile_dim_replicate``, device ids being positions in ``devices``.
    """

    __slots__ = ("_devices", "_hlo", "_tiles", "_replicated_tail")

    def __init__(self, devices: Any, hlo: str):
        self._devices = list(devices)
        self._hlo = hlo
        self._tiles: np.ndarray | None = None
        self._replicated_tail = False
        if hlo == "{replicated}":
            return
        maximal = _MAXIMAL.match(hlo)
        if maximal:
            self._tiles = np.array([int(maximal[1])])
            self._replicated_tail = True
            return
        tiled = _TILED.match(hlo)
        if not tiled:
            raise ValueError(f"unsupported XLA sharding {hlo!r}")
        dims = [int(d) for d in tiled[1].split(",")]
        ids = [int(i) for i in tiled[2].split(",")]
        if int(np.prod(dims)) != len(ids) or sorted(ids) != list(range(len(self._devices))):
            raise ValueError(f"XLA sharding {hlo!r} does not fit {len(self._devices)} devices")
        self._tiles = np.array(ids).reshape(dims)
        self._replicated_tail = bool(tiled[3])

    @property
    def device_list(self) -> list[Device]:
        return list(self._devices)

    @property
    def is_fully_replicated(self) -> bool:
        return self._tiles is None or self._data_tiles().size == 1

    def _data_tiles(self) -> np.ndarray:
        if self._tiles is None:
            return np.zeros((), int)
        return self._tiles[..., 0] if self._replicated_tail else self._tiles

    def hlo_sharding(self, ndim: int) -> str:
        return self._hlo

    def shard_shape(self, global_shape: tuple[int, ...]) -> tuple[int, ...]:
        if self._tiles is None or _MAXIMAL.match(self._hlo):
            return tuple(global_shape)
        tiles = self._data_tiles().shape
        return tuple(-(-size // t) for size, t in zip(global_shape, tiles))

    def devices_indices_map(self, global_shape: tuple[int, ...]) -> dict[Device, Any]:
        if self._tiles is None:
            return {d: tuple(slice(None) for _ in global_shape) for d in self._devices}
        if _MAXIMAL.match(self._hlo):
            device = self._devices[int(self._tiles[0])]
            return {device: tuple(slice(None) for _ in global_shape)}
        shard = self.shard_shape(global_shape)
        result = {}
        for position in np.ndindex(*self._tiles.shape):
            block = position[: len(global_shape)]
            index = tuple(
                slice(b * s, min((b + 1) * s, n)) for b, s, n in zip(block, shard, global_shape)
            )
            result[self._devices[int(self._tiles[position])]] = index
        return result

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, GSPMDSharding)
            and self._hlo == other._hlo
            and self._devices == other._devices
        )

    def __hash__(self) -> int:
        return hash((tuple(self._devices), self._hlo))

    def __repr__(self) -> str:
        return f"GSPMDSharding({self._hlo}, devices={self._devices!r})"


def named_sharding_from_hlo(mesh: Any, hlo: str, ndim: int) -> Sharding:
    """XLA's layout ``hlo`` (device ids are positions in the mesh) as a ``NamedSharding`` of
    ``mesh`` when one describes it, else as a ``GSPMDSharding``."""
    if hlo == "{replicated}":
        return NamedSharding(mesh, PartitionSpec())
    names = mesh.axis_names
    # Each mesh axis is unused or splits one dimension; a mesh has few axes, so try them all.
    for placement in itertools.product(range(-1, ndim), repeat=len(names)):
        per_dim: list[list[str]] = [[] for _ in range(ndim)]
        for name, dim in zip(names, placement):
            if dim >= 0:
                per_dim[dim].append(name)
        for orders in itertools.product(*(itertools.permutations(p) for p in per_dim)):
            spec = PartitionSpec(*(tuple(o) if o else None for o in orders))
            candidate = NamedSharding(mesh, spec)
            if candidate.hlo_sharding(ndim) == hlo:
                return candidate
    return GSPMDSharding(mesh.device_list, hlo)
