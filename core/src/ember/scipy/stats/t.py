"""The t distribution, as ``jax.scipy.stats.t``."""

from ember._src.scipy.stats.continuous import (
    t_logpdf as logpdf,
    t_pdf as pdf,
)

__all__ = ["logpdf", "pdf"]
