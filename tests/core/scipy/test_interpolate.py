"""ember.scipy.interpolate.RegularGridInterpolator against SciPy, with JAX's defaults pinned
where JAX departs from SciPy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.interpolate

from ember.scipy import interpolate
from tests.core.util import assert_close


def _close(actual, expected, rtol=1e-4, atol=1e-5):
    assert_close(actual, expected, rtol=rtol, atol=atol)


GRID = (np.array([0.0, 1.0, 3.0, 4.0]), np.array([-1.0, 0.0, 2.0]))
VALUES = (np.add.outer(GRID[0] ** 2, 3 * GRID[1]) + 0.5 * np.multiply.outer(*GRID)).astype(
    np.float32
)
POINTS = np.array(
    [[0.5, 0.2], [2.9, -0.7], [3.5, 1.5], [5.0, 0.0], [-1.0, 1.0], [1.0, 0.0], [2.0, 1.0]],
    np.float32,
)


@pytest.mark.parametrize("method", ["linear", "nearest"])
def test_regular_grid_interpolator_matches_scipy(method):
    # SciPy's default bounds_error=True; JAX's (and ember's) is False with a NaN fill
    for fill_value in (np.nan, None, -7.0):
        got = interpolate.RegularGridInterpolator(GRID, VALUES, method, fill_value=fill_value)
        expected = scipy.interpolate.RegularGridInterpolator(
            GRID, VALUES, method, bounds_error=False, fill_value=fill_value
        )
        _close(got(POINTS), expected(POINTS))
    stacked = np.stack([VALUES, -2 * VALUES], -1)
    got = interpolate.RegularGridInterpolator(GRID, stacked, method, fill_value=-7.0)
    expected = scipy.interpolate.RegularGridInterpolator(
        GRID, stacked, method, bounds_error=False, fill_value=-7.0
    )
    _close(got(POINTS[None]), expected(POINTS[None]))


def test_regular_grid_interpolator_pinned_and_bad_input():
    # JAX 0.10 (linear, default fill NaN)
    got = interpolate.RegularGridInterpolator(GRID, VALUES)(POINTS)
    _close(got, [1.15, 5.485, 19.625, np.nan, np.nan, 1.0, 9.0])
    with pytest.raises(NotImplementedError, match="bounds_error"):
        interpolate.RegularGridInterpolator(GRID, VALUES, bounds_error=True)
    with pytest.raises(ValueError, match="method"):
        interpolate.RegularGridInterpolator(GRID, VALUES, method="cubic")
    with pytest.raises(ValueError, match="dimension"):
        interpolate.RegularGridInterpolator(GRID, VALUES)(np.zeros((2, 3)))
