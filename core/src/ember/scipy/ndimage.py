"""Image processing (``ember.scipy.ndimage``), as ``jax.scipy.ndimage``."""

from ember._src.scipy.ndimage import map_coordinates as map_coordinates
