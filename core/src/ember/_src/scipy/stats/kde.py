"""``ember.scipy.stats.gaussian_kde``: Gaussian kernel density estimation, as JAX's (a pytree,
so it passes through jit/vmap/grad) with SciPy's bandwidth rules.

The kernel covariance is the data's weighted covariance times ``factor ** 2``, where the
factor is Scott's ``neff ** (-1 / (d + 4))``, Silverman's, a given scalar, or a callable's
answer for the estimator.
"""

from __future__ import annotations

import math
from typing import Any

from ember._src import errors
from ember._src.core import get_aval
from ember._src.nn.functions import logsumexp
from ember._src.numpy import (
    advanced_indexing,
    contractions,
    creation,
    elementwise as jnp,
    linalg,
    manipulation,
    reductions,
    statistics,
)
from ember._src.numpy.operands import promote_to_inexact
from ember._src.random import prng as random
from ember._src.scipy import ndtr as _ndtr
from ember._src.tree.util import register_pytree_node_class


def _bandwidth_factor(bw_method: Any, kde: gaussian_kde) -> Any:
    d, neff = kde.d, kde.neff
    if bw_method is None or (isinstance(bw_method, str) and bw_method == "scott"):
        return neff ** (-1.0 / (d + 4))
    if isinstance(bw_method, str) and bw_method == "silverman":
        return (neff * (d + 2) / 4.0) ** (-1.0 / (d + 4))
    if isinstance(bw_method, str):
        raise ValueError(
            "gaussian_kde: bw_method should be 'scott', 'silverman', a scalar, or a callable; "
            f"got {bw_method!r}{errors.where()}"
        )
    if callable(bw_method):
        return bw_method(kde)
    return bw_method


def _log_normal_density(diff: Any, inv_cov: Any, log_norm: Any) -> Any:
    """``log N(diff; 0, cov)`` over the first axis of ``diff`` (shape (d, ...))."""
    solved = contractions.einsum("ij,j...->i...", inv_cov, diff)
    return -reductions.sum(diff * solved, axis=0) / 2 - log_norm


def _log_norm(cov: Any) -> Any:
    """``log sqrt(det(2 pi cov))``."""
    d = get_aval(cov).shape[-1]
    _, log_det = linalg.slogdet(cov)
    return (log_det + d * math.log(2 * math.pi)) / 2


