"""SciPy's API on ember arrays (``ember.scipy``), as ``jax.scipy``.

Each submodule is imported here so that ``ember.scipy.<name>`` works after ``import ember``.
"""

from ember.scipy import (
    integrate as integrate,
    interpolate as interpolate,
    linalg as linalg,
    ndimage as ndimage,
    optimize as optimize,
    signal as signal,
    special as special,
    stats as stats,
)
