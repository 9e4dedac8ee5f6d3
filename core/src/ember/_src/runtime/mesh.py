"""Device meshes: devices arranged in a named n-dimensional grid (``ember.sharding.Mesh``).

A mesh names the axes that shardings and collectives refer to: ``Mesh(devices, ("data",
"model"))`` over a 4x2 array of devices. Each axis has a type (``AxisType``): on ``Auto``
axes the partitioner decides layouts, on ``Explicit`` axes an array's layout is part of its
type (``typeof(x)``), on ``Manual`` axes (inside ``shard_map``) code sees per-device pieces.
An ``AbstractMesh`` is a mesh without its devices (names, sizes, types): what types refer to.

The mesh in scope resolves bare ``PartitionSpec``s and sets the axis types of tracing:
``set_mesh(mesh)`` sets it for the whole program (and, used in ``with``, for a block),
``use_mesh(mesh)`` (or ``with mesh:``) for a block.
"""

from __future__ import annotations

import enum
import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import errors
from ember._src.runtime import multiprocess
from ember._src.runtime.backend import Device


class AxisType(enum.Enum):
    """How a mesh axis is used: by the partitioner (``Auto``), in types (``Explicit``) or by
    hand inside ``shard_map`` (``Manual``)."""

    Auto = "Auto"
    Explicit = "Explicit"
    Manual = "Manual"

    def __repr__(self) -> str:
        return self.name


def _axis_types(types: Any, count: int, what: str) -> tuple[AxisType, ...]:
    if types is None:
        return (AxisType.Auto,) * count
    if isinstance(types, AxisType):
        types = (types,)
    types = tuple(types)
    if len(types) != count or not all(isinstance(t, AxisType) for t in types):
        raise ValueError(
            f"{what}: axis_types must be {count} AxisType values (one per axis), got "
            f"{types!r}{errors.where()}"
        )
    return types


class _AxesOfTypes:
    """What meshes and abstract meshes share: named axes, their sizes and their types."""

    axis_names: tuple[str, ...]
    axis_types: tuple[AxisType, ...]

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        raise NotImplementedError

    @property
    def shape(self) -> dict[str, int]:
        return dict(zip(self.axis_names, self.axis_sizes))

    @property
    def shape_tuple(self) -> tuple[tuple[str, int], ...]:
        return tuple(zip(self.axis_names, self.axis_sizes))

    @property
    def size(self) -> int:
        return math.prod(self.axis_sizes)

    @property
    def empty(self) -> bool:
        return not self.axis_names

    def _of_type(self, kind: AxisType) -> tuple[str, ...]:
        return tuple(n for n, t in zip(self.axis_names, self.axis_types) if t is kind)

    explicit_axes = property(lambda self: self._of_type(AxisType.Explicit))
    auto_axes = property(lambda self: self._of_type(AxisType.Auto))
    manual_axes = property(lambda self: self._of_type(AxisType.Manual))

    def axis_size(self, name: str) -> int:
        try:
            return self.shape[name]
        except KeyError:
            raise ValueError(
                f"mesh has no axis {name!r}; its axes are {self.axis_names}{errors.where()}"
            ) from None

    def _types_updated(self, new_types: dict[str, AxisType]) -> tuple[AxisType, ...]:
        for name in new_types:
            self.axis_size(name)  # an unknown axis fails here, by name
        return tuple(new_types.get(n, t) for n, t in zip(self.axis_names, self.axis_types))

    def _types_text(self) -> str:
        return "(" + ", ".join(t.name for t in self.axis_types) + ")"


class AbstractMesh(_AxesOfTypes):
    """A mesh's names, sizes and axis types without its devices: what typed shardings
    (``typeof(x).sharding.mesh``) refer to. Equal by value."""

    __slots__ = ("_sizes", "axis_names", "axis_types", "_hash", "_shape_tuple")

    def __init__(
        self,
        axis_sizes: Sequence[int],
        axis_names: Sequence[str],
        axis_types: Any = None,
    ):
        self._sizes = tuple(int(s) for s in axis_sizes)
        self.axis_names = tuple(axis_names)
        if len(self._sizes) != len(self.axis_names):
            raise ValueError(
                f"AbstractMesh: {len(self._sizes)} sizes for {len(self.axis_names)} axis names"
                f"{errors.where()}"
            )
        self.axis_types = _axis_types(axis_types, len(self.axis_names), "AbstractMesh")
        self._hash = hash((self._sizes, self.axis_names, self.axis_types))
        self._shape_tuple = tuple(zip(self.axis_names, self._sizes))

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        return self._sizes

    @property
    def shape_tuple(self) -> tuple[tuple[str, int], ...]:
        return self._shape_tuple

    @property
    def abstract_mesh(self) -> AbstractMesh:
        return self

    def update_axis_types(self, new_types: dict[str, AxisType]) -> AbstractMesh:
        return AbstractMesh(self._sizes, self.axis_names, self._types_updated(new_types))

    def __eq__(self, other: object) -> bool:
        return self is other or (
            isinstance(other, AbstractMesh)
            and self._sizes == other._sizes
            and self.axis_names == other.axis_names
            and self.axis_types == other.axis_types
        )

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        if self.empty:
            return "AbstractMesh((), ())"
        axes = ", ".join(f"{n!r}: {s}" for n, s in self.shape_tuple)
        return f"AbstractMesh({axes}, axis_types={self._types_text()})"


