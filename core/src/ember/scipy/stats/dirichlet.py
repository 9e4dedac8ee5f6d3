"""The dirichlet distribution (``ember.scipy.stats.dirichlet``), as ``jax.scipy.stats.dirichlet``."""

from ember._src.scipy.stats.multivariate import (
    dirichlet_logpdf as logpdf,
    dirichlet_pdf as pdf,
)
