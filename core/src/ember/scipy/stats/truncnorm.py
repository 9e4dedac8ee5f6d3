"""The truncnorm distribution, as ``jax.scipy.stats.truncnorm``."""

from ember._src.scipy.stats.shaped import (
    truncnorm_cdf as cdf,
    truncnorm_logcdf as logcdf,
    truncnorm_logpdf as logpdf,
    truncnorm_logsf as logsf,
    truncnorm_pdf as pdf,
    truncnorm_sf as sf,
)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]
