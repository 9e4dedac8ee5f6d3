"""The wrapcauchy distribution, as ``jax.scipy.stats.wrapcauchy``."""

from ember._src.scipy.stats.shaped import (
    wrapcauchy_logpdf as logpdf,
    wrapcauchy_pdf as pdf,
)

__all__ = ["logpdf", "pdf"]
