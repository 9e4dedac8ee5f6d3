"""conv_general_dilated: XLA against the NumPy reference and SciPy, layouts, groups, vmap,
and transposes checked through check_grads."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import lax
from ember.test_util import check_grads
from tests.core.util import assert_close

rng = np.random.default_rng(0)
X = rng.normal(size=(2, 3, 7, 6)).astype(np.float32)  # NCHW
W = rng.normal(size=(4, 3, 3, 2)).astype(np.float32)  # OIHW

CONFIGS = [
    {"window_strides": (1, 1), "padding": "VALID"},
    {"window_strides": (2, 1), "padding": "SAME"},
    {
        "window_strides": (1, 2),
        "padding": ((1, 2), (0, 1)),
        "lhs_dilation": (2, 1),
        "rhs_dilation": (1, 2),
    },
]


@pytest.mark.parametrize("config", CONFIGS, ids=["valid", "same_strided", "dilated"])
def test_against_reference_and_gradients(config):
    def conv(x, w):
        return lax.conv_general_dilated(x, w, **config)

    here = ember.jit(conv)(X, W)
    there = ember.jit(conv, device=ember.devices("reference")[0])(X, W)
    assert_close(here, there, rtol=1e-5, atol=1e-5)
    check_grads(conv, (X, W), order=1, atol=5e-2, rtol=5e-2)


def test_matches_scipy_correlate():
    signal = pytest.importorskip("scipy.signal")
    out = np.asarray(lax.conv_general_dilated(X, W, (1, 1), "VALID"))
    expected = sum(signal.correlate(X[1, c], W[2, c], mode="valid") for c in range(3))
    assert_close(out[1, 2], expected, rtol=1e-5, atol=1e-5)


def test_layouts_groups_and_vmap():
    nchw = lax.conv_general_dilated(X, W, (1, 1), "SAME")
    nhwc = lax.conv_general_dilated(
        np.transpose(X, (0, 2, 3, 1)),
        np.transpose(W, (2, 3, 1, 0)),
        (1, 1),
        "SAME",
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
    )
    assert_close(np.transpose(np.asarray(nhwc), (0, 3, 1, 2)), nchw, rtol=1e-5, atol=1e-5)
    depthwise = rng.normal(size=(6, 1, 3, 3)).astype(np.float32)

    def grouped(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), "SAME", feature_group_count=3)

    assert grouped(X, depthwise).shape == (2, 6, 7, 6)
    check_grads(grouped, (X, depthwise), order=1, atol=5e-2, rtol=5e-2)
    per_example = ember.vmap(lambda x: lax.conv_general_dilated(x, W, (1, 1), "VALID"))
    assert_close(per_example(X[:, None])[:, 0], lax.conv_general_dilated(X, W, (1, 1), "VALID"))
    per_kernel = ember.vmap(lambda w: lax.conv_general_dilated(X, w, (1, 1), "VALID"))
    twice = per_kernel(np.stack([W, 2 * W]))
    assert_close(twice[1], 2 * np.asarray(lax.conv_general_dilated(X, W, (1, 1), "VALID")))


def test_bad_shapes_are_reported():
    with pytest.raises(ember.errors.EmberTypeError, match="input features 3"):
        lax.conv_general_dilated(X, W[:, :2], (1, 1), "VALID")
