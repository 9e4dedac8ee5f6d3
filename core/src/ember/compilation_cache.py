"""The persistent compilation cache (``ember.compilation_cache``): compiled programs kept in a
directory and loaded, not compiled again, by later processes.

Turn it on with ``ember.config.update("compilation_cache_dir", path)`` (or the environment
variable ``EMBER_COMPILATION_CACHE_DIR``, or ``set_cache_dir(path)``); see docs/caching.md.
"""

from ember._src.execution.compilation_cache import (
    is_initialized as is_initialized,
    reset_cache as reset_cache,
    reset_stats as reset_stats,
    set_cache_dir as set_cache_dir,
    stats as stats,
)
