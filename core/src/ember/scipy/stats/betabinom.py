"""The betabinom distribution (``ember.scipy.stats.betabinom``), as ``jax.scipy.stats.betabinom``."""

from ember._src.scipy.stats.discrete import (
    betabinom_logpmf as logpmf,
    betabinom_pmf as pmf,
)