EMPTY_ABSTRACT_MESH = AbstractMesh((), ())


class Mesh(_AxesOfTypes):
    """Devices in a named grid. Equal meshes (same devices, names and axis types) hash
    alike."""

    def __init__(self, devices: Any, axis_names: str | Sequence[str], axis_types: Any = None):
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
        self.axis_types = _axis_types(axis_types, len(names), "Mesh")
        # Two meshes over the same devices and names are one layout (``same_devices``);
        # their axis types are part of their identity as types.
        self._layout_key = (tuple(id(d) for d in flat), devices.shape, names)
        self._key = (self._layout_key, self.axis_types)
        self._addressable: list[Device] | None = None
        self._abstract: AbstractMesh | None = None

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        return tuple(self.devices.shape)

    @property
    def size(self) -> int:
        return int(self.devices.size)

    @property
    def abstract_mesh(self) -> AbstractMesh:
        found = self._abstract
        if found is None:
            found = self._abstract = AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types)
        return found

    def update_axis_types(self, new_types: dict[str, AxisType]) -> Mesh:
        """This mesh's devices and names with some axes' types changed."""
        return Mesh(self.devices, self.axis_names, self._types_updated(new_types))

    def same_devices(self, other: Any) -> bool:
        """The same devices under the same names (axis types aside): one layout."""
        return isinstance(other, Mesh) and self._layout_key == other._layout_key

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

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mesh) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        axes = ", ".join(f"{n!r}: {s}" for n, s in self.shape.items())
        if all(t is AxisType.Auto for t in self.axis_types):
            return f"Mesh({{{axes}}})"
        return f"Mesh({{{axes}}}, axis_types={self._types_text()})"

    def __enter__(self) -> Mesh:
        _current.stack.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _current.stack.pop()


class _CurrentMesh(threading.local):
    def __init__(self) -> None:
        self.stack: list[Mesh] = []


_current = _CurrentMesh()
# The program-wide mesh of ``set_mesh`` (every thread sees it under its own blocks).
_global_mesh: list[Mesh | None] = [None]


def current_mesh() -> Mesh | None:
    """The mesh in scope: the innermost ``use_mesh``/``with mesh:`` block's, else the one
    ``set_mesh`` set (None when there is none)."""
    return _current.stack[-1] if _current.stack else _global_mesh[0]


def get_abstract_mesh() -> AbstractMesh:
    """The abstract mesh in scope (an empty one when no mesh is set)."""
    mesh = current_mesh()
    return EMPTY_ABSTRACT_MESH if mesh is None else mesh.abstract_mesh


def _check_mesh(mesh: Any, what: str) -> Mesh:
    if not isinstance(mesh, Mesh):
        raise TypeError(f"{what} takes a Mesh, got {mesh!r}{errors.where()}")
    return mesh


def use_mesh(mesh: Mesh) -> Mesh:
    """``with use_mesh(mesh):`` makes ``mesh`` the mesh in scope for the block."""
    return _check_mesh(mesh, "use_mesh")


class set_mesh:  # noqa: N801 - a function to users: `set_mesh(mesh)` or `with set_mesh(mesh):`
    """Make ``mesh`` the mesh of the whole program (JAX's ``jax.set_mesh``); used in
    ``with``, the previous one comes back when the block ends."""

    __slots__ = ("previous",)

    def __init__(self, mesh: Mesh | None):
        if mesh is not None:
            _check_mesh(mesh, "set_mesh")
        self.previous = _global_mesh[0]
        _global_mesh[0] = mesh

    def __enter__(self) -> Mesh | None:
        return _global_mesh[0]

    def __exit__(self, *exc: Any) -> None:
        _global_mesh[0] = self.previous


def make_mesh(
    axis_shapes: Sequence[int], axis_names: Sequence[str], *, devices: Sequence[Device] | None
    = None, axis_types: Any = None,
) -> Mesh:  # fmt: skip
    """A mesh of ``axis_shapes`` over the first of ``devices`` (default: all devices of the
    default backend, in order), its axes ``Explicit`` unless ``axis_types`` says otherwise (as
    ``jax.make_mesh``; ``Mesh(...)`` itself defaults to ``Auto``). A mesh smaller than the
    devices given takes the first ones, as JAX's does."""
    from_devices = list(devices) if devices is not None else None
    if from_devices is None:
        raise ValueError("make_mesh needs devices (ember.make_mesh passes the default backend's)")
    count = math.prod(axis_shapes)
    if count > len(from_devices):
        raise ValueError(
            f"make_mesh: a mesh of shape {tuple(axis_shapes)} needs {count} devices, "
            f"{len(from_devices)} are available{errors.where()}"
        )
    from_devices = from_devices[:count]
    grid = np.empty(count, dtype=object)
    for i, d in enumerate(from_devices):
        grid[i] = d
    if axis_types is None:
        axis_types = (AxisType.Explicit,) * len(tuple(axis_names))
    return Mesh(grid.reshape(tuple(axis_shapes)), tuple(axis_names), axis_types)
