"""Where the arguments and results of an exported program live: its mesh and their layouts.

A program exported over a mesh records the mesh's axis names, sizes and types (an
``AbstractMesh``: no devices, which the caller brings) and a ``PartitionSpec`` per argument and
result (None for a result the partitioner lays out as it likes). In the JSON metadata:

    "mesh":          null (one device) or {"axis_names": [...], "axis_sizes": [...],
                     "axis_types": ["Auto" | "Explicit" | "Manual", ...]}
    "in_shardings":  per flat argument, null or the spec's entries, each null, an axis name
                     or a list of axis names
    "out_shardings": likewise, per flat result

The HLO form JAX exposes (``in_shardings_hlo``) follows from them: device ids are positions
in the mesh, so it holds for any devices. Calling lays the exported mesh's axes over the
caller's devices, in the caller's mesh order (``mesh_on``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import errors
from ember._src.runtime.mesh import AbstractMesh, AxisType, Mesh
from ember._src.runtime.sharding import NamedSharding, PartitionSpec


def encode_mesh(mesh: AbstractMesh | None) -> dict[str, Any] | None:
    if mesh is None:
        return None
    return {
        "axis_names": list(mesh.axis_names),
        "axis_sizes": list(mesh.axis_sizes),
        "axis_types": [t.value for t in mesh.axis_types],
    }


def decode_mesh(data: Any) -> AbstractMesh | None:
    """The mesh ``encode_mesh`` wrote; ``ExportError`` if ``data`` is not one."""
    if data is None:
        return None
    bad = errors.ExportError(f"bad metadata: {data!r} is not a mesh")
    if not isinstance(data, dict):
        raise bad
    names, sizes, types = (data.get(k) for k in ("axis_names", "axis_sizes", "axis_types"))
    if not all(isinstance(x, list) and len(x) == len(names or ()) for x in (names, sizes, types)):
        raise bad
    if not all(isinstance(n, str) for n in names) or len(set(names)) != len(names):
        raise bad
    if not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in sizes):
        raise bad
    try:
        axis_types = [AxisType(t) for t in types]
    except ValueError:
        raise bad from None
    return AbstractMesh(sizes, names, axis_types)


def encode_spec(spec: PartitionSpec | None) -> list[Any] | None:
    if spec is None:
        return None
    return [list(e) if isinstance(e, tuple) else e for e in spec]


def decode_spec(data: Any, mesh: AbstractMesh | None) -> PartitionSpec | None:
    """The spec ``encode_spec`` wrote, naming axes of ``mesh``; ``ExportError`` otherwise."""
    if data is None:
        return None
    if mesh is None:
        raise errors.ExportError(f"bad metadata: sharding {data!r} of a program on one device")
    if not isinstance(data, list):
        raise errors.ExportError(f"bad metadata: {data!r} is not a PartitionSpec")
    try:
        spec = PartitionSpec(*data)
        NamedSharding(mesh, spec)  # every axis named is the mesh's, none twice
    except (TypeError, ValueError):
        raise errors.ExportError(
            f"bad metadata: {data!r} is not a PartitionSpec over the mesh {mesh.shape_tuple}"
        ) from None
    return spec


def hlo_sharding(mesh: AbstractMesh | None, spec: PartitionSpec | None, ndim: int) -> str | None:
    """The HLO sharding text of a value laid out as ``spec`` (device ids are mesh positions);
    None when unspecified or on one device."""
    if mesh is None or spec is None:
        return None
    return NamedSharding(mesh, spec).hlo_sharding(ndim)


def mesh_on(mesh: AbstractMesh, devices: Sequence[Any]) -> Mesh:
    """The exported mesh laid over ``devices`` (as many as it has), in their order."""
    grid = np.empty(len(devices), dtype=object)
    grid[:] = list(devices)
    return Mesh(grid.reshape(mesh.axis_sizes), mesh.axis_names, mesh.axis_types)


def spec_of(sharding: Any, mesh: Mesh, what: str) -> PartitionSpec | None:
    """The PartitionSpec of a layout over ``mesh`` (None: unspecified); ``ExportError`` for a
    layout an export cannot record."""
    if sharding is None:
        return None
    if not isinstance(sharding, NamedSharding) or not mesh.same_devices(sharding.mesh):
        raise errors.ExportError(
            f"{what} is laid out as {sharding!r}: an export records NamedShardings over the "
            f"program's mesh only"
        )
    return sharding.spec
