"""Device meshes: devices arranged in a named n-dimensional grid (``ember.sharding.Mesh``).

A mesh names the axes that shardings and collectives refer to: ``Mesh(devices, ("data",
"model"))`` over a 4x2 array of devices. Used as a context manager it becomes the current
mesh, so that ``PartitionSpec``s can be resolved without naming it each time.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import errors
from ember._src.runtime import multiprocess
from ember._src.runtime.backend import Device


class Mesh:
    """Devices in a named grid. Equal meshes (same devices, same names) hash alike."""

    def __init__(self, devices: Any, axis_names: str | Sequence[str]):
        devices = np.asarray(devices, dtype=object)
        names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        if devices.ndim != len(names):
            raise ValueError(
                f"Mesh: {devices.ndim}-dimensional devices need {devices.ndim} axis names, got "
                f"{names}{errors.where()}"
            )
        if len(set(names)) != len(names):
            raise ValueError(f"Mesh: repeated axis names {names}{errors.where()}")
        flat = list(devices.flat)
        for d in flat:
            if not all(hasattr(d, a) for a in ("id", "platform", "process_index")):
                raise TypeError(
                    f"Mesh: {d!r} ({type(d).__name__}) is not a device; build meshes from "
                    f"ember.devices() (every process's devices in a multi-process job)"
                    f"{errors.where()}"
                )
        if len({id(d) for d in flat}) != len(flat):
            raise ValueError(f"Mesh: a device appears more than once{errors.where()}")
        self.devices = devices
        self.axis_names = names
        self._key = (tuple(id(d) for d in flat), devices.shape, names)
        self._addressable: list[Device] | None = None

    @property
    def shape(self) -> dict[str, int]:
        return dict(zip(self.axis_names, self.devices.shape))

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        return tuple(self.devices.shape)

    @property
    def size(self) -> int:
        return int(self.devices.size)

    @property
    def device_ids(self) -> np.ndarray:
        return np.vectorize(lambda d: d.id, otypes=[np.int64])(self.devices)

    @property
    def device_list(self) -> list[Device]:
        return list(self.devices.flat)

    @property
    def device_set(self) -> set[Device]:
        return set(self.devices.flat)

    @property
    def addressable_devices(self) -> list[Device]:
        """This process's devices of the mesh, in mesh order (every device unless the mesh
        spans several processes)."""
        found = self._addressable
        if found is None:
            found = self._addressable = multiprocess.addressable(self.device_list)
        return list(found)

    @property
    def is_multi_process(self) -> bool:
        return len(self.addressable_devices) != self.size

    def axis_size(self, name: str) -> int:
        try:
            return self.shape[name]
        except KeyError:
            raise ValueError(
                f"mesh has no axis {name!r}; its axes are {self.axis_names}{errors.where()}"
            ) from None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mesh) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        axes = ", ".join(f"{n!r}: {s}" for n, s in self.shape.items())
        return f"Mesh({{{axes}}})"

    def __enter__(self) -> Mesh:
        _current.stack.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _current.stack.pop()


class _CurrentMesh(threading.local):
    def __init__(self) -> None:
        self.stack: list[Mesh] = []


_current = _CurrentMesh()


def current_mesh() -> Mesh | None:
    """The innermost mesh entered with ``with mesh:`` (None outside any)."""
    return _current.stack[-1] if _current.stack else None


def make_mesh(
    axis_shapes: Sequence[int], axis_names: Sequence[str], *, devices: Sequence[Device] | None
    = None,
) -> Mesh:  # fmt: skip
    """A mesh of ``axis_shapes`` over ``devices`` (default: all devices of the default
    backend, in order)."""
    from_devices = list(devices) if devices is not None else None
    if from_devices is None:
        raise ValueError("make_mesh needs devices (ember.make_mesh passes the default backend's)")
    count = math.prod(axis_shapes)
    if count != len(from_devices):
        raise ValueError(
            f"make_mesh: a mesh of shape {tuple(axis_shapes)} needs {count} devices, "
            f"{len(from_devices)} are available{errors.where()}"
        )
    grid = np.empty(count, dtype=object)
    for i, d in enumerate(from_devices):
        grid[i] = d
    return Mesh(grid.reshape(tuple(axis_shapes)), tuple(axis_names))
