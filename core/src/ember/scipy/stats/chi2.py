"""The chi2 distribution, as ``jax.scipy.stats.chi2``."""

from ember._src.scipy.stats.shaped import (
    chi2_cdf as cdf,
    chi2_logcdf as logcdf,
    chi2_logpdf as logpdf,
    chi2_logsf as logsf,
    chi2_pdf as pdf,
    chi2_sf as sf,
)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]
