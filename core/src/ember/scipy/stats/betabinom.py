"""The betabinom distribution, as ``jax.scipy.stats.betabinom``."""

from ember._src.scipy.stats.discrete import (
    betabinom_logpmf as logpmf,
    betabinom_pmf as pmf,
)

__all__ = ["logpmf", "pmf"]
