"""Interpolation (``ember.scipy.interpolate``), as ``jax.scipy.interpolate``."""

from ember._src.scipy.interpolate import RegularGridInterpolator as RegularGridInterpolator
