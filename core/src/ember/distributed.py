"""Multi-process jobs (JAX's ``jax.distributed``): see docs/multiprocess.md."""

from ember._src.distributed.initialize import (
    initialize as initialize,
    is_initialized as is_initialized,
    shutdown as shutdown,
)

__all__ = ["initialize", "is_initialized", "shutdown"]
