"""The cauchy distribution, as ``jax.scipy.stats.cauchy``."""

from ember._src.scipy.stats.continuous import (
    cauchy_cdf as cdf,
    cauchy_isf as isf,
    cauchy_logcdf as logcdf,
    cauchy_logpdf as logpdf,
    cauchy_logsf as logsf,
    cauchy_pdf as pdf,
    cauchy_ppf as ppf,
    cauchy_sf as sf,
)

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]
