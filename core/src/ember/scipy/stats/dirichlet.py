"""The dirichlet distribution, as ``jax.scipy.stats.dirichlet``."""

from ember._src.scipy.stats.multivariate import (
    dirichlet_logpdf as logpdf,
    dirichlet_pdf as pdf,
)

__all__ = ["logpdf", "pdf"]
