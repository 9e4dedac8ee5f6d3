"""Pseudo-random numbers (``import ember.random``), bit-for-bit those of JAX 0.10."""

from ember._src.random.common import (
    clone as clone,
    key_impl as key_impl,
)
from ember._src.random.continuous import (
    ball as ball,
    cauchy as cauchy,
    chisquare as chisquare,
    double_sided_maxwell as double_sided_maxwell,
    f as f,
    generalized_normal as generalized_normal,
    lognormal as lognormal,
    maxwell as maxwell,
    pareto as pareto,
    rayleigh as rayleigh,
    t as t,
    triangular as triangular,
    wald as wald,
    weibull_min as weibull_min,
)
from ember._src.random.discrete import (
    binomial as binomial,
    geometric as geometric,
    multinomial as multinomial,
    poisson as poisson,
    rademacher as rademacher,
)
from ember._src.random.gamma import (
    beta as beta,
    dirichlet as dirichlet,
    gamma as gamma,
    loggamma as loggamma,
)
from ember._src.random.prng import (
    PRNGKey as PRNGKey,
    bernoulli as bernoulli,
    bits as bits,
    categorical as categorical,
    choice as choice,
    exponential as exponential,
    fold_in as fold_in,
    gumbel as gumbel,
    key as key,
    key_data as key_data,
    laplace as laplace,
    logistic as logistic,
    multivariate_normal as multivariate_normal,
    normal as normal,
    orthogonal as orthogonal,
    permutation as permutation,
    randint as randint,
    split as split,
    truncated_normal as truncated_normal,
    uniform as uniform,
    wrap_key_data as wrap_key_data,
)