@register_pytree_node_class
class gaussian_kde:  # noqa: N801 (SciPy's and JAX's name)
    """A Gaussian kernel density estimate of ``dataset`` (shape (d, n), or (n,) for d = 1)
    with optional per-point ``weights``."""

    def __init__(self, dataset: Any, bw_method: Any = None, weights: Any = None):
        (dataset,) = promote_to_inexact(manipulation.atleast_2d(creation.asarray(dataset)))
        d, n = get_aval(dataset).shape
        if n < 2:
            raise ValueError(f"gaussian_kde: the dataset needs more than one point{errors.where()}")
        if weights is None:
            weights = creation.full((n,), 1.0 / n, get_aval(dataset).dtype)
        else:
            (weights,) = promote_to_inexact(manipulation.atleast_1d(creation.asarray(weights)))
            if get_aval(weights).shape != (n,):
                raise ValueError(
                    f"gaussian_kde: weights of shape {get_aval(weights).shape} do not match "
                    f"the {n} data points{errors.where()}"
                )
            weights = weights / reductions.sum(weights)
        self.dataset = dataset
        self.weights = weights
        self.neff = 1 / reductions.sum(weights * weights)
        factor = _bandwidth_factor(bw_method, self)
        data_cov = manipulation.atleast_2d(
            statistics.cov(dataset, rowvar=True, bias=False, aweights=weights)
        )
        self.covariance = data_cov * factor**2
        self.inv_cov = linalg.inv(data_cov) / factor**2

    # Pytree protocol: every attribute is an array child.
    def tree_flatten(self):
        return (self.dataset, self.weights, self.covariance, self.inv_cov, self.neff), None

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        kde = object.__new__(cls)
        kde.dataset, kde.weights, kde.covariance, kde.inv_cov, kde.neff = children
        return kde

    @property
    def d(self) -> int:
        return get_aval(self.dataset).shape[0]

    @property
    def n(self) -> int:
        return get_aval(self.dataset).shape[1]

    def _points(self, points: Any) -> Any:
        (points,) = promote_to_inexact(manipulation.atleast_2d(creation.asarray(points)))
        shape = get_aval(points).shape
        if shape[0] != self.d:
            if shape == (1, self.d):
                return manipulation.reshape(points, (self.d, 1))
            raise ValueError(
                f"gaussian_kde: points have dimension {shape[0]}, the data {self.d}{errors.where()}"
            )
        return points

    def _log_terms(self, points: Any) -> Any:
        """``log(w_i N(point; data_i, covariance))`` of shape (n, m)."""
        diff = self.dataset[:, :, None] - points[:, None, :]
        log_density = _log_normal_density(diff, self.inv_cov, _log_norm(self.covariance))
        return jnp.log(self.weights)[:, None] + log_density

    def evaluate(self, points: Any) -> Any:
        """The estimated density at each of ``points`` (shape (d, m))."""
        return jnp.exp(self.logpdf(points))

    def __call__(self, points: Any) -> Any:
        return self.evaluate(points)

    def pdf(self, x: Any) -> Any:
        return self.evaluate(x)

    def logpdf(self, x: Any) -> Any:
        """The log of the estimated density, summed in log space so it does not underflow."""
        return logsumexp(self._log_terms(self._points(x)), axis=0)

    def integrate_gaussian(self, mean: Any, cov: Any) -> Any:
        """The integral of the estimate times the Gaussian N(mean, cov)."""
        mean = manipulation.atleast_1d(creation.asarray(mean))
        cov = manipulation.atleast_2d(creation.asarray(cov))
        if get_aval(mean).shape != (self.d,) or get_aval(cov).shape != (self.d, self.d):
            raise ValueError(
                f"gaussian_kde.integrate_gaussian: mean and cov must have dimension {self.d}"
                f"{errors.where()}"
            )
        total = self.covariance + cov
        diff = self.dataset - mean[:, None]
        log_density = _log_normal_density(diff, linalg.inv(total), _log_norm(total))
        return reductions.sum(self.weights * jnp.exp(log_density))

    def integrate_box_1d(self, low: Any, high: Any) -> Any:
        """The estimate's mass between ``low`` and ``high`` (one-dimensional data only)."""
        if self.d != 1:
            raise ValueError(
                f"gaussian_kde.integrate_box_1d only handles 1-D densities{errors.where()}"
            )
        std = jnp.sqrt(self.covariance[0, 0])
        data = self.dataset[0]
        mass = _ndtr.ndtr((high - data) / std) - _ndtr.ndtr((low - data) / std)
        return reductions.sum(self.weights * mass)

    def integrate_kde(self, other: gaussian_kde) -> Any:
        """The integral of the product of this estimate and ``other``."""
        if other.d != self.d:
            raise ValueError(
                f"gaussian_kde.integrate_kde: dimensions {self.d} and {other.d} differ"
                f"{errors.where()}"
            )
        total = self.covariance + other.covariance
        diff = self.dataset[:, :, None] - other.dataset[:, None, :]
        log_density = _log_normal_density(diff, linalg.inv(total), _log_norm(total))
        pair_weights = self.weights[:, None] * other.weights[None, :]
        return reductions.sum(pair_weights * jnp.exp(log_density))

    def resample(self, key: Any, shape: Any = ()) -> Any:
        """Draws from the estimate, of shape ``(d,) + shape``: a data point chosen by weight,
        plus kernel noise."""
        shape = tuple(shape) if not isinstance(shape, int) else (shape,)
        pick_key, noise_key = random.split(key)
        picks = random.choice(pick_key, self.n, shape=shape, p=self.weights)
        mean = creation.zeros((self.d,), get_aval(self.dataset).dtype)
        noise = random.multivariate_normal(noise_key, mean, self.covariance, shape=shape)
        chosen = advanced_indexing.take(self.dataset, picks, axis=1)
        return chosen + manipulation.moveaxis(noise, -1, 0)

    def set_bandwidth(self, bw_method: Any = None) -> None:
        raise NotImplementedError(
            f"gaussian_kde: changing the bandwidth of an estimate is not supported{errors.where()}"
        )

    def integrate_box(self, low_bounds: Any, high_bounds: Any, maxpts: Any = None) -> Any:
        raise NotImplementedError(
            "gaussian_kde: only 1-D box integrals are supported; use integrate_box_1d"
            f"{errors.where()}"
        )
