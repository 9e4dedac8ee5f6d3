"""Multivariate distributions of ``ember.scipy.stats``: multivariate_normal, dirichlet,
multinomial (functions named ``<distribution>_<method>``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import (
    contractions,
    creation,
    diagonals,
    elementwise as jnp,
    linalg,
    manipulation,
    reductions,
)
from ember._src.numpy.operands import promote_to_inexact
from ember._src.scipy import special as _special
from ember._src.scipy.stats.operands import c, where

_LOG_2PI = math.log(2 * math.pi)


# --------------------------------------------------------------------------------------------
# multivariate_normal


def multivariate_normal_logpdf(x: Any, mean: Any, cov: Any, allow_singular: None = None) -> Any:
    if allow_singular is not None:
        raise NotImplementedError(
            f"multivariate_normal.logpdf: allow_singular is not supported{errors.where()}"
        )
    x, mean, cov = promote_to_inexact(x, mean, cov)
    mean_shape, cov_shape = get_aval(mean).shape, get_aval(cov).shape
    if not mean_shape:
        # A scalar mean: each entry of x is a univariate normal with variance cov.
        return -((x - mean) ** 2) / cov / 2 - (jnp.log(cov) + _LOG_2PI) / 2
    n = mean_shape[-1]
    y = x - mean
    if not cov_shape:
        # A scalar covariance stands for cov * I.
        return -reductions.sum(y * y, axis=-1) / cov / 2 - n * (jnp.log(cov) + _LOG_2PI) / 2
    if len(cov_shape) < 2 or cov_shape[-2:] != (n, n):
        raise ValueError(
            f"multivariate_normal.logpdf: cov of shape {cov_shape} does not match mean of "
            f"shape {mean_shape} (expected (..., {n}, {n})){errors.where()}"
        )
    lower = linalg.cholesky(cov)
    # With cov = L L^T, the Mahalanobis distance is |L^-1 y|^2 and log det cov = 2 sum log
    # diag L.
    whitened = contractions.matmul(linalg.inv(lower), y[..., None])[..., 0]
    log_det = reductions.sum(jnp.log(diagonals.diagonal(lower, 0, -2, -1)), axis=-1)
    return -reductions.sum(whitened * whitened, axis=-1) / 2 - n * _LOG_2PI / 2 - log_det


def multivariate_normal_pdf(x: Any, mean: Any, cov: Any) -> Any:
    return jnp.exp(multivariate_normal_logpdf(x, mean, cov))


# --------------------------------------------------------------------------------------------
# dirichlet


def dirichlet_logpdf(x: Any, alpha: Any) -> Any:
    x, alpha = promote_to_inexact(x, alpha)
    alpha_shape, x_shape = get_aval(alpha).shape, get_aval(x).shape
    if len(alpha_shape) != 1:
        raise ValueError(
            f"dirichlet.logpdf: alpha must be one-dimensional; got shape {alpha_shape}"
            f"{errors.where()}"
        )
    k = alpha_shape[0]
    if not x_shape or x_shape[0] not in (k, k - 1):
        raise ValueError(
            "dirichlet.logpdf: x must have either the same number of entries as alpha or one "
            f"entry fewer along its first axis; got x.shape={x_shape}, alpha.shape={alpha_shape}"
            f"{errors.where()}"
        )
    if x_shape[0] == k - 1:
        # The last coordinate is implied by the others.
        rest = 1 - reductions.sum(x, axis=0, keepdims=True)
        x = manipulation.concatenate([x, rest], axis=0)
    alpha_b = manipulation.reshape(alpha, (k,) + (1,) * (len(x_shape) - 1))
    log_norm = reductions.sum(_special.gammaln(alpha)) - _special.gammaln(reductions.sum(alpha))
    safe_x = where(x > 0, x, c(x, 1))
    log_p = reductions.sum(_special.xlogy(alpha_b - 1, safe_x), axis=0) - log_norm
    tolerance = math.sqrt(np.finfo(get_aval(x).dtype).eps)
    on_simplex = reductions.all(x > 0, axis=0) & (
        jnp.abs(reductions.sum(x, axis=0) - 1) <= tolerance
    )
    return where(on_simplex, log_p, c(log_p, -np.inf))


def dirichlet_pdf(x: Any, alpha: Any) -> Any:
    return jnp.exp(dirichlet_logpdf(x, alpha))


# --------------------------------------------------------------------------------------------
# multinomial


def multinomial_logpmf(x: Any, n: Any, p: Any) -> Any:
    x, n = creation.asarray(x), creation.asarray(n)
    for name, value in (("x", x), ("n", n)):
        dtype = get_aval(value).dtype
        if not dtypes.issubdtype(dtype, np.integer):
            raise ValueError(
                f"multinomial.logpmf: {name} must have an integer dtype, got {dtype}"
                f"{errors.where()}"
            )
    x, n, p = promote_to_inexact(x, n, p)
    log_p = _special.gammaln(n + 1) + reductions.sum(
        _special.xlogy(x, p) - _special.gammaln(x + 1), axis=-1
    )
    valid = (reductions.sum(x, axis=-1) == n) & reductions.all(x >= 0, axis=-1)
    return where(valid, log_p, c(log_p, -np.inf))


def multinomial_pmf(x: Any, n: Any, p: Any) -> Any:
    return jnp.exp(multinomial_logpmf(x, n, p))
