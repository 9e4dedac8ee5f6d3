"""The geom distribution, as ``jax.scipy.stats.geom``."""

from ember._src.scipy.stats.discrete import (
    geom_logpmf as logpmf,
    geom_pmf as pmf,
)

__all__ = ["logpmf", "pmf"]
