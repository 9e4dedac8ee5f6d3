"""The binom distribution, as ``jax.scipy.stats.binom``."""

from ember._src.scipy.stats.discrete import (
    binom_logpmf as logpmf,
    binom_pmf as pmf,
)

__all__ = ["logpmf", "pmf"]
