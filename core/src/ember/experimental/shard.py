"""Moving between sharding modes (``jax.experimental.shard``'s names; also in
``ember.sharding``)."""

from ember._src.transforms.sharding_modes import (
    auto_axes as auto_axes,
    explicit_axes as explicit_axes,
    reshard as reshard,
)
