"""ember.scipy.ndimage.map_coordinates against SciPy, with JAX's answers pinned where JAX
departs from SciPy (the 'constant' and 'wrap' modes)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage

import ember.numpy as enp
from ember.scipy import ndimage
from ember.test_util import check_grads
from tests.core.util import assert_close

RNG = np.random.default_rng(5)


def _close(actual, expected, rtol=1e-4, atol=1e-5):
    assert_close(actual, expected, rtol=rtol, atol=atol)


IMAGE = (np.arange(12.0).reshape(3, 4) ** 1.5).astype(np.float32)
COORDS = [
    np.array([-0.7, -0.5, -0.2, 0.5, 1.5, 2.5, 2.2, 2.7, 3.4, 1.3], np.float32),
    np.array([0.5, 1.5, -0.3, 2.5, 3.5, 3.2, 4.1, -1.0, 0.0, 2.6], np.float32),
]
# JAX 0.10's answers (cval=-1) where they differ from SciPy's
JAX_MAP_COORDINATES = {
    (0, "constant"): [-1.0, -1.0, 0.0, 18.5203, -1.0, -1.0, -1.0, -1.0, -1.0, 18.5203],
    (0, "wrap"): [27.0, 31.6228, 0.0, 18.5203, 22.6274, 5.1962, 22.6274, 5.1962, 0.0, 18.5203],
    (1, "constant"): [-0.55, 0.4571, -0.44, 10.3104, 13.2508, 13.9931, -1.0, -1.0, -1.0, 22.2553],
    (1, "wrap"): [
        17.5196, 15.6128, 6.6039, 10.3104, 21.4076, 18.9344, 18.4717, 14.5822, 3.2, 22.2553
    ],
}  # fmt: skip


@pytest.mark.parametrize("order", [0, 1])
@pytest.mark.parametrize("mode", ["constant", "nearest", "wrap", "mirror", "reflect"])
def test_map_coordinates(order, mode):
    got = ndimage.map_coordinates(IMAGE, COORDS, order=order, mode=mode, cval=-1.0)
    if (order, mode) in JAX_MAP_COORDINATES:
        expected = JAX_MAP_COORDINATES[order, mode]
    else:
        expected = scipy.ndimage.map_coordinates(IMAGE, COORDS, order=order, mode=mode, cval=-1)
    _close(got, expected, rtol=1e-4, atol=1e-3)


def test_map_coordinates_inside_matches_scipy_and_integers_round():
    coords = [RNG.uniform(0, 2, size=(2, 5)), RNG.uniform(0, 3, size=(2, 5))]
    expected = scipy.ndimage.map_coordinates(IMAGE, coords, order=1)
    _close(ndimage.map_coordinates(IMAGE, coords, order=1), expected)
    ints = np.arange(12, dtype=np.int32).reshape(3, 4)
    got = ndimage.map_coordinates(ints, [np.array([0.5, 1.25]), np.array([0.5, 2.5])], order=1)
    assert got.dtype == enp.int32
    np.testing.assert_array_equal(np.asarray(got), [3, 8])  # 2.5 and 7.5 round away from 0


def test_map_coordinates_grads():
    coords = [np.array([0.3, 1.6], np.float32), np.array([2.2, 0.7], np.float32)]
    check_grads(lambda im, c0, c1: ndimage.map_coordinates(im, [c0, c1], 1), (IMAGE, *coords), 1)


def test_map_coordinates_bad_input():
    with pytest.raises(ValueError, match="length"):
        ndimage.map_coordinates(IMAGE, COORDS[:1], order=1)
    with pytest.raises(NotImplementedError, match="order"):
        ndimage.map_coordinates(IMAGE, COORDS, order=3)
    with pytest.raises(NotImplementedError, match="mode"):
        ndimage.map_coordinates(IMAGE, COORDS, order=1, mode="grid-wrap")
