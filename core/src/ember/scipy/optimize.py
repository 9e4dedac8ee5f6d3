"""Optimisation (``ember.scipy.optimize``), as ``jax.scipy.optimize``."""

from ember._src.scipy.optimize import OptimizeResults as OptimizeResults, minimize as minimize
