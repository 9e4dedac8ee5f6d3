"""JAX's path to the persistent compilation cache's functions:
``ember.experimental.compilation_cache.compilation_cache`` (the same as
``ember.compilation_cache``)."""
