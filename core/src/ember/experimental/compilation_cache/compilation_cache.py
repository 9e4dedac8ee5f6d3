"""The persistent compilation cache's functions under JAX's path
(``jax.experimental.compilation_cache.compilation_cache``); ``ember.compilation_cache`` is the
same module."""

from ember.compilation_cache import (
    is_initialized as is_initialized,
    reset_cache as reset_cache,
    reset_stats as reset_stats,
    set_cache_dir as set_cache_dir,
    stats as stats,
)
