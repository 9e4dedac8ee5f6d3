"""The wrapcauchy distribution (``ember.scipy.stats.wrapcauchy``), as ``jax.scipy.stats.wrapcauchy``."""

from ember._src.scipy.stats.shaped import (
    wrapcauchy_logpdf as logpdf,
    wrapcauchy_pdf as pdf,
)
