"""The nbinom distribution, as ``jax.scipy.stats.nbinom``."""

from ember._src.scipy.stats.discrete import (
    nbinom_logpmf as logpmf,
    nbinom_pmf as pmf,
)

__all__ = ["logpmf", "pmf"]
