"""The t distribution (``ember.scipy.stats.t``), as ``jax.scipy.stats.t``."""

from ember._src.scipy.stats.continuous import (
    t_logpdf as logpdf,
    t_pdf as pdf,
)
