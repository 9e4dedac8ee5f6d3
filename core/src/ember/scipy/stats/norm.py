"""The norm distribution, as ``jax.scipy.stats.norm``."""

from ember._src.scipy.stats.continuous import (
    norm_cdf as cdf,
    norm_isf as isf,
    norm_logcdf as logcdf,
    norm_logpdf as logpdf,
    norm_logsf as logsf,
    norm_pdf as pdf,
    norm_ppf as ppf,
    norm_sf as sf,
)

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]
