"""Devices of hardware this machine does not have (``ember.experimental.topologies``, as
``jax.experimental.topologies``).

``get_topology_desc("v5e:2x2", "tpu")`` asks the platform's plugin for the compile-only
devices of a named slice. A ``Mesh`` over them and ``jit(...).lower(ShapeDtypeStruct(...,
sharding=...)).compile()`` compile a real program for that slice, whose ``cost_analysis()``,
``memory_analysis()`` and ``as_text()`` answer "does my model fit?" from a laptop; running it
raises ``ember.errors.ExecutionError``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src import errors
from ember._src.execution import devices as devices_module
from ember._src.plugin import manager
from ember._src.runtime.backend import Device
from ember._src.runtime.mesh import Mesh

# The platform JAX assumes when none is named: named topologies are TPU slices.
DEFAULT_PLATFORM = "tpu"


class TopologyDescription:
    """The devices of a topology: ``devices`` (compile-only ones for a named topology)."""

    def __init__(self, devices: Sequence[Device], name: str = ""):
        self.devices: list[Device] = list(devices)
        self.name = name

    def __repr__(self) -> str:
        kinds = ", ".join(sorted({d.device_kind for d in self.devices}))
        label = f"{self.name!r}, " if self.name else ""
        return f"TopologyDescription({label}{len(self.devices)} x {kinds})"


def get_topology_desc(
    topology_name: str = "", platform: str | None = None, **kwargs: Any
) -> TopologyDescription:
    """The compile-only devices of the topology ``topology_name`` of ``platform`` (default
    ``"tpu"``), e.g. ``"v5e:2x2"`` (4 TPU v5e chips), ``"v4:2x2x1"``, ``"v5p:2x2x1"``,
    ``"v6e:2x4"``. ``kwargs``: topology options the platform's plugin passes to its compiler.

    Needs the platform's plugin installed (``ember-plugin-tpu`` for TPUs), not its hardware.
    An unknown name raises ``ValueError`` listing the known forms; a platform without named
    topologies raises ``NotImplementedError``."""
    if not isinstance(topology_name, str) or not topology_name:
        raise ValueError(
            f"get_topology_desc: name a topology, such as 'v5e:2x2' (got {topology_name!r})"
            f"{errors.where()}"
        )
    backend = manager.topology_backend(platform or DEFAULT_PLATFORM, topology_name, **kwargs)
    return TopologyDescription(backend.devices(), topology_name)


def get_attached_topology(platform: str | None = None) -> TopologyDescription:
    """The devices this process has (of ``platform``, default: the default backend's)."""
    return TopologyDescription(devices_module.devices(platform))


def make_mesh(
    topo: TopologyDescription,
    mesh_shape: Sequence[int],
    axis_names: Sequence[str],
    *,
    contiguous_submeshes: bool = False,
) -> Mesh:
    """A ``Mesh`` of ``mesh_shape`` named ``axis_names`` over the topology's devices, in the
    topology's device order (its axes ``Auto``, as JAX's). A shape whose size is not the
    number of devices raises ``ValueError``. ``contiguous_submeshes`` is accepted for JAX's
    signature: the device order already keeps each host's chips together."""
    del contiguous_submeshes
    shape = tuple(int(n) for n in mesh_shape)
    names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    count = len(topo.devices)
    if math.prod(shape) != count or any(n < 1 for n in shape):
        raise ValueError(
            f"make_mesh: a mesh of shape {shape} does not fit the topology {topo.name or topo}: "
            f"it has {count} devices, the mesh needs {math.prod(shape)}{errors.where()}"
        )
    if len(names) != len(shape):
        raise ValueError(
            f"make_mesh: a {len(shape)}-dimensional mesh needs {len(shape)} axis names, got "
            f"{names}{errors.where()}"
        )
    grid = np.empty(count, dtype=object)
    for i, device in enumerate(topo.devices):
        grid[i] = device
    return Mesh(grid.reshape(shape), names)
