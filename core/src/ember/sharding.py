"""Meshes and shardings (``ember.sharding``), as ``jax.sharding``."""

from ember._src.runtime.mesh import (
    AbstractMesh as AbstractMesh,
    AxisType as AxisType,
    Mesh as Mesh,
    current_mesh as current_mesh,
    get_abstract_mesh as get_abstract_mesh,
    set_mesh as set_mesh,
    use_mesh as use_mesh,
)
from ember._src.runtime.sharding import (
    NamedSharding as NamedSharding,
    PartitionSpec as PartitionSpec,
    Sharding as Sharding,
    SingleDeviceSharding as SingleDeviceSharding,
)
from ember._src.transforms.sharding_modes import (
    auto_axes as auto_axes,
    explicit_axes as explicit_axes,
    reshard as reshard,
)

P = PartitionSpec
get_mesh = current_mesh
