"""The laplace distribution, as ``jax.scipy.stats.laplace``."""

from ember._src.scipy.stats.continuous import (
    laplace_cdf as cdf,
    laplace_logpdf as logpdf,
    laplace_pdf as pdf,
)

__all__ = ["cdf", "logpdf", "pdf"]
