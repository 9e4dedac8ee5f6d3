"""Integration (``ember.scipy.integrate``), as ``jax.scipy.integrate``."""

from ember._src.scipy.integrate import trapezoid as trapezoid
