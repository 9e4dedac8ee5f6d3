"""The gamma distribution, as ``jax.scipy.stats.gamma``."""

from ember._src.scipy.stats.shaped import (
    gamma_cdf as cdf,
    gamma_logcdf as logcdf,
    gamma_logpdf as logpdf,
    gamma_logsf as logsf,
    gamma_pdf as pdf,
    gamma_sf as sf,
)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]
