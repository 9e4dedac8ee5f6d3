"""ember.image against JAX 0.10's answers (pinned below, 4 decimals): resize with each kernel,
with and without antialiasing, nearest-neighbour resize, and scale_and_translate."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import image
from ember.test_util import check_grads
from tests.core.util import assert_close

X = (np.arange(20.0).reshape(4, 5) ** 1.3).astype(np.float32)
SCALE = np.array([1.5, 0.7], np.float32)
TRANSLATION = np.array([0.3, -0.2], np.float32)

# jax.image.resize(X, (3, 7), method, antialias=...) and
# jax.image.scale_and_translate(X, (7, 3), (0, 1), SCALE, TRANSLATION, method, antialias=...)
RESIZED = {
    ("linear", True): np.array(
        [
            [2.431, 3.2025, 4.269, 5.4885, 6.8527, 8.2835, 9.4636],
            [14.028, 15.3992, 17.1395, 18.9194, 20.7595, 22.633, 24.1496],
            [29.6459, 31.2804, 33.3409, 35.4276, 37.5558, 39.7078, 41.4421],
        ]
    ),
    ("linear", False): np.array(
        [
            [1.3505, 2.0332, 3.0018, 4.1435, 5.4439, 6.8161, 7.9522],
            [14.028, 15.3992, 17.1395, 18.9194, 20.7595, 22.633, 24.1496],
            [31.4922, 33.1516, 35.2425, 37.3587, 39.515, 41.6943, 43.4501],
        ]
    ),
    ("cubic", True): np.array(
        [
            [1.2513, 1.9219, 3.0215, 4.2264, 5.5313, 7.0884, 8.2093],
            [13.6842, 15.0182, 16.9638, 18.7646, 20.6064, 22.6997, 24.1737],
            [30.8866, 32.4839, 34.8004, 36.922, 39.0719, 41.4928, 43.1895],
        ]
    ),
    ("cubic", False): np.array(
        [
            [0.7267, 1.3203, 2.3256, 3.4707, 4.7234, 6.2303, 7.3188],
            [13.5261, 14.8733, 16.8347, 18.6446, 20.4939, 22.5942, 24.0726],
            [32.1837, 33.7931, 36.127, 38.264, 40.429, 42.8663, 44.5742],
        ]
    ),
    ("lanczos3", True): np.array(
        [
            [0.9539, 1.5496, 2.739, 3.8779, 5.0579, 6.8023, 7.829],
            [13.5357, 14.7747, 16.9637, 18.6446, 20.3469, 22.7037, 24.0658],
            [31.3285, 32.7984, 35.3893, 37.3616, 39.3487, 42.0692, 43.6357],
        ]
    ),
    ("lanczos3", False): np.array(
        [
            [0.5254, 1.0567, 2.1505, 3.2447, 4.3819, 6.0786, 7.0796],
            [13.0698, 14.3455, 16.588, 18.2914, 20.0148, 22.3939, 23.7678],
            [32.397, 33.8807, 36.4938, 38.48, 40.4806, 43.2183, 44.7945],
        ]
    ),
    ("lanczos5", True): np.array(
        [
            [1.0032, 1.5221, 2.9723, 3.9292, 4.9312, 6.9274, 7.8887],
            [13.4625, 14.5931, 17.1924, 18.5966, 20.0228, 22.7838, 24.0365],
            [31.3569, 32.6886, 35.7381, 37.3814, 39.0402, 42.2234, 43.6587],
        ]
    ),
    ("lanczos5", False): np.array(
        [
            [0.9889, 1.4588, 2.8248, 3.7557, 4.7335, 6.6859, 7.6326],
            [12.6983, 13.8866, 16.5841, 18.0177, 19.4708, 22.28, 23.5479],
            [31.991, 33.3249, 36.3789, 38.0244, 39.6857, 42.8736, 44.311],
        ]
    ),
}
NEAREST = np.array(
    [
        [0.0, 2.4623, 6.0629],
        [0.0, 2.4623, 6.0629],
        [8.1033, 12.5495, 17.3986],
        [19.9526, 25.2892, 30.9006],
        [19.9526, 25.2892, 30.9006],
        [33.8002, 39.7726, 45.96],
        [33.8002, 39.7726, 45.96],
    ]
)
SCALED = {
    ("linear", True): np.array(
        [
            [0.5, 2.4077, 4.8786],
            [3.1061, 5.411, 8.169],
            [8.8974, 12.085, 15.4812],
            [16.8386, 20.4665, 24.2506],
            [25.4718, 29.4641, 33.5806],
            [34.8122, 39.1047, 43.5017],
            [0.0, 0.0, 0.0],
        ]
    ),
    ("linear", False): np.array(
        [
            [0.5, 2.3578, 4.8468],
            [3.1061, 5.3665, 8.136],
            [8.8974, 12.0525, 15.4452],
            [16.8386, 20.436, 24.2121],
            [25.4718, 29.4344, 33.5396],
            [34.8122, 39.0752, 43.4586],
            [0.0, 0.0, 0.0],
        ]
    ),
    ("cubic", True): np.array(
        [
            [-0.5443, 1.2149, 3.8026],
            [2.1323, 4.3642, 7.2837],
            [8.6937, 11.9726, 15.6376],
            [16.3904, 20.1638, 24.2634],
            [25.8843, 30.0287, 34.4882],
            [34.8441, 39.2702, 44.0022],
            [0.0, 0.0, 0.0],
        ]
    ),
    ("cubic", False): np.array(
        [
            [-0.568, 1.2384, 3.7376],
            [2.0992, 4.3878, 7.2118],
            [8.6397, 11.9967, 15.55],
            [16.3273, 20.1906, 24.1664],
            [25.8146, 30.0582, 34.3833],
            [34.7694, 39.3017, 43.8914],
            [0.0, 0.0, 0.0],
        ]
    ),
    ("lanczos3", True): np.array(
        [
            [-0.5839, 1.0624, 3.7264],
            [1.769, 3.9495, 6.9533],
            [8.599, 11.8771, 15.6198],
            [15.7026, 19.5555, 23.7668],
            [26.4299, 30.6011, 35.1591],
            [34.8028, 39.2677, 44.097],
            [0.0, 0.0, 0.0],
        ]
    ),
    ("lanczos3", False): np.array(
        [
            [-0.6212, 1.17, 3.6956],
            [1.7152, 4.0504, 6.9209],
            [8.5116, 11.9679, 15.5832],
            [15.5984, 19.6482, 23.7266],
            [26.3173, 30.7022, 35.1154],
            [34.6819, 39.3723, 44.051],
            [0.0, 0.0, 0.0],
        ]
    ),
}


@pytest.mark.parametrize("method, antialias", sorted(RESIZED))
def test_resize_matches_jax(method, antialias):
    got = image.resize(X, (3, 7), method, antialias=antialias)
    assert_close(got, RESIZED[method, antialias], rtol=1e-4, atol=2e-4)


def test_resize_nearest_matches_jax_and_keeps_dtype():
    assert_close(image.resize(X, (7, 3), "nearest"), NEAREST, rtol=1e-4, atol=2e-4)
    small = np.arange(12, dtype=np.uint8).reshape(3, 4)
    got = image.resize(small, (5, 7), image.ResizeMethod.NEAREST)
    assert got.dtype == enp.uint8
    # output pixel i takes input pixel floor((i + 0.5) * in / out)
    rows = np.floor((np.arange(5) + 0.5) * 3 / 5).astype(int)
    cols = np.floor((np.arange(7) + 0.5) * 4 / 7).astype(int)
    np.testing.assert_array_equal(np.asarray(got), small[rows][:, cols])


@pytest.mark.parametrize("method, antialias", sorted(SCALED))
def test_scale_and_translate_matches_jax(method, antialias):
    got = image.scale_and_translate(X, (7, 3), (0, 1), SCALE, TRANSLATION, method, antialias)
    assert_close(got, SCALED[method, antialias], rtol=1e-4, atol=2e-4)


def test_resize_integer_input_gives_float_and_unchanged_axes_pass_through():
    got = image.resize(np.arange(12, dtype=np.int32).reshape(3, 4), (6, 4), "linear")
    assert got.dtype == enp.float32
    # upsampling by 2 with the triangle kernel: interior rows are 3:1 blends of neighbours
    rows = np.arange(3, dtype=np.float32)
    expected_rows = np.interp((np.arange(6) + 0.5) / 2 - 0.5, rows, rows)
    assert_close(np.asarray(got)[:, 0], expected_rows * 4)
    batch = np.stack([X, 2 * X])[..., None]
    got = image.resize(batch, (2, 3, 7, 1), "cubic")
    assert_close(got[1, ..., 0], 2 * RESIZED["cubic", True], rtol=1e-4, atol=4e-4)


def test_resize_under_jit_and_vmap():
    resize = ember.jit(lambda x: image.resize(x, (3, 7), "lanczos3"))
    assert_close(resize(X), RESIZED["lanczos3", True], rtol=1e-4, atol=2e-4)
    stacked = ember.vmap(lambda x: image.resize(x, (3, 7), "linear"))(np.stack([X, -X]))
    assert_close(stacked[1], -RESIZED["linear", True], rtol=1e-4, atol=2e-4)


def test_resize_grads():
    check_grads(lambda x: image.resize(x, (3, 7), "linear"), (X,), order=1)
    check_grads(
        lambda s, t: image.scale_and_translate(X, (7, 3), (0, 1), s, t, "cubic"),
        (SCALE, TRANSLATION),
        order=1,
        rtol=2e-2,
    )


def test_resize_method_names():
    assert image.ResizeMethod.from_string("bilinear") is image.ResizeMethod.LINEAR
    assert image.ResizeMethod.from_string("tricubic") is image.ResizeMethod.CUBIC
    assert [m.value for m in image.ResizeMethod] == [0, 1, 2, 3, 4, 5, 6]


def test_resize_bad_input():
    with pytest.raises(ValueError, match="Unknown resize method"):
        image.resize(X, (3, 7), "bogus")
    with pytest.raises(ValueError, match="length equal"):
        image.resize(X, (7,), "linear")
    with pytest.raises(ValueError, match="Nearest"):
        image.scale_and_translate(X, (7, 3), (0, 1), SCALE, TRANSLATION, "nearest")
    with pytest.raises(NotImplementedError, match="AREA"):
        image.resize(X, (2, 2), "area")
