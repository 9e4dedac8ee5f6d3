"""Debugging helpers (``ember.debug``), as ``jax.debug``."""

from ember._src.callback import debug_callback as callback, debug_print as print
from ember._src.runtime.sharding_display import (
    sharding_layout_text as sharding_layout_text,
    visualize_array_sharding as visualize_array_sharding,
)

__all__ = ["callback", "print", "sharding_layout_text", "visualize_array_sharding"]
