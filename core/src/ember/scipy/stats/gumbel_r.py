"""The gumbel_r distribution, as ``jax.scipy.stats.gumbel_r``."""

from ember._src.scipy.stats.continuous import (
    gumbel_r_cdf as cdf,
    gumbel_r_logcdf as logcdf,
    gumbel_r_logpdf as logpdf,
    gumbel_r_logsf as logsf,
    gumbel_r_pdf as pdf,
    gumbel_r_ppf as ppf,
    gumbel_r_sf as sf,
)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]
