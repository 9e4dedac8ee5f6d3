"""SciPy-style functions (``ember.scipy``), as ``jax.scipy``.

Each submodule is imported here so that ``ember.scipy.<name>`` works after ``import ember``.
"""

from ember.scipy import special as special, stats as stats

# Further submodules (linalg, signal, optimize, ndimage, integrate, interpolate) are imported
# below, one line each, as they are added.
