"""The gennorm distribution, as ``jax.scipy.stats.gennorm``."""

from ember._src.scipy.stats.shaped import (
    gennorm_cdf as cdf,
    gennorm_logpdf as logpdf,
    gennorm_pdf as pdf,
)

__all__ = ["cdf", "logpdf", "pdf"]
