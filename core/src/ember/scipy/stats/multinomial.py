"""The multinomial distribution, as ``jax.scipy.stats.multinomial``."""

from ember._src.scipy.stats.multivariate import (
    multinomial_logpmf as logpmf,
    multinomial_pmf as pmf,
)

__all__ = ["logpmf", "pmf"]
