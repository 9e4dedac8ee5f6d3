"""``ember.scipy.interpolate.RegularGridInterpolator``, as ``jax.scipy.interpolate``."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ember._src import dtypes, errors
from ember._src.core import get_aval
from ember._src.numpy import creation, elementwise as enp, manipulation
from ember._src.numpy.nonzero import where
from ember._src.numpy.searching import searchsorted

_METHODS = ("linear", "nearest")


class RegularGridInterpolator:
    """Interpolation on a rectilinear grid: ``points`` holds the (ascending) coordinates of
    each axis, ``values`` the samples (trailing axes beyond the grid are carried along).
    Outside the grid the result is ``fill_value``, or an extrapolation when that is None.
    ``bounds_error=True`` is not supported (it would need the values of traced points)."""

    def __init__(
        self, points: Any, values: Any, method: str = "linear", bounds_error: bool = False,
        fill_value: Any = np.nan,
    ):  # fmt: skip
        if method not in _METHODS:
            raise ValueError(f"RegularGridInterpolator: method {method!r} is not defined")
        if bounds_error:
            raise NotImplementedError("RegularGridInterpolator: bounds_error=True is not supported")
        self.method = method
        self.bounds_error = bounds_error
        self.grid = tuple(creation.asarray(p) for p in points)
        values = creation.asarray(values)
        if not dtypes.is_inexact(get_aval(values).dtype):
            values = values.astype(dtypes.default_float())
        shape = get_aval(values).shape
        if len(self.grid) > len(shape):
            raise ValueError(
                f"RegularGridInterpolator: there are {len(self.grid)} point arrays, but values "
                f"has {len(shape)} dimensions"
            )
        for axis, p in enumerate(self.grid):
            if get_aval(p).ndim != 1 or get_aval(p).shape[0] != shape[axis]:
                raise ValueError(
                    f"RegularGridInterpolator: there are {get_aval(p).shape} points along "
                    f"dimension {axis}, but values has {shape[axis]} there"
                )
        self.values = values
        self.fill_value = fill_value

    def __call__(self, xi: Any, method: str | None = None) -> Any:
        method = self.method if method is None else method
        if method not in _METHODS:
            raise ValueError(f"RegularGridInterpolator: method {method!r} is not defined")
        ndim = len(self.grid)
        xi = creation.asarray(xi)
        xshape = get_aval(xi).shape
        if not xshape or xshape[-1] != ndim:
            raise ValueError(
                f"RegularGridInterpolator: the requested sample points xi have dimension "
                f"{xshape[-1] if xshape else 0}, but this interpolator has dimension {ndim}"
                f"{errors.where()}"
            )
        xi = manipulation.reshape(xi, (-1, ndim))
        xi = xi.astype(dtypes.real_dtype(get_aval(self.values).dtype))
        located = [self._locate(p, xi[:, k]) for k, p in enumerate(self.grid)]
        if method == "linear":
            result = self._linear(located)
        else:
            result = self._nearest(located)
        if self.fill_value is not None:
            outside = creation.zeros(get_aval(xi).shape[:1], bool)
            for k, p in enumerate(self.grid):
                outside = outside | (xi[:, k] < p[0]) | (xi[:, k] > p[-1])
            extra = (None,) * (get_aval(result).ndim - 1)
            fill = creation.asarray(self.fill_value).astype(get_aval(result).dtype)
            result = where(outside[(slice(None), *extra)], fill, result)
        return manipulation.reshape(result, xshape[:-1] + get_aval(self.values).shape[ndim:])

    @staticmethod
    def _locate(grid: Any, x: Any) -> tuple[Any, Any]:
        """(i, t): x lies a fraction t of the way from grid[i] to grid[i + 1] (the end
        intervals extended, so that t < 0 or t > 1 extrapolates)."""
        n = get_aval(grid).shape[0]
        i = enp.clip(searchsorted(grid, x) - 1, 0, max(n - 2, 0)).astype(np.int32)
        if n == 1:
            return i, creation.zeros_like(x)
        left, right = grid[i], grid[i + 1]
        return i, ((x - left) / (right - left)).astype(get_aval(x).dtype)

    def _linear(self, located: list[tuple[Any, Any]]) -> Any:
        trailing = get_aval(self.values).ndim - len(located)
        result = None
        for corner in itertools.product((0, 1), repeat=len(located)):
            weight, index = None, []
            for (i, t), step in zip(located, corner):
                w = t if step else 1 - t
                weight = w if weight is None else weight * w
                size = get_aval(self.values).shape[len(index)]
                index.append(enp.minimum(i + step, size - 1))
            term = weight[(slice(None), *(None,) * trailing)] * self.values[tuple(index)]
            result = term if result is None else result + term
        return result

    def _nearest(self, located: list[tuple[Any, Any]]) -> Any:
        index = [where(t <= 0.5, i, i + 1) for i, t in located]
        sizes = get_aval(self.values).shape
        index = [enp.clip(j, 0, sizes[k] - 1) for k, j in enumerate(index)]
        return self.values[tuple(index)]
