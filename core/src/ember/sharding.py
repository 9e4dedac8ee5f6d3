"""Meshes and shardings (``ember.sharding``), as ``jax.sharding``."""

from ember._src.runtime.mesh import Mesh as Mesh, current_mesh as current_mesh
from ember._src.runtime.sharding import (
    NamedSharding as NamedSharding,
    PartitionSpec as PartitionSpec,
    Sharding as Sharding,
    SingleDeviceSharding as SingleDeviceSharding,
)

P = PartitionSpec
