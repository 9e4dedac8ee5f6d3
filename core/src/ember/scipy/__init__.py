"""SciPy's API on ember arrays (``ember.scipy``), as ``jax.scipy``."""

from ember.scipy import linalg as linalg, signal as signal
