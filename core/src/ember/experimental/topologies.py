"""Compiling for hardware this machine does not have (as ``jax.experimental.topologies``):
``get_topology_desc(name, platform)`` gives the compile-only devices of a named TPU slice,
``make_mesh`` a mesh over them."""

from ember._src.topologies import (
    TopologyDescription as TopologyDescription,
    get_attached_topology as get_attached_topology,
    get_topology_desc as get_topology_desc,
    make_mesh as make_mesh,
)

__all__ = ["TopologyDescription", "get_attached_topology", "get_topology_desc", "make_mesh"]
