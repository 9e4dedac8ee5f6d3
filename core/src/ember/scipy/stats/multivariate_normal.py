"""The multivariate_normal distribution, as ``jax.scipy.stats.multivariate_normal``."""

from ember._src.scipy.stats.multivariate import (
    multivariate_normal_logpdf as logpdf,
    multivariate_normal_pdf as pdf,
)

__all__ = ["logpdf", "pdf"]
