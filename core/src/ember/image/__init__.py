"""Image resampling (``ember.image``), as ``jax.image``."""

from ember._src.image import (
    ResizeMethod as ResizeMethod,
    resize as resize,
    scale_and_translate as scale_and_translate,
)
