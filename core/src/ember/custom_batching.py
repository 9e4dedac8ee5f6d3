"""Functions with their own batching rule (``jax.custom_batching``)."""

from ember._src.transforms.custom_batching import (
    custom_vmap as custom_vmap,
    sequential_vmap as sequential_vmap,
)
