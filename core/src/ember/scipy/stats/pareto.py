"""The pareto distribution, as ``jax.scipy.stats.pareto``."""

from ember._src.scipy.stats.continuous import (
    pareto_cdf as cdf,
    pareto_logcdf as logcdf,
    pareto_logpdf as logpdf,
    pareto_logsf as logsf,
    pareto_pdf as pdf,
    pareto_ppf as ppf,
    pareto_sf as sf,
)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]
