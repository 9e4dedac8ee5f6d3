"""The uniform distribution, as ``jax.scipy.stats.uniform``."""

from ember._src.scipy.stats.continuous import (
    uniform_cdf as cdf,
    uniform_logpdf as logpdf,
    uniform_pdf as pdf,
    uniform_ppf as ppf,
)

__all__ = ["cdf", "logpdf", "pdf", "ppf"]
