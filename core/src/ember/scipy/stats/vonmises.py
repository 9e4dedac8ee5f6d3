"""The vonmises distribution, as ``jax.scipy.stats.vonmises``."""

from ember._src.scipy.stats.shaped import (
    vonmises_logpdf as logpdf,
    vonmises_pdf as pdf,
)

__all__ = ["logpdf", "pdf"]
