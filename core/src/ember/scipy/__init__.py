"""SciPy's API on ember arrays (``ember.scipy``), as ``jax.scipy``."""

from ember.scipy import (
    integrate as integrate,
    interpolate as interpolate,
    linalg as linalg,
    ndimage as ndimage,
    optimize as optimize,
    signal as signal,
)
