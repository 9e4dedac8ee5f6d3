"""The binom distribution (``ember.scipy.stats.binom``), as ``jax.scipy.stats.binom``."""

from ember._src.scipy.stats.discrete import (
    binom_logpmf as logpmf,
    binom_pmf as pmf,
)
